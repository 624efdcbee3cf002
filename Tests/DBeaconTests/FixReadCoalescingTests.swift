import DBeaconCore
@testable import DBeaconStore
import Foundation
import Synchronization
import Testing

/// The reads every location fix makes (the user's groups, their followed tours) are answered
/// for concurrent fixes by one statement on PostgreSQL (`ReadCoalescer`): fewer statements,
/// the same answers, and never an answer older than the request.
@Suite(.bounded) struct FixReadCoalescingTests {
    /// Requests made while a statement runs are answered together by the next one, each with
    /// its own answer.
    @Test func concurrentReadsShareStatementsAndKeepTheirAnswers() async throws {
        let coalescer = ReadCoalescer<Int, Int>(maxBatch: 16)
        let batch: ReadCoalescer<Int, Int>.Batch = { keys in
            try await Task.sleep(for: .milliseconds(5))
            return keys.map { $0 * 10 }
        }
        let answers = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for k in 0..<200 { group.addTask { (k, try await coalescer.read(k, batch: batch)) } }
            var all: [Int: Int] = [:]
            for try await (k, a) in group { all[k] = a }
            return all
        }
        #expect(answers.count == 200 && answers.allSatisfy { $0.value == $0.key * 10 })
        let (statements, requests) = coalescer.counts
        #expect(requests == 200)
        #expect(statements < 100, "\(statements) statements for 200 concurrent reads")
        #expect(statements >= 200 / 16, "no statement answers more than maxBatch requests")
    }

    /// A request made while a statement runs is not answered by it: it waits for the next,
    /// so it sees what was committed before it asked.
    @Test func aRequestNeverGetsAnAnswerFromAStatementThatStartedBeforeIt() async throws {
        let coalescer = ReadCoalescer<String, Int>()
        let stored = Mutex(1)
        let (entered, enteredSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let gate = Mutex(true)
        let batch: ReadCoalescer<String, Int>.Batch = { keys in
            let value = stored.withLock { $0 } // the statement's snapshot, taken as it starts
            if gate.withLock({ let g = $0; $0 = false; return g }) {
                enteredSignal.yield()
                for await _ in release { break }
            }
            return keys.map { _ in value }
        }
        let first = Task { try await coalescer.read("first", batch: batch) }
        for await _ in entered { break }
        stored.withLock { $0 = 2 } // committed while the first statement runs
        let second = Task { try await coalescer.read("second", batch: batch) }
        try await Task.sleep(for: .milliseconds(50))
        releaseSignal.yield()
        releaseSignal.finish()
        #expect(try await first.value == 1)
        #expect(try await second.value == 2, "the second request saw the write committed before it asked")
        #expect(coalescer.counts == (statements: 2, requests: 2))
    }

    /// A failed statement fails the requests it was answering, and only those.
    @Test func aFailedStatementFailsItsRequestsOnly() async throws {
        let coalescer = ReadCoalescer<Int, Int>()
        let batch: ReadCoalescer<Int, Int>.Batch = { keys in
            if keys.contains(13) { throw DBeaconError.internalError("the statement failed") }
            return keys
        }
        await #expect(throws: DBeaconError.self) { try await coalescer.read(13, batch: batch) }
        #expect(try await coalescer.read(14, batch: batch) == 14)
    }

    /// A request waits for the statements no longer than its request's time (PostgreSQL's
    /// `DatabaseDeadline.request`; the statements run without it): it is answered 503 at once
    /// when its time is up, and no statement reads for it afterwards.
    @Test func aRequestWaitsNoLongerThanItsTime() async throws {
        let coalescer = ReadCoalescer<String, Int>()
        let statements = Mutex<[[String]]>([])
        let (entered, enteredSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let batch: ReadCoalescer<String, Int>.Batch = { keys in
            if statements.withLock({ $0.append(keys); return $0.count == 1 }) {
                enteredSignal.yield()
                for await _ in release { break }
            }
            return keys.map(\.count)
        }
        let first = Task { try await coalescer.read("first", batch: batch) }
        for await _ in entered { break }
        var late: (any Error)?
        do {
            _ = try await DatabaseDeadline.$request.withValue(.now + .milliseconds(200)) {
                try await coalescer.read("late", batch: batch)
            }
        } catch {
            late = error
        }
        // Answered while the first statement still runs.
        #expect((late as? DBeaconError)?.code == "database_unavailable", "\(String(describing: late))")
        releaseSignal.yield()
        releaseSignal.finish()
        #expect(try await first.value == 5)
        #expect(try await coalescer.read("after", batch: batch) == 5)
        #expect(statements.withLock { $0 } == [["first"], ["after"]])
    }

    /// On both stores: concurrent reads of groups and followed tours give each user exactly
    /// what a lone read gives; on PostgreSQL they took fewer statements than reads.
    @Test(arguments: Backend.all) func groupsAndToursReadForFixesAreEachUsersOwn(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (annID, ann) = try await h.user("ann")
        let (bobID, bob) = try await h.user("bob")
        let (eveID, _) = try await h.user("eve")
        let (vicID, vic) = try await h.user("vic")
        let start = Walk.schlossplatz
        let found = Mutex<[BeaconID]>([])
        try await h.app().test(.router) { client in
            try await client.report(ann, start, at: h.clock.tick(10))
            let group = try await client.call(.post, "/v1/groups", token: ann, json: ["name": "Trip", "range_m": 100])
            #expect(group.status == .created, "\(group.text)")
            let groupID = try #require(group.json?["id"]?.stringValue)
            #expect(try await client.call(.post, "/v1/groups/\(groupID)/join", token: bob).status == .ok)
            let second = try await client.call(.post, "/v1/groups", token: bob, json: ["name": "Bob's own", "range_m": 50])
            #expect(second.status == .created, "\(second.text)")
            let tour = try await client.call(.post, "/v1/tours", token: ann, json: [
                "name": "Two squares",
                "stops": .array([start, Walk.offset(start, north: 300)].enumerated().map { i, p in
                    ["name": .string("Square \(i + 1)"), "location": Walk.latLon(p), "perimeter": ["type": "Circle", "radius_m": 40]]
                }),
            ])
            #expect(tour.status == .created, "\(tour.text)")
            found.withLock { $0 = (tour.json?["stops"]?.arrayValue ?? []).compactMap { $0["beacon"]?["id"]?.stringValue }.map(BeaconID.init(uncheckedRawValue:)) }
            let tourID = try #require(tour.json?["tour"]?["id"]?.stringValue)
            #expect(try await client.call(.post, "/v1/tours/\(tourID)/follow", token: vic).status == .created)
        }
        let places = found.withLock { $0 }
        #expect(places.count == 2)
        let store = try #require(h.store as? any SQLStore)
        let users = [annID, bobID, eveID, vicID]
        var alone: [UserID: [String]] = [:]
        var aloneTours: [UserID: [String]] = [:]
        for u in users {
            alone[u] = try await store.groups(involving: u).map(\.name)
            aloneTours[u] = try await store.followedTours(user: u, containing: places).map { "\($0.tour)>\($0.place)" }
        }
        // (Both of bob's groups were made at the same test-clock time: their order is by id.)
        #expect(alone[annID] == ["Trip"] && alone[bobID]?.sorted() == ["Bob's own", "Trip"] && alone[eveID] == [] && alone[vicID] == [])
        #expect(aloneTours[vicID]?.count == 2 && aloneTours[annID] == [] && aloneTours[eveID] == [])

        let (groupsAlone, toursAlone) = (alone, aloneTours)
        let before = store.fixReads?.counts
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                let u = users[i % users.count]
                // Half the tour reads ask for one of the places only.
                let asked = i % 8 < 4 ? places : [places[(i / 8) % places.count]]
                group.addTask {
                    let groups = try await store.groups(involving: u).map(\.name)
                    #expect(groups == groupsAlone[u], "user \(u) read \(groups)")
                    let tours = try await store.followedTours(user: u, containing: asked).map { "\($0.tour)>\($0.place)" }
                    let expected = toursAlone[u]?.filter { t in asked.contains { t.hasSuffix(">\($0)") } }
                    #expect(tours.sorted() == expected?.sorted(), "user \(u) read \(tours) for \(asked)")
                }
            }
            try await group.waitForAll()
        }
        if backend == .postgis {
            let (before, after) = (try #require(before), try #require(store.fixReads?.counts))
            let statements = after.statements - before.statements, requests = after.requests - before.requests
            #expect(requests == 400)
            #expect(statements < requests, "\(statements) statements for \(requests) concurrent reads")
        } else {
            #expect(store.fixReads == nil, "SpatiaLite reads in process, one statement per read")
        }
    }

    /// SpatiaLite remembers the users a fix found in no group (`GrouplessUsers`), so their
    /// fixes read no groups; a group created or joined in this process is seen by the next
    /// read, one joined through another process once the store has polled for its changes, and
    /// a read begun before a join is not remembered after it; an erased user is forgotten. The
    /// store also knows each event type's newest position, so a read of alerts past it reads
    /// nothing, and one before an alert (local, or polled from another process) finds it.
    @Test func theUsersFoundInNoGroupAreForgottenWhenTheyJoinOne() async throws {
        let h = try await TestHarness.make(backend: .spatialite)
        let store = try #require(h.store as? SpatiaLiteStore)
        let groupless = try #require(store.grouplessUsers)
        let (annID, ann) = try await h.user("ann")
        let (bobID, bob) = try await h.user("bob")
        let (eveID, _) = try await h.user("eve")
        for u in [annID, bobID, eveID] { #expect(try await store.groups(involving: u).isEmpty) }
        #expect(groupless.count == 3)
        #expect(try await store.groups(involving: annID).isEmpty && groupless.count == 3, "answered from memory")

        let groupID = Mutex<GroupID?>(nil)
        try await h.app().test(.router) { client in
            let group = try await client.call(.post, "/v1/groups", token: ann, json: ["name": "Trip", "range_m": 100])
            #expect(group.status == .created, "\(group.text)")
            groupID.withLock { $0 = group.json?["id"]?.stringValue.map(GroupID.init(uncheckedRawValue:)) }
            #expect(try await client.call(.post, "/v1/groups/\(group.json?["id"]?.stringValue ?? "")/join", token: bob).status == .ok)
        }
        let trip = try #require(groupID.withLock { $0 })
        #expect(try await store.groups(involving: annID).map(\.name) == ["Trip"], "the leader of a new group")
        #expect(try await store.groups(involving: bobID).map(\.name) == ["Trip"], "a member who just joined")

        // Another process on the same file adds eve: seen once this store has polled.
        let other = try SpatiaLiteStore(path: h.services.config.databasePath, synchronousFull: false)
        #expect(try await other.addGroupMember(trip, user: eveID, at: h.clock.now(), events: []) == .joined)
        try await store.pollRemoteChanges()
        #expect(try await store.groups(involving: eveID).map(\.name) == ["Trip"], "a member added by another process")

        // An erased user's id is not kept.
        let (zedID, _) = try await h.user("zed")
        #expect(try await store.groups(involving: zedID).isEmpty && groupless.lookup(zedID).groupless)
        #expect(try await h.services.accounts.erase(zedID) != nil)
        #expect(groupless.lookup(zedID).groupless == false)

        // The newest position of each event type (`EventTypeMarks`): a read of the group alerts
        // after a position past every one reads nothing; one after an alert reads it, whether
        // this store or (once polled) another process appended it.
        let marks = try #require(store.eventTypeMarks)
        let alerts: [EventType] = [.memberJoined]
        let end = try await store.latestEventPosition()
        #expect(marks.newest(of: alerts) <= end)
        let none = try await store.events(recipient: annID, after: end, types: alerts, limit: 10)
        #expect(none.page.items.isEmpty && none.page.next == nil && none.through == end)
        let (kimID, _) = try await h.user("kim")
        let joined = Event(type: .memberJoined, createdAt: h.clock.now(), recipient: annID, beacon: nil, data: ["member": "kim"])
        #expect(try await store.addGroupMember(trip, user: kimID, at: h.clock.now(), events: [joined]) == .joined)
        #expect(marks.newest(of: alerts) > end)
        #expect(try await store.events(recipient: annID, after: end, types: alerts, limit: 10).page.items.map(\.id) == [joined.id])
        let end2 = try await store.latestEventPosition()
        let (lenID, _) = try await h.user("len")
        let remote = Event(type: .memberJoined, createdAt: h.clock.now(), recipient: annID, beacon: nil, data: ["member": "len"])
        #expect(try await other.addGroupMember(trip, user: lenID, at: h.clock.now(), events: [remote]) == .joined)
        try await store.pollRemoteChanges()
        #expect(try await store.events(recipient: annID, after: end2, types: alerts, limit: 10).page.items.map(\.id) == [remote.id])

        // A read that began before a membership changed is not remembered after it.
        let racer = UserID(uncheckedRawValue: "usr_racer")
        let (_, generation) = groupless.lookup(racer)
        groupless.involved(racer)
        groupless.remember(racer, readAt: generation)
        #expect(groupless.lookup(racer).groupless == false)
        groupless.remember(racer, readAt: groupless.lookup(racer).generation)
        #expect(groupless.lookup(racer).groupless)
    }
}
