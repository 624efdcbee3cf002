package import DBeaconStore
import Synchronization

/// Group commit: items enqueued while a transaction is being written are written together in
/// the next one. Each caller returns only once its item is on disk (`synchronous=FULL`), yet
/// one fsync serves many. Fence updates (`GroupCommitter<FenceUpdate>`, the fence engine's) and
/// phone states (`PhoneService`) go through one each.
///
/// `enqueue` is synchronous so the fence engine can enqueue inside its critical section and
/// keep commit order equal to decision order; `wait` then suspends until the batch holding
/// the item is committed. The first waiter finding no flush in progress becomes the leader and
/// flushes batches until none is left (no background task needed).
///
/// Where a request's time is bounded (PostgreSQL, `DatabaseDeadline.request`), a waiter waits no
/// longer than that: past it, it is answered 503 and its item is still written; and the leader
/// answers once its own batch is written, the items that came meanwhile going on in a task of
/// its own (under steady load a flush goes on for as long as they keep coming). On SQLite, where
/// no such bound is kept, the leader flushes to the end: handing the rest to a task showed no
/// gain in the fixes' p99 there, side by side, and possibly a few % of a fix's CPU at 1M beacons
/// (within the spread of those runs).
package final class GroupCommitter<Item: Sendable>: Sendable {
    private struct State {
        var pending: [Item] = []
        var batch = 0
        var flushing = false
        var tickets: [Int: Int] = [:]
        var results: [Int: Result<Void, any Error>] = [:]
        var waiters: [Int: [BoundedWait<Void>]] = [:]
    }

    /// Writes a batch, in the order its items were enqueued, in one transaction.
    private let write: @Sendable ([Item]) async throws -> Void
    private let state = Mutex(State())

    package init(write: @escaping @Sendable ([Item]) async throws -> Void) {
        self.write = write
    }

    /// A ticket for `wait`; call it exactly once per enqueue.
    package struct Ticket: Sendable { let batch: Int }

    package func enqueue(_ item: Item) -> Ticket {
        state.withLock { s in
            s.pending.append(item)
            s.tickets[s.batch, default: 0] += 1
            return Ticket(batch: s.batch)
        }
    }

    /// Enqueues `item` and returns once it is committed, or throws its batch's error.
    package func commit(_ item: Item) async throws {
        try await wait(enqueue(item))
    }

    /// What a waiter does: take its batch's result, flush, or wait for the flush under way.
    private enum Role { case done(Result<Void, any Error>), leader, follower }

    /// Returns once the ticket's batch is committed, or throws its error.
    package func wait(_ ticket: Ticket) async throws {
        let role: Role = state.withLock { s in
            if let result = s.results[ticket.batch] {
                Self.consume(&s, ticket.batch)
                return .done(result)
            }
            if s.flushing { return .follower }
            s.flushing = true
            return .leader
        }
        switch role {
        case .done(let result):
            try result.get()
        case .leader:
            await flush(returningAfter: DatabaseDeadline.request == nil ? nil : ticket.batch)
            try await wait(ticket)
        case .follower:
            let end = DatabaseDeadline.request
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let finished: Result<Void, any Error>? = state.withLock { s in
                    if let result = s.results[ticket.batch] {
                        Self.consume(&s, ticket.batch)
                        return result
                    }
                    s.waiters[ticket.batch, default: []].append(BoundedWait(c, until: end))
                    return nil
                }
                if let finished { c.resume(with: finished) }
            }
        }
    }

    /// Writes batches until none is left; with `own` (the leader's batch), until that one is
    /// written, then hands what is left to a task of its own.
    private func flush(returningAfter own: Int? = nil) async {
        var last = 0
        while true {
            if last >= GroupCommit.busyBatch && state.withLock({ $0.pending.count }) < GroupCommit.fullBatch {
                try? await Task.sleep(for: GroupCommit.linger)
            }
            let (number, batch): (Int, [Item]) = state.withLock { s in
                if s.pending.isEmpty {
                    s.flushing = false
                    return (0, [])
                }
                let take = s.pending
                s.pending = []
                s.batch += 1
                return (s.batch - 1, take)
            }
            if batch.isEmpty { return }
            last = batch.count
            let result: Result<Void, any Error>
            do {
                // The batch holds other requests' items: not bounded by the leader's deadline.
                try await DatabaseDeadline.$request.withValue(nil) { try await write(batch) }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            let waiters: [BoundedWait<Void>] = state.withLock { s in
                let w = s.waiters.removeValue(forKey: number) ?? []
                s.results[number] = result
                s.tickets[number, default: 0] -= w.count
                if s.tickets[number, default: 0] <= 0 {
                    s.tickets[number] = nil
                    s.results[number] = nil
                }
                return w
            }
            for w in waiters { w.resume(with: result) }
            if let own, number >= own {
                let more = state.withLock { s in
                    if s.pending.isEmpty { s.flushing = false }
                    return !s.pending.isEmpty
                }
                if more { DatabaseDeadline.unboundedTask { await self.flush() } }
                return
            }
        }
    }

    private static func consume(_ s: inout State, _ batch: Int) {
        s.tickets[batch, default: 0] -= 1
        if s.tickets[batch, default: 0] <= 0 {
            s.tickets[batch] = nil
            s.results[batch] = nil
        }
    }
}

extension GroupCommitter where Item == FenceUpdate {
    /// The fence engine's: fence updates, written by `applyFenceUpdates`.
    package convenience init(store: any EventStore) {
        self.init(write: { try await store.applyFenceUpdates($0) })
    }
}

/// `GroupCommitter`'s pacing.
enum GroupCommit {
    /// Under load (the last batch held at least `busyBatch` updates), a flush waits `linger`
    /// for more before writing while fewer than `fullBatch` are pending: one fsync and one
    /// write of the shared pages then serve several times as many fixes, for a millisecond of
    /// latency. A lone fix is written at once.
    static let busyBatch = 8, fullBatch = 64
    static let linger = Duration.milliseconds(1)
}
