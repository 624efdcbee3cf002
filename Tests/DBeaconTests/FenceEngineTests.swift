import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
import Testing

/// Positions around Stuttgart's Schlossplatz: a 100 m circle centred at `center`.
private let center = (lat: 48.7784, lon: 9.1800)
/// Metres → degrees of latitude (north offsets).
private func north(_ m: Double) -> Double { center.lat + m / 111_200 }

@Suite(.bounded) struct FenceEngineTests {
    func setUp(_ backend: Backend, dwell: Double = 300, cushion: Double = 25) async throws -> (TestHarness, UserID, Beacon) {
        let h = try await TestHarness.make(backend: backend) { c in
            c.fences.dwellSeconds = dwell
            c.fences.exitCushionM = cushion
        }
        let (owner, _) = try await h.user("owner")
        let beacon = try await h.beacon(feature(name: "square", lat: center.lat, lon: center.lon, perimeter: circle(100)), owner: owner)
        let (ann, _) = try await h.user("ann")
        return (h, ann, beacon)
    }

    @Test(arguments: Backend.all) func entersWhenAFixFallsInside(_ backend: Backend) async throws {
        let (h, ann, beacon) = try await setUp(backend)
        let outside = try await h.fix(ann, lat: north(300), lon: center.lon)
        #expect(outside.inside.isEmpty && outside.events.isEmpty)
        h.clock.advance(seconds: 10)
        let inside = try await h.fix(ann, lat: north(50), lon: center.lon)
        #expect(inside.inside == [beacon.id])
        #expect(inside.events.map(\.type) == [.entered])
        #expect(inside.events.first?.data["beacon"] == .string(beacon.id.rawValue))
        // The event is in the log and was written with the state.
        #expect(try await h.events(ann).map(\.type) == [.entered])
        let snapshot = try await h.store.loadFenceSnapshot(locationsSince: Timestamp(millis: 0))
        #expect(snapshot.states[ann]?.map(\.beacon) == [beacon.id])
    }

    @Test(arguments: Backend.all) func exitsOnlyBeyondTheCushion(_ backend: Backend) async throws {
        let (h, ann, _) = try await setUp(backend, cushion: 25)
        try await h.fix(ann, lat: north(50), lon: center.lon)
        h.clock.advance(seconds: 10)
        // 110 m from the centre: outside the 100 m circle but within the 25 m cushion.
        let jitter = try await h.fix(ann, lat: north(110), lon: center.lon, accuracy: 5)
        #expect(jitter.events.isEmpty && jitter.inside.count == 1)
        h.clock.advance(seconds: 10)
        // 140 m out, but the fix is only accurate to 50 m: still within max(cushion, accuracy).
        let vague = try await h.fix(ann, lat: north(140), lon: center.lon, accuracy: 50)
        #expect(vague.events.isEmpty)
        h.clock.advance(seconds: 10)
        let gone = try await h.fix(ann, lat: north(140), lon: center.lon, accuracy: 5)
        #expect(gone.events.map(\.type) == [.exited])
        #expect(gone.inside.isEmpty)
        // Back and forth across the edge inside the cushion does not flap.
        for m in [95.0, 105, 98, 118, 99] {
            h.clock.advance(seconds: 5)
            try await h.fix(ann, lat: north(m), lon: center.lon)
        }
        #expect(try await h.events(ann).map(\.type) == [.entered, .exited, .entered])
    }

    /// The engine reads a beacon's perimeter only for what a fix may leave: a polygon entered
    /// and then left within one batch, or left by a later fix, is judged on its cushion, never
    /// on a perimeter left out when it was entered.
    @Test(arguments: Backend.all) func polygonExitsAreJudgedOnTheirPerimeter(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.fences.exitCushionM = 25 }
        let (owner, _) = try await h.user("owner")
        // A square of about 220 m, its north edge at north(110).
        let (w, e) = (center.lon - 0.0015, center.lon + 0.0015)
        let square = try await h.beacon(feature(name: "square", lat: center.lat, lon: center.lon,
                                                perimeter: polygon([box(w, north(-110), e, north(110))])), owner: owner)
        let (ann, _) = try await h.user("ann")
        func fixes(_ metres: [Double]) async throws -> FixReport {
            let start = h.clock.now()
            let batch = metres.enumerated().map { i, m in
                LocationFix(position: Position(lon: center.lon, lat: north(m)), accuracyM: 5, timestamp: start.adding(seconds: Double(i)))
            }
            h.clock.advance(seconds: Double(metres.count) + 5)
            return try await h.fences.report(user: ann, fixes: batch)
        }
        // In, then 10 m beyond the edge: within the cushion, so inside still.
        let batch = try await fixes([50, 120])
        #expect(batch.events.map(\.type) == [.entered] && batch.inside == [square.id])
        // Later fixes: 15 m beyond (inside still), then 60 m beyond (out).
        #expect(try await fixes([125]).events.isEmpty)
        let gone = try await fixes([170])
        #expect(gone.events.map(\.type) == [.exited] && gone.inside.isEmpty)
        // Both in one batch: in, within the cushion, beyond it.
        #expect(try await fixes([0, 130, 180]).events.map(\.type) == [.entered, .exited])
    }

    @Test(arguments: Backend.all) func dwellsAfterTheDwellTime(_ backend: Backend) async throws {
        let (h, ann, _) = try await setUp(backend, dwell: 60)
        try await h.fix(ann, lat: north(10), lon: center.lon)
        h.clock.advance(seconds: 30)
        #expect(try await h.fix(ann, lat: north(12), lon: center.lon).events.isEmpty)
        h.clock.advance(seconds: 31)
        #expect(try await h.fix(ann, lat: north(11), lon: center.lon).events.map(\.type) == [.dwelled])
        h.clock.advance(seconds: 100)
        #expect(try await h.fix(ann, lat: north(11), lon: center.lon).events.isEmpty)
    }

    @Test(arguments: Backend.all) func dwellsWithoutNewFixesThroughTheTicker(_ backend: Backend) async throws {
        let (h, ann, _) = try await setUp(backend, dwell: 60)
        try await h.fix(ann, lat: north(10), lon: center.lon)
        h.clock.advance(seconds: 61)
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).map(\.type) == [.entered, .dwelled])
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).count == 2)
    }

    @Test(arguments: Backend.all) func olderFixesDoNotChangeState(_ backend: Backend) async throws {
        let (h, ann, _) = try await setUp(backend)
        let t0 = h.clock.now()
        try await h.fix(ann, lat: north(50), lon: center.lon, at: t0)
        let late = try await h.fix(ann, lat: north(500), lon: center.lon, at: t0.adding(seconds: -30))
        #expect(late.ignored == 1 && late.accepted == 0 && late.events.isEmpty && late.inside.count == 1)
        // A batch is applied in timestamp order, whatever order it arrives in.
        let batch = try await h.fences.report(user: ann, fixes: [
            LocationFix(position: Position(lon: center.lon, lat: north(60)), accuracyM: 5, timestamp: t0.adding(seconds: 20)),
            LocationFix(position: Position(lon: center.lon, lat: north(500)), accuracyM: 5, timestamp: t0.adding(seconds: 10)),
        ])
        #expect(batch.accepted == 2)
        #expect(batch.events.map(\.type) == [.exited, .entered])
        #expect(await h.fences.location(of: ann)?.fixAt == t0.adding(seconds: 20))
    }

    @Test(arguments: Backend.all) func invisibleBeaconsProduceNoEvents(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, _) = try await h.user("ann")
        let (ben, _) = try await h.user("ben")
        try await h.beacon(feature(name: "secret", lat: center.lat, lon: center.lon, perimeter: circle(100), members: [ben]), owner: owner)
        try await h.beacon(feature(name: "later", lat: center.lat, lon: center.lon, perimeter: circle(100),
                                   lifetime: ("2030-01-01T00:00:00Z", nil)), owner: owner)
        #expect(try await h.fix(ann, lat: center.lat, lon: center.lon).events.isEmpty)
        #expect(try await h.fix(ben, lat: center.lat, lon: center.lon).events.count == 1)
    }

    @Test(arguments: Backend.all) func aMovingBeaconArrivesAroundAStandingUser(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (friend, _) = try await h.user("friend")
        let (ann, _) = try await h.user("ann")
        let moving = try await h.beacon(feature(name: "friend", lat: 48.70, lon: 9.10, perimeter: circle(100),
                                                extra: [("tracks_owner", true)]), owner: friend)
        try await h.fix(ann, lat: center.lat, lon: center.lon)
        #expect(try await h.events(ann).isEmpty)
        h.clock.advance(seconds: 5)
        // The friend walks up to 60 m from Ann: their beacon's circle now covers her.
        let arrival = try await h.fix(friend, lat: north(60), lon: center.lon)
        #expect(arrival.events.isEmpty, "the owner does not enter their own moving beacon")
        #expect(try await h.events(ann).map(\.type) == [.entered])
        #expect(try await h.events(ann).first?.data["reason"] == "moved")
        let moved = try #require(try await h.store.beacon(id: moving.id))
        #expect(moved.location == Position(lon: center.lon, lat: north(60)))
        #expect(moved.version == 1, "a move is not an edit")
        // Nearby follows the moving circle.
        let found = try await h.beacons.nearby(point: Position(lon: center.lon, lat: center.lat), tags: [], at: nil, limit: 10, by: .user(ann))
        #expect(found.map(\.beacon.id) == [moving.id])
        h.clock.advance(seconds: 5)
        try await h.fix(friend, lat: north(400), lon: center.lon)
        #expect(try await h.events(ann).map(\.type) == [.entered, .exited])
    }

    @Test(arguments: Backend.all) func editsAndDeletionReachFollowers(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, _) = try await h.user("ann")
        let (ben, _) = try await h.user("ben")
        let b = try await h.beacon(feature(name: "meet-up", members: [ann, ben]), owner: owner)
        _ = try await h.beacons.follow(b.id, by: .user(ann))
        _ = try await h.beacons.follow(b.id, by: .user(ben))
        _ = try await h.beacons.update(b.id, patch: ["properties": ["name": "meet-up (moved)", "visibility": ["members": .array([.string(ann.rawValue)])]]],
                                       ifMatch: nil, by: .user(owner))
        let annEvents = try await h.events(ann)
        #expect(annEvents.map(\.type) == [.updated])
        #expect(annEvents.first?.data["changed"] == ["name", "visibility"])
        #expect(annEvents.first?.data["values"]?["name"] == "meet-up (moved)")
        // Ben lost sight of the beacon with this edit: he is not told about it.
        #expect(try await h.events(ben).isEmpty)
        _ = try await h.beacons.delete(b.id, ifMatch: nil, by: .user(owner))
        #expect(try await h.events(ann).map(\.type) == [.updated, .deleted])
        #expect(try await h.events(ben).isEmpty)
    }

    @Test(arguments: Backend.all) func lifetimeStartAndEndReachFollowersAndFences(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, _) = try await h.user("ann")
        let now = h.clock.now()
        try await h.services.ticker.tickOnce()
        let b = try await h.beacon(feature(name: "market", lat: center.lat, lon: center.lon, perimeter: circle(100),
                                           lifetime: (now.adding(seconds: -60).rfc3339, now.adding(seconds: 120).rfc3339)), owner: owner)
        _ = try await h.beacons.follow(b.id, by: .user(ann))
        try await h.fix(ann, lat: center.lat, lon: center.lon)
        h.clock.advance(seconds: 121)
        try await h.services.ticker.tickOnce()
        let types = try await h.events(ann).map(\.type)
        #expect(types == [.entered, .ended, .exited])
        #expect(try await h.events(ann).last?.data["reason"] == "ended")
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).count == 3, "each transition is reported once")

        // A beacon that starts while a user stands inside enters them.
        let c = try await h.beacon(feature(name: "pop-up", lat: center.lat, lon: center.lon, perimeter: circle(100),
                                           lifetime: (h.clock.now().adding(seconds: 30).rfc3339, nil)), owner: owner)
        _ = try await h.beacons.follow(c.id, by: .user(owner))
        h.clock.advance(seconds: 5)
        try await h.fix(ann, lat: center.lat, lon: center.lon)
        h.clock.advance(seconds: 30)
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).suffix(1).map(\.type) == [.entered])
        #expect(try await h.events(owner).map(\.type) == [.started])
    }

    @Test func exitCushionDistanceForPolygons() {
        let square = Perimeter.polygon(Polygon(rings: [box(9.17, 48.77, 9.19, 48.79).map { Position(lon: $0.0, lat: $0.1) }]))
        // 0.001° of latitude north of the top edge ≈ 111 m.
        let d = PerimeterDistance.outside(Position(lon: 9.18, lat: 48.791), perimeter: square, center: Position(lon: 9.18, lat: 48.78), covered: false)
        #expect(abs(d - 111.2) < 0.5)
    }

    /// The exit cushion test skips far edges and stops at the first near one; it must answer
    /// exactly `outside(…) < limit`, for polygons with holes, multipolygons and circles.
    @Test func cushionTestAgreesWithTheFullDistance() {
        var g = RandomBeacons(seed: 4242, users: [UserID(uncheckedRawValue: "usr_x")])
        var checked = 0, within = 0
        for round in 0..<40 {
            let c = g.point()
            let outer = g.starRing(c, vertices: 8 + round * 20, rMin: 0.002, rMax: 0.004)
            let hole = g.starRing(c, vertices: 6, rMin: 0.0005, rMax: 0.001)
            var polygons = [Polygon(rings: [outer, hole])]
            if round % 2 == 1 { polygons.append(Polygon(rings: [g.starRing(Position(lon: c.lon + 0.01, lat: c.lat), vertices: 9, rMin: 0.001, rMax: 0.002)])) }
            let perimeters: [Perimeter] = [polygons.count == 1 ? .polygon(polygons[0]) : .multiPolygon(polygons), .circle(radiusM: 250)]
            for perimeter in perimeters {
                for _ in 0..<50 {
                    let p = Position(lon: c.lon + .random(in: -0.012...0.02, using: &g.rng), lat: c.lat + .random(in: -0.008...0.008, using: &g.rng))
                    let d = PerimeterDistance.outside(p, perimeter: perimeter, center: c, covered: false)
                    for limit in [0.0, 5, 25, 100, 400, 2000] {
                        let fast = PerimeterDistance.isWithin(limit, of: perimeter, center: c, point: p)
                        #expect(fast == (d < limit), "\(perimeter.isCircle ? "circle" : "polygon") \(p) limit \(limit): distance \(d)")
                        checked += 1
                        if fast { within += 1 }
                    }
                }
            }
        }
        #expect(within > checked / 4 && within < checked * 3 / 4)
    }
}

extension FenceEngineTests {
    /// On PostgreSQL (fence state shared by nodes), decisions waiting for a transaction share
    /// the next one (`FenceDecisionBatcher`): 48 users walk in, out and in again, all at once
    /// at each step. Every user gets exactly entered, exited, entered, and the decisions took
    /// fewer transactions than there were decisions.
    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func sharedDecisionsShareTransactionsAndKeepEachUsersOrder() async throws {
        let (h, _, beacon) = try await setUp(.postgis)
        var users: [UserID] = []
        for i in 0..<48 { users.append(try await h.user("walker \(i)").id) }
        let batcher = try #require((h.store as? any SQLStore)?.fenceBatcher)
        let before = batcher.counts
        for lat in [north(50), north(300), north(50)] {
            h.clock.advance(seconds: 10)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for u in users { group.addTask { try await h.fix(u, lat: lat, lon: center.lon) } }
                try await group.waitForAll()
            }
        }
        for u in users {
            let events = try await h.events(u)
            #expect(events.map(\.type) == [.entered, .exited, .entered], "\(u)")
            #expect(events.allSatisfy { $0.data["beacon"] == .string(beacon.id.rawValue) })
        }
        let after = batcher.counts
        let decisions = after.decisions - before.decisions, transactions = after.transactions - before.transactions
        #expect(decisions == 3 * users.count, "\(decisions) decisions")
        #expect(transactions < decisions, "\(transactions) transactions for \(decisions) decisions")
    }
}

extension FenceEngineTests {
    /// On PostgreSQL a fix waits for its batch of decisions no longer than the request's time
    /// (`--db-timeout` + 1 s, `DatabaseDeadline.request`; the batch itself runs without it): past
    /// that, it is answered 503 `database_unavailable` at once, and a fix still waiting for its
    /// batch to start is left out of it, not decided behind the back of a client told to retry.
    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func aFixWaitsForItsBatchNoLongerThanItsRequestsTime() async throws {
        let (h, ann, _) = try await setUp(.postgis)
        let store = try #require(h.store as? any SQLStore)
        let batcher = try #require(store.fenceBatcher)
        try await h.fix(ann, lat: north(50), lon: center.lon) // inside: entered
        // Another transaction holds ann's fence lock, as another node deciding for her would.
        let (held, heldSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let holder = Task {
            try await store.write { db, _ in
                _ = try await db.rows("SELECT pg_advisory_xact_lock(hashtextextended('fence:' || $1, 0))", [ann.rawValue])
                heldSignal.yield()
                for await _ in release { break }
            }
        }
        for await _ in held { break }
        func fixWithin300ms(_ lat: Double) async -> (any Error)? {
            h.clock.advance(seconds: 10)
            do {
                try await DatabaseDeadline.$request.withValue(.now + .milliseconds(300)) {
                    _ = try await h.fix(ann, lat: lat, lon: center.lon)
                }
                return nil
            } catch {
                return error
            }
        }
        func isOverdue(_ error: (any Error)?) -> Bool {
            (error as? DBeaconError)?.code == "database_unavailable"
                && (error as? DBeaconError)?.message.hasPrefix("no answer within the request's time") == true
        }
        // Still inside: its batch starts and waits for the lock.
        let taken = batcher.taken
        async let inside = fixWithin300ms(north(60))
        while batcher.taken == taken { try await Task.sleep(for: .milliseconds(5)) }
        // Outside (an exit, were it decided): it waits for the next batch.
        async let outside = fixWithin300ms(north(300))
        let (first, second) = await (inside, outside)
        // Both answered while the lock is still held (else: the lock's timeout, database_busy).
        #expect(isOverdue(first), "\(String(describing: first))")
        #expect(isOverdue(second), "\(String(describing: second))")
        releaseSignal.yield()
        releaseSignal.finish()
        try await holder.value
        // Inside again, after both batches: had the exit been decided, ann would enter again.
        h.clock.advance(seconds: 10)
        try await h.fix(ann, lat: north(50), lon: center.lon)
        #expect(try await h.events(ann).map(\.type) == [.entered])
    }
}
