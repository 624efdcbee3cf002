import DBeaconCore
import Dispatch
import Synchronization

/// How long a request may wait for the database before it is answered 503
/// `database_unavailable` (with `Retry-After`): `dbeacon serve --db-timeout`.
///
/// The bound is kept on the client side (`DatabaseDeadline.run`), so a call answers in time even
/// when the database never does — a query sent on a PostgreSQL connection that has just died
/// may never complete — and on the server side (PostgreSQL's `statement_timeout` and
/// `lock_timeout`), so abandoned work does not run on.
package struct DatabaseDeadline: Sendable {
    package var seconds: Double

    package init(seconds: Double) { self.seconds = seconds }

    package static let `default` = DatabaseDeadline(seconds: 5)

    /// For bulk work that is not a request waiting on the database (loading the index, a
    /// resync, an import, a migration): inside `DatabaseDeadline.$bulk.withValue(.bulk) { … }`
    /// (a task-local), transactions get this bound instead, on both sides.
    @TaskLocal package static var bulk: DatabaseDeadline?
    package static let bulkWork = DatabaseDeadline(seconds: 600)

    /// The instant by which the request this task answers must be answered (PostgreSQL:
    /// `RequestDeadlineMiddleware`, `--db-timeout` + 1 s after it began): a request makes several
    /// calls, and each is bounded by what is left of it as well as by its own `seconds`, so the
    /// whole is bounded too. Work shared by waiting requests (a batch of reads or of commits)
    /// runs without it (`unboundedTask`, or `$request.withValue(nil)`): one request's end is not
    /// the others'.
    @TaskLocal package static var request: ContinuousClock.Instant?

    /// Starts `work` in a task of its own, outside any request's bound: work shared by waiting
    /// requests (a batch of reads, decisions or commits) or done after an answer.
    @discardableResult
    package static func unboundedTask(_ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task { await $request.withValue(nil) { await work() } }
    }

    /// Runs `operation`, answering by `seconds` whatever it does: past the deadline the caller
    /// gets 503 `database_unavailable` and the operation is cancelled (it may finish later on
    /// its own; nothing waits for it). Cancelling the caller cancels the operation.
    package func run<T: Sendable>(_ what: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        var seconds = self.seconds
        var cut: DBeaconError?
        if let end = Self.request {
            let leftSeconds = ContinuousClock.now.duration(to: end).inSeconds
            if leftSeconds < seconds {
                // The request's bound comes first: its answer is due then, whatever this call does.
                cut = Self.requestOverdue
                guard leftSeconds > 0 else { throw Self.requestOverdue }
                seconds = leftSeconds
            }
        }
        let race = Race<T>()
        let work = Task { race.finish(with: await Result(catching: { try await operation() })) }
        // The deadline is kept by the shared sweeper, whose timer runs on a queue of its own, not
        // on the tasks' threads (the cooperative pool or the event loops): when they are busy (or
        // blocked) it still falls on time (within the sweeper's tick).
        let id = ObjectIdentifier(race)
        WaitSweeper.shared.add(id, end: .now + .milliseconds(Int64(seconds * 1000))) { [seconds, cut] in
            race.finish(with: .failure(cut ?? DBeaconError(
                .unavailable, code: "database_unavailable",
                message: "the database did not answer \(what) within \(Self.format(seconds)) s; retry shortly")))
        }
        return try await withTaskCancellationHandler {
            defer { WaitSweeper.shared.remove(id); work.cancel() }
            return try await race.value()
        } onCancel: {
            work.cancel()
            race.finish(with: .failure(CancellationError()))
        }
    }

    fileprivate static let timers = DispatchQueue(label: "dbeacon.database-deadlines")

    /// What a request past its bound (`request`) is answered.
    static let requestOverdue = DBeaconError(.unavailable, code: "database_unavailable",
                                             message: "no answer within the request's time: the database is slow or unreachable; retry shortly")

    static func format(_ s: Double) -> String { s == s.rounded() ? String(Int(s)) : String(s) }
}

/// A request's wait for work shared with other requests (a batch of fence decisions, a coalesced
/// read), bounded by the request's time (`DatabaseDeadline.request`): the batch runs without
/// that bound (one request's end is not the others'), so without this a request could wait for
/// the batch before its own and then for its own, each bounded only by the deadline of a
/// transaction (and its retries). Past the request's time its caller is answered
/// `requestOverdue` at once; the batch goes on, and a batch that has not started yet leaves the
/// request out (`isAbandoned`): it was answered 503, so it is not carried out behind its back.
package final class BoundedWait<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>
    private let bounded: Bool

    /// Takes `continuation`, to be resumed once: by `resume(with:)` or at `end` (nil: no bound).
    package init(_ continuation: CheckedContinuation<T, any Error>, until end: ContinuousClock.Instant?) {
        self.continuation = Mutex(continuation)
        bounded = end != nil
        guard let end else { return }
        guard end > .now else {
            resume(with: .failure(DatabaseDeadline.requestOverdue))
            return
        }
        WaitSweeper.shared.add(ObjectIdentifier(self), end: end) { [self] in resume(with: .failure(DatabaseDeadline.requestOverdue)) }
    }

    /// Whether the request was answered already (past its time): its part of a batch is not done.
    package var isAbandoned: Bool { continuation.withLock { $0 == nil } }

    /// Answers the request, unless its time ran out first.
    package func resume(with result: Result<T, any Error>) {
        let taken = continuation.withLock { c in
            defer { c = nil }
            return c
        }
        guard let taken else { return }
        if bounded { WaitSweeper.shared.remove(ObjectIdentifier(self)) }
        taken.resume(with: result)
    }
}

/// The deadlines under way (database calls, bounded waits), expired by one timer that ticks every
/// 50 ms while there are any (a dispatch timer each cost a timer source per database call).
private final class WaitSweeper: Sendable {
    static let shared = WaitSweeper()

    private struct State {
        var waits: [ObjectIdentifier: (end: ContinuousClock.Instant, expire: @Sendable () -> Void)] = [:]
        var ticking = false
    }

    private let state = Mutex(State())
    private static let tick = 0.05

    func add(_ id: ObjectIdentifier, end: ContinuousClock.Instant, expire: @escaping @Sendable () -> Void) {
        let start = state.withLock { s in
            s.waits[id] = (end, expire)
            defer { s.ticking = true }
            return !s.ticking
        }
        if start { schedule() }
    }

    func remove(_ id: ObjectIdentifier) {
        _ = state.withLock { $0.waits.removeValue(forKey: id) }
    }

    private func schedule() {
        DatabaseDeadline.timers.asyncAfter(deadline: .now() + Self.tick) { self.sweep() }
    }

    private func sweep() {
        let now = ContinuousClock.now
        let (due, again): ([@Sendable () -> Void], Bool) = state.withLock { s in
            let ids = s.waits.compactMap { $0.value.end <= now ? $0.key : nil }
            let due = ids.compactMap { s.waits.removeValue(forKey: $0)?.expire }
            if s.waits.isEmpty { s.ticking = false }
            return (due, s.ticking)
        }
        for expire in due { expire() }
        if again { schedule() }
    }
}

/// The first of several outcomes, handed to one waiter.
private final class Race<T: Sendable>: Sendable {
    private let state = Mutex<(result: Result<T, any Error>?, waiter: CheckedContinuation<T, any Error>?)>((nil, nil))

    func finish(with result: Result<T, any Error>) {
        let waiter: CheckedContinuation<T, any Error>? = state.withLock { s in
            guard s.result == nil else { return nil }
            s.result = result
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<T, any Error>? = state.withLock { s in
                if let r = s.result { return r }
                s.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
