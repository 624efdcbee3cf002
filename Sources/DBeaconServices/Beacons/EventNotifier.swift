package import DBeaconCore
package import DBeaconStore
import Synchronization

/// Wakes the open event streams of this process when events for their reader are committed,
/// by any node: one reader of the log (`eventRecipients` every `interval`, from the first
/// stream on) instead of one poll of the log per open stream. A stream waits with `wait`, is woken
/// only when an event addressed to its user (any event, for the operator) is newer than what
/// it has read, and otherwise sleeps until its deadline (its next heartbeat) at no cost.
///
/// The notifier only decides *when* a stream reads: the stream then reads its page of the log
/// through the visibility gate (`EventFeed.events`), exactly as `GET /v1/events` does.
package final class EventNotifier: Sendable {
    package let store: any DBeaconStore
    package let interval: Duration
    /// Positions re-read behind the newest seen: on PostgreSQL (several writers), sequence
    /// numbers are taken before commit, so a transaction may commit an older position after a
    /// newer one was read. SpatiaLite has one writer: nothing commits behind.
    let window: Int64
    static let batch = 5_000

    /// One stream's waits, so that its connection closing can end them (`interrupt`).
    package final class Handle: Sendable {
        fileprivate let id: UInt64
        fileprivate let interrupted = Atomic(false)
        fileprivate init(id: UInt64) { self.id = id }
        /// True once `interrupt` was called: the stream should end.
        package var isInterrupted: Bool { interrupted.load(ordering: .acquiring) }
    }

    private struct Waiter {
        let key: String?
        let after: Int64
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Int64?, Never>
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        /// Newest position seen per recipient (pruned to recent ones), and of any event.
        var latest: [String: Int64] = [:]
        var latestAny: Int64 = 0
        /// Everything at or below `scanned` was read (positions in the window are in `seen`).
        var scanned: Int64 = 0
        var seen: Set<Int64> = []
        var starting: Task<Void, Never>?
    }

    private let state = Mutex(State())

    package init(store: any DBeaconStore, interval: Duration = .milliseconds(100)) {
        self.store = store
        self.interval = interval
        self.window = store.sharedFenceState ? 64 : 0
    }

    /// A handle for one stream's waits.
    package func handle() -> Handle {
        Handle(id: state.withLock { s in
            s.nextID += 1
            return s.nextID
        })
    }

    /// Ends the handle's current wait and every later one at once (its client went away, or
    /// the server is stopping). Safe from any thread, also from a NIO event loop.
    package func interrupt(_ handle: Handle) {
        handle.interrupted.store(true, ordering: .releasing)
        let waiter = state.withLock { $0.waiters.removeValue(forKey: handle.id) }
        waiter?.continuation.resume(returning: nil)
    }

    /// Starts reading the log from its newest position (once per process; later calls return
    /// at once). A stream calls this before its first read of the log, so every event
    /// committed after that read is at a position the notifier has yet to read.
    package func start() async {
        let task = state.withLock { s -> Task<Void, Never> in
            if let t = s.starting { return t }
            let t = Task {
                var position: Int64?
                while position == nil {
                    position = try? await self.store.latestEventPosition()
                    if position == nil { try? await Task.sleep(for: .milliseconds(500)) }
                }
                self.state.withLock { $0.scanned = position ?? 0 }
                // The loop holds the notifier only during a tick: it ends once the server
                // (and so the notifier) is gone, e.g. each test's server.
                let interval = self.interval
                Task.detached { [weak self] in
                    while true {
                        try? await Task.sleep(for: interval)
                        guard let self else { return }
                        await self.tick()
                    }
                }
            }
            s.starting = t
            return t
        }
        await task.value
    }

    /// Waits until an event addressed to `user` (any event when nil) at a position after
    /// `after` has been committed, or until `deadline`. Returns the newest such position, or
    /// nil at the deadline (or when the task is cancelled, or the handle interrupted). A stream passes
    /// the position it has read up to, or the last position returned here if that is newer,
    /// so an event it may not read (withheld by the gate) wakes it once, not in a loop. Call
    /// `start` first.
    package func wait(for user: UserID?, after: Int64, until deadline: ContinuousClock.Instant,
                      handle: Handle) async -> Int64? {
        let key = user?.rawValue
        let id = handle.id
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int64?, Never>) in
                let ready = state.withLock { s -> Int64?? in
                    let newest = key.map { s.latest[$0] ?? 0 } ?? s.latestAny
                    if newest > after { return .some(newest) }
                    if Task.isCancelled || handle.isInterrupted { return .some(nil) }
                    s.waiters[id] = Waiter(key: key, after: after, deadline: deadline, continuation: continuation)
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: nil)
        }
    }

    /// One reading of the log (every `interval` from `start` on, whether or not anyone waits,
    /// so that the newest positions per recipient are always known; an empty range scan of the
    /// log's primary key when nothing happened): wakes the waiters whose deadline passed or
    /// whose user has a new event.
    private func tick() async {
        let now = ContinuousClock.now
        // Deadlines first (heartbeats), then the log.
        let due = state.withLock { s -> [Waiter] in
            let ids = s.waiters.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { s.waiters.removeValue(forKey: $0) }
        }
        for w in due { w.continuation.resume(returning: nil) }
        let from = state.withLock { s in max(0, s.scanned - window) }
        guard let rows = try? await store.eventRecipients(after: from, limit: Self.batch) else { return }
        let woken = state.withLock { s -> [(Waiter, Int64)] in
            var fresh: [String: Int64] = [:]
            var newestAny: Int64 = 0
            for (position, recipient) in rows where !s.seen.contains(position) {
                s.seen.insert(position)
                fresh[recipient.rawValue] = max(fresh[recipient.rawValue] ?? 0, position)
                newestAny = max(newestAny, position)
            }
            guard newestAny > 0 else { return [] }
            for (key, position) in fresh { s.latest[key] = max(s.latest[key] ?? 0, position) }
            s.latestAny = max(s.latestAny, newestAny)
            let top = rows.last?.position ?? 0
            // Keep only the window's positions and recent recipients.
            s.scanned = max(s.scanned, top)
            let floor = s.scanned - window
            if s.seen.count > Int(window) * 4 + 64 { s.seen = s.seen.filter { $0 > floor } }
            if s.latest.count > 100_000 {
                let keep = s.scanned - 1_000_000
                s.latest = s.latest.filter { $0.value > keep }
            }
            var wake: [(Waiter, Int64)] = []
            for (id, w) in s.waiters {
                let newest = w.key.map { fresh[$0] ?? 0 } ?? newestAny
                if newest > w.after {
                    wake.append((w, newest))
                    s.waiters[id] = nil
                }
            }
            return wake
        }
        for (w, position) in woken { w.continuation.resume(returning: position) }
    }
}
