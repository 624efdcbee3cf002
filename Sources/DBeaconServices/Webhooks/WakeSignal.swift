import Synchronization

/// Wakes one sleeping background loop early (new outbox rows), else lets it sleep until a timeout.
package final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    private let waitCount = Atomic(0)

    /// How many times a loop has waited (an idle loop waits about once per timeout).
    package var waits: Int { waitCount.load(ordering: .relaxed) }

    package init() {}

    package func signal() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { s in
            if let w = s.waiter {
                s.waiter = nil
                return w
            }
            s.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Forgets a signal given while nobody waited (the loop's own commits give one).
    package func clear() {
        state.withLock { $0.pending = false }
    }

    /// Returns on a signal, after `timeout`, or on cancellation, whichever comes first.
    package func wait(timeout: Duration) async {
        waitCount.add(1, ordering: .relaxed)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.waitForSignal() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now: Bool = state.withLock { s in
                    if s.pending || Task.isCancelled {
                        s.pending = false
                        return true
                    }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Void, Never>? = state.withLock { s in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }
    }
}
