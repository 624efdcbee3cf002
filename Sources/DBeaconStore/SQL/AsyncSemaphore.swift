import Synchronization

/// A counting semaphore for tasks: `wait` suspends (never blocks a thread) until a permit is
/// free; waiters are served in arrival order. Not cancellable: a transaction that started
/// waiting runs.
package final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: Mutex<State>

    package init(permits: Int) {
        state = Mutex(State(permits: permits))
    }

    package func wait() async {
        let acquired = state.withLock { s -> Bool in
            if s.permits > 0 {
                s.permits -= 1
                return true
            }
            return false
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.permits > 0 {
                    s.permits -= 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    package func signal() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.head < s.waiters.count {
                let c = s.waiters[s.head]
                s.head += 1
                if s.head > 64 && s.head * 2 > s.waiters.count {
                    s.waiters.removeFirst(s.head)
                    s.head = 0
                }
                return c
            }
            s.permits += 1
            return nil
        }
        next?.resume()
    }

    /// Runs `body` holding a permit.
    func withPermit<T>(_ body: () async throws -> T) async rethrows -> T {
        await wait()
        defer { signal() }
        return try await body()
    }
}
