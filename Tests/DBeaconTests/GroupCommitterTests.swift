import DBeaconCore
import DBeaconServices
import DBeaconStore
import Foundation
import Synchronization
import Testing

/// Group commit: what is enqueued while a batch is being written goes out together in the
/// next one, in order, and each caller hears its own batch's outcome.
@Suite(.bounded) struct GroupCommitterTests {
    @Test func itemsEnqueuedDuringAWriteAreWrittenTogetherNext() async throws {
        let written = Mutex<[[Int]]>([])
        let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let committer = GroupCommitter<Int> { batch in
            let count = written.withLock { $0.append(batch); return $0.count }
            if count == 1 { // the first write holds until released
                startedSignal.yield()
                for await _ in release { break }
            }
        }
        async let first: Void = committer.commit(0)
        for await _ in started { break }
        let tickets = (1...10).map { committer.enqueue($0) }
        releaseSignal.yield()
        try await first
        try await withThrowingTaskGroup(of: Void.self) { group in
            for ticket in tickets { group.addTask { try await committer.wait(ticket) } }
            try await group.waitForAll()
        }
        #expect(written.withLock { $0 } == [[0], Array(1...10)])
        try await committer.commit(11)
        #expect(written.withLock { $0.last } == [11], "a lone item is written at once, alone")
    }

    @Test func aBatchsErrorReachesItsCallersAndNoOthers() async throws {
        struct Refused: Error {}
        let committer = GroupCommitter<Int> { batch in
            if batch.contains(13) { throw Refused() }
        }
        await #expect(throws: Refused.self) { try await committer.commit(13) }
        try await committer.commit(14)
    }

    /// Where a request's time is bounded (PostgreSQL), the caller whose item started a flush
    /// returns once its own batch is written, not when the flush ends: under steady load a flush
    /// writes batch after batch, and that caller would wait for all of them.
    @Test func theCallerThatStartsAFlushWaitsForItsOwnBatchOnly() async throws {
        let written = Mutex<[[Int]]>([])
        let (second, secondSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let enqueued = Mutex<GroupCommitter<Int>.Ticket?>(nil)
        let committer = Mutex<GroupCommitter<Int>?>(nil)
        committer.withLock { $0 = GroupCommitter<Int> { batch in
            let count = written.withLock { $0.append(batch); return $0.count }
            if count == 1 { // another item comes while the first batch is written
                enqueued.withLock { $0 = committer.withLock { $0 }!.enqueue(1) }
            } else if count == 2 { // and its batch holds until released
                secondSignal.yield()
                for await _ in release { break }
            }
        } }
        let c = try #require(committer.withLock { $0 })
        // Returns while the second batch is still being written.
        try await DatabaseDeadline.$request.withValue(.now + .seconds(600)) { try await c.commit(0) }
        for await _ in second { break }
        #expect(written.withLock { $0 } == [[0], [1]])
        releaseSignal.yield()
        releaseSignal.finish()
        try await c.wait(try #require(enqueued.withLock { $0 }))
    }

    /// A caller waits for its batch no longer than its request's time (PostgreSQL's
    /// `DatabaseDeadline.request`): past it, it is answered 503 at once, and its item is still
    /// written with its batch.
    @Test func aCallerWaitsNoLongerThanItsRequestsTime() async throws {
        let written = Mutex<[[Int]]>([])
        let (started, startedSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let committer = GroupCommitter<Int> { batch in
            if written.withLock({ $0.append(batch); return $0.count == 1 }) {
                startedSignal.yield()
                for await _ in release { break }
            }
        }
        let first = Task { try await committer.commit(7) } // its batch holds until released
        for await _ in started { break }
        var late: (any Error)?
        do {
            try await DatabaseDeadline.$request.withValue(.now + .milliseconds(200)) { try await committer.commit(8) }
        } catch {
            late = error
        }
        // Answered while the batch before its own is still being written.
        #expect((late as? DBeaconError)?.code == "database_unavailable", "\(String(describing: late))")
        releaseSignal.finish()
        try await first.value
        try await committer.commit(9)
        let batches = written.withLock { $0 }
        #expect(batches.first == [7] && batches.flatMap { $0 } == [7, 8, 9], "\(batches)")
    }

    /// The phone states of concurrent posts are stored by one call: in order (a later state of
    /// a client replaces an earlier one), and a user no longer stored is left out without
    /// failing the others.
    @Test(arguments: Backend.all) func phoneStatesAreStoredTogether(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let (bob, _) = try await h.user("bob")
        let at = h.clock.now()
        let gone = UserID(uncheckedRawValue: "usr_erased_meanwhile")
        try await h.store.setPhoneStates([
            PhoneStateWrite(user: ann, client: "token:phone", state: "{\"v\":1}", at: at),
            PhoneStateWrite(user: gone, client: "token:phone", state: "{\"v\":9}", at: at),
            PhoneStateWrite(user: bob, client: "dev_1", state: "{\"b\":1}", at: at),
            PhoneStateWrite(user: ann, client: "token:phone", state: "{\"v\":2}", at: at),
        ])
        #expect(try await h.store.phoneState(user: ann, client: "token:phone") == "{\"v\":2}")
        #expect(try await h.store.phoneState(user: bob, client: "dev_1") == "{\"b\":1}")
        #expect(try await h.store.phoneState(user: gone, client: "token:phone") == nil)
        try await h.store.setPhoneStates([])
    }
}
