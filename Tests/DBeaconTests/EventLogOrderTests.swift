import DBeaconCore
@testable import DBeaconStore
import Foundation
import Synchronization
import Testing

/// The event log is followed by position (`seq`): pages' cursors, streams' `Last-Event-ID`,
/// the webhook outbox. A reader must never move past an event that is committed later.
@Suite(.bounded) struct EventLogOrderTests {
    /// Two write transactions: the first writes its event and stays open; the second writes
    /// one and commits; a reader pages the log, then the first commits and the reader goes on
    /// from its cursor. On PostgreSQL the first used to take the lower seq and commit it
    /// after the reader had moved past the second's: its event was never read. Events are now
    /// numbered under a lock at their transaction's end (`DeferredEvents`); SQLite has one
    /// writer at a time, so the second waits for the first.
    @Test(arguments: Backend.all) func aReaderFollowingTheLogMissesNoEventCommittedLate(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let store = try #require(h.store as? any SQLStore)
        let early = Event(type: .updated, createdAt: h.clock.now(), recipient: ann, beacon: nil, data: ["n": 1])
        let late = Event(type: .updated, createdAt: h.clock.now(), recipient: ann, beacon: nil, data: ["n": 2])

        let (written, writtenSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let open = Task { try await Self.writeAndWait(store, early, written: writtenSignal, release: release) }
        for await _ in written { break }
        let quick = Task { try await h.store.appendEvents([late]) }
        // PostgreSQL commits the second transaction now (it is not blocked); SQLite cannot
        // before the first ends, whatever the time.
        let done = Mutex(false)
        let watcher = Task { _ = try? await quick.value; done.withLock { $0 = true } }
        for _ in 0..<(backend == .postgis ? 400 : 10) where !done.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(25)) }
        if backend == .postgis { #expect(done.withLock { $0 }, "the second transaction waited for the first") }

        let first = try await h.store.events(recipient: ann, after: nil, limit: 100).items
        var cursor: Int64? = nil
        if let last = first.last { cursor = try await h.store.eventPosition(id: last.id) }
        releaseSignal.yield()
        releaseSignal.finish()
        try await open.value
        try await quick.value
        await watcher.value
        let rest = try await h.store.events(recipient: ann, after: cursor, limit: 100).items
        let read = (first + rest).map(\.id)
        #expect(Set(read) == [early.id, late.id] && read.count == 2, "read \(read), written \(early.id) then \(late.id)")
        // And the whole log, read at once, is in the order the reader met it.
        #expect(try await h.store.events(recipient: ann, after: nil, limit: 100).items.map(\.id) == read)
    }

    /// The events lock itself: a transaction that took its seqs and has not committed yet
    /// holds back every other transaction's events until it commits, so the later seqs never
    /// commit first. (On SQLite the single writer does the same.)
    @Test(arguments: Backend.all) func seqsAreTakenUnderALockHeldThroughTheCommit(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let store = try #require(h.store as? any SQLStore)
        let first = Event(type: .updated, createdAt: h.clock.now(), recipient: ann, beacon: nil, data: ["n": 1])
        let second = Event(type: .updated, createdAt: h.clock.now(), recipient: ann, beacon: nil, data: ["n": 2])

        let (numbered, numberedSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let open = Task { try await Self.numberAndWait(store, first, numbered: numberedSignal, release: release) }
        for await _ in numbered { break }
        let done = Mutex(false)
        let other = Task { try await h.store.appendEvents([second]); done.withLock { $0 = true } }
        try await Task.sleep(for: .milliseconds(400))
        #expect(!done.withLock { $0 }, "another transaction's events committed while seqs taken before them were uncommitted")
        releaseSignal.yield()
        releaseSignal.finish()
        try await open.value
        try await other.value
        let positions = [try await h.store.eventPosition(id: first.id), try await h.store.eventPosition(id: second.id)]
        #expect(positions[0]! < positions[1]!, "\(positions)")
    }

    /// A write transaction whose events are numbered at once (as at its end), then waits before committing.
    static func numberAndWait<S: SQLStore>(_ store: S, _ event: Event, numbered: AsyncStream<Void>.Continuation,
                                           release: AsyncStream<Void>) async throws {
        try await store.write { db, _ in
            if db.dialect == .postgres { try await S.writeDeferredEvents(db, [event]) } else { try await S.insertEvents(db, [event]) }
            numbered.yield()
            numbered.finish()
            for await _ in release { break }
        }
    }

    /// A write transaction that writes `event`, says so, and commits once released.
    static func writeAndWait<S: SQLStore>(_ store: S, _ event: Event, written: AsyncStream<Void>.Continuation,
                                          release: AsyncStream<Void>) async throws {
        try await store.write { db, _ in
            try await S.insertEvents(db, [event])
            written.yield()
            written.finish()
            for await _ in release { break }
        }
    }
}
