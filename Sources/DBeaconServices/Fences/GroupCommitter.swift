package import DBeaconStore
import Synchronization

/// Group commit for fence updates: updates enqueued while a transaction is being written
/// are written together in the next one. Each caller returns only once its update is on disk
/// (`synchronous=FULL`), yet one fsync serves many fixes.
///
/// `enqueue` is synchronous so the fence engine can enqueue inside its critical section and
/// keep commit order equal to decision order; `wait` then suspends until the batch holding
/// the update is committed. The first waiter finding no flush in progress becomes the
/// leader and flushes batches until none is left (no background task needed).
package final class GroupCommitter: Sendable {
    private struct State {
        var pending: [FenceUpdate] = []
        var batch = 0
        var flushing = false
        var tickets: [Int: Int] = [:]
        var results: [Int: Result<Void, any Error>] = [:]
        var waiters: [Int: [CheckedContinuation<Void, any Error>]] = [:]
    }

    private let store: any EventStore
    private let state = Mutex(State())

    package init(store: any EventStore) {
        self.store = store
    }

    /// A ticket for `wait`; call it exactly once per enqueue.
    package struct Ticket: Sendable { let batch: Int }

    package func enqueue(_ update: FenceUpdate) -> Ticket {
        state.withLock { s in
            s.pending.append(update)
            s.tickets[s.batch, default: 0] += 1
            return Ticket(batch: s.batch)
        }
    }

    /// Returns once the ticket's batch is committed, or throws its error.
    package func wait(_ ticket: Ticket) async throws {
        enum Role { case done(Result<Void, any Error>), leader, follower }
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
        case .follower:
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let finished: Result<Void, any Error>? = state.withLock { s in
                    if let result = s.results[ticket.batch] {
                        Self.consume(&s, ticket.batch)
                        return result
                    }
                    s.waiters[ticket.batch, default: []].append(c)
                    return nil
                }
                if let finished { c.resume(with: finished) }
            }
        case .leader:
            await flush()
            try await wait(ticket)
        }
    }

    /// Under load (the last batch held at least `busyBatch` updates), a flush waits `linger`
    /// for more before writing while fewer than `fullBatch` are pending: one fsync and one
    /// write of the shared pages then serve several times as many fixes, for a millisecond of
    /// latency. A lone fix is written at once.
    static let busyBatch = 8, fullBatch = 64
    static let linger = Duration.milliseconds(1)

    private func flush() async {
        var last = 0
        while true {
            if last >= Self.busyBatch && state.withLock({ $0.pending.count }) < Self.fullBatch {
                try? await Task.sleep(for: Self.linger)
            }
            let (number, batch): (Int, [FenceUpdate]) = state.withLock { s in
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
                try await store.applyFenceUpdates(batch)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            let waiters: [CheckedContinuation<Void, any Error>] = state.withLock { s in
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
