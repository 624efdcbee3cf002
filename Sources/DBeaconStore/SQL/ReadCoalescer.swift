import DBeaconCore
import Synchronization

/// Many concurrent reads of one kind, each for its own key, answered by one statement for all
/// of them (PostgreSQL: one round trip and one plan instead of one per request).
///
/// Every accepted location fix reads the fixing user's groups and, when it entered beacons,
/// their followed tours: two statements per fix, which cost the server nodes more than the
/// fix's share of its batched transaction. Here the requests waiting while a statement runs
/// are answered together by the next one (at most `maxBatch`); a lone request runs at once.
///
/// **No stale answer.** A request is never answered by a statement that started before it
/// was made: one arriving while a statement runs waits for the next. It therefore sees every
/// write committed before it asked, exactly as its own statement would have.
package final class ReadCoalescer<Request: Sendable, Answer: Sendable>: Sendable {
    package typealias Batch = @Sendable ([Request]) async throws -> [Answer]

    private struct Waiting: Sendable {
        let request: Request
        /// The caller, answered by the statement or, past the request's time, without it.
        let wait: BoundedWait<Answer>
    }

    private struct State {
        var pending: [Waiting] = []
        var running = false
        var statements = 0, requests = 0
    }

    package let maxBatch: Int
    private let state = Mutex(State())

    package init(maxBatch: Int = 256) {
        self.maxBatch = max(1, maxBatch)
    }

    /// Statements run and requests answered so far (for tests and metrics).
    package var counts: (statements: Int, requests: Int) { state.withLock { ($0.statements, $0.requests) } }

    /// `request`'s answer, read together with the requests waiting beside it. `batch` answers
    /// a list of requests in their order (the first waiting caller's `batch` runs the
    /// statement; every caller must pass an equivalent one). A failed statement fails each of
    /// its requests.
    package func read(_ request: Request, batch: @escaping Batch) async throws -> Answer {
        let end = DatabaseDeadline.request
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<Answer, any Error>) in
            let waiting = Waiting(request: request, wait: BoundedWait(c, until: end))
            if waiting.wait.isAbandoned { return } // no time left: answered already
            let lead = state.withLock { s in
                s.pending.append(waiting)
                if s.running { return false }
                s.running = true
                return true
            }
            // (The batch answers every waiting request: not bounded by the first one's deadline;
            // each waits no longer than its own, `BoundedWait`.)
            if lead { DatabaseDeadline.unboundedTask { await self.drain(batch) } }
        }
    }

    private func drain(_ batch: Batch) async {
        while true {
            let taken: [Waiting] = state.withLock { s in
                // Requests answered 503 past their time are not read for.
                s.pending.removeAll { $0.wait.isAbandoned }
                let taken = Array(s.pending.prefix(maxBatch))
                s.pending.removeFirst(taken.count)
                if taken.isEmpty { s.running = false } else { s.statements += 1; s.requests += taken.count }
                return taken
            }
            if taken.isEmpty { return }
            do {
                let answers = try await batch(taken.map(\.request))
                guard answers.count == taken.count else {
                    throw DBeaconError.internalError("a coalesced read answered \(answers.count) of \(taken.count) requests")
                }
                for (w, a) in zip(taken, answers) { w.wait.resume(with: .success(a)) }
            } catch {
                for w in taken { w.wait.resume(with: .failure(error)) }
            }
        }
    }
}
