package import DBeaconCore
package import DBeaconStore
package import Logging
import ServiceLifecycle
import Synchronization

/// Wakes the open event streams of this process when events for their reader are committed,
/// by any node: one reader of the log for all streams instead of one poll per stream. A
/// stream waits with `wait`, is woken only when an event addressed to its user (any event, for
/// the operator) is newer than what it has read, and otherwise sleeps until its deadline (its
/// next heartbeat) at no cost.
///
/// It is a `Service` run with the HTTP server, and it never polls: it reads the log when told
/// that events were committed (`observeEventCommits`: this process's commits, other nodes'
/// through NOTIFY on PostgreSQL, the CLI's commits to a SpatiaLite file through the store's
/// remote-change check), and only while some stream waits (a commit while none waits is
/// remembered and read when one does). Positions commit in order on both stores (SQLite has
/// one writer; PostgreSQL takes the events lock before a transaction's events get their
/// positions and holds it to commit), so everything at or below the last position read is known.
///
/// The notifier only decides *when* a stream reads: the stream then reads its page of the log
/// through the visibility gate (`EventFeed.events`), exactly as `GET /v1/events` does.
package final class EventNotifier: Service, Sendable {
    private let store: any DBeaconStore
    private let logger: Logger
    /// How long `ready` waits for the first reading of the log position (a database down at
    /// start-up): then the stream is refused with 503.
    private let readyTimeout: Duration
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
        /// Everything at or below it was read; nil until the loop read where the log stands.
        var scanned: Int64?
        /// Events were committed since the last reading of the log.
        var dirty = false
        /// When the loop wakes next if nothing happens (the earliest deadline it knew of).
        var sleepingUntil: ContinuousClock.Instant?
        /// Streams waiting for the first reading of the log position.
        var starting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let wake = WakeSignal()

    /// `commits` tells of committed events (the same store, as its change feed).
    package init(store: any DBeaconStore, commits: any BeaconChangeFeed, logger: Logger = Logger(label: "dbeacon.events"),
                 readyTimeout: Duration = .seconds(10)) {
        self.store = store
        self.logger = logger
        self.readyTimeout = readyTimeout
        // Weakly: the store keeps its observers, and the notifier holds the store.
        commits.observeEventCommits { [weak self] in self?.eventsCommitted() }
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

    /// Returns once the notifier knows where the log stands. A stream calls this before its
    /// first read of the log, so every event committed after that read is at a position the
    /// notifier has yet to read. 503 when the log could not be read in time.
    package func ready() async throws {
        let started = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let now = self.state.withLock { s -> Bool in
                        if s.scanned != nil { return true }
                        s.starting.append(c)
                        return false
                    }
                    if now { c.resume() }
                }
                return true
            }
            group.addTask { [readyTimeout] in
                try? await Task.sleep(for: readyTimeout)
                return false
            }
            let first = await group.next() ?? false
            if !first { self.releaseStarting() } // the waiting child ends too
            group.cancelAll()
            return first
        }
        guard started, state.withLock({ $0.scanned != nil }) else {
            var error = DBeaconError(.unavailable, code: "database_unavailable", message: "the event log cannot be read now")
            error.retryAfterSeconds = 2
            throw error
        }
    }

    /// Waits until an event addressed to `user` (any event when nil) at a position after
    /// `after` has been committed, or until `deadline`. Returns the newest such position, or
    /// nil at the deadline (or when the task is cancelled, or the handle interrupted). A stream passes
    /// the position it has read up to, or the last position returned here if that is newer,
    /// so an event it may not read (withheld by the gate) wakes it once, not in a loop. Call
    /// `ready` first.
    package func wait(for user: UserID?, after: Int64, until deadline: ContinuousClock.Instant,
                      handle: Handle) async -> Int64? {
        let key = user?.rawValue
        let id = handle.id
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int64?, Never>) in
                let (ready, signal) = state.withLock { s -> (Int64??, Bool) in
                    let newest = key.map { s.latest[$0] ?? 0 } ?? s.latestAny
                    if newest > after { return (.some(newest), false) }
                    if Task.isCancelled || handle.isInterrupted { return (.some(nil), false) }
                    s.waiters[id] = Waiter(key: key, after: after, deadline: deadline, continuation: continuation)
                    // The loop reads what was committed while nobody waited, and keeps this deadline.
                    return (.none, s.dirty || s.sleepingUntil.map { deadline < $0 } ?? true)
                }
                if let ready { continuation.resume(returning: ready) }
                if signal { wake.signal() }
            }
        } onCancel: {
            let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: nil)
        }
    }

    // MARK: The loop

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.readStart()
            while !Task.isCancelled {
                self.resumeDue()
                let scan = self.state.withLock { s -> Bool in
                    guard s.dirty, !s.waiters.isEmpty else { return false }
                    s.dirty = false
                    return true
                }
                if scan {
                    do {
                        try await self.readLog()
                    } catch is CancellationError {
                        break
                    } catch {
                        // Read again on the next wake-up (at the latest in a second).
                        self.state.withLock { $0.dirty = true }
                        self.logger.warning("reading the event log failed", metadata: ["error": "\(error)"])
                        await self.wake.wait(timeout: .seconds(1))
                        continue
                    }
                }
                let now = ContinuousClock.now
                let next = self.state.withLock { s -> ContinuousClock.Instant in
                    let next = s.waiters.values.map(\.deadline).min() ?? now.advanced(by: .seconds(60))
                    s.sleepingUntil = next
                    return next
                }
                await self.wake.wait(timeout: max(.zero, now.duration(to: next)))
            }
        }
        // Stopping: every stream still waiting ends now; a later run reads the position again.
        let waiters = state.withLock { s in
            defer {
                s.waiters = [:]
                s.scanned = nil
            }
            return s.waiters.values
        }
        for w in waiters { w.continuation.resume(returning: nil) }
        releaseStarting()
    }

    /// Where the log stands when the loop starts (retried while the database is down).
    private func readStart() async {
        while !Task.isCancelled {
            do {
                let position = try await store.latestEventPosition()
                let starting = state.withLock { s in
                    s.scanned = position
                    defer { s.starting = [] }
                    return s.starting
                }
                for c in starting { c.resume() }
                return
            } catch {
                logger.warning("cannot read the event log's position yet", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    /// Lets the streams waiting in `ready` go on (they find the position unread, and answer 503).
    private func releaseStarting() {
        let starting = state.withLock { s in defer { s.starting = [] }; return s.starting }
        for c in starting { c.resume() }
    }

    /// Called after a commit that appended events (of any process).
    private func eventsCommitted() {
        state.withLock { $0.dirty = true }
        wake.signal()
    }

    /// Ends the waits whose deadline passed (heartbeats).
    private func resumeDue() {
        let now = ContinuousClock.now
        let due = state.withLock { s -> [Waiter] in
            let ids = s.waiters.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { s.waiters.removeValue(forKey: $0) }
        }
        for w in due { w.continuation.resume(returning: nil) }
    }

    /// Reads the log past what was read and wakes the waiters whose user has a new event.
    private func readLog() async throws {
        while let from = state.withLock({ $0.scanned }) {
            let rows = try await store.eventRecipients(after: from, limit: Self.batch)
            guard let top = rows.last?.position else { return }
            let woken = state.withLock { s -> [(Waiter, Int64)] in
                var fresh: [String: Int64] = [:]
                for (position, recipient) in rows { fresh[recipient.rawValue] = max(fresh[recipient.rawValue] ?? 0, position) }
                for (key, position) in fresh { s.latest[key] = max(s.latest[key] ?? 0, position) }
                s.latestAny = max(s.latestAny, top)
                s.scanned = max(s.scanned ?? 0, top)
                if s.latest.count > 100_000 {
                    let keep = top - 1_000_000
                    s.latest = s.latest.filter { $0.value > keep }
                }
                var wake: [(Waiter, Int64)] = []
                for (id, w) in s.waiters {
                    let newest = w.key.map { fresh[$0] ?? 0 } ?? top
                    if newest > w.after {
                        wake.append((w, newest))
                        s.waiters[id] = nil
                    }
                }
                return wake
            }
            for (w, position) in woken { w.continuation.resume(returning: position) }
            if rows.count < Self.batch { return }
        }
    }
}
