package import DBeaconCore
import Synchronization

/// One connection inside a transaction (a write, or a read snapshot), on either database.
/// Statements are written once, in the SQL both databases accept, with `$1…$n` placeholders;
/// the few constructs that differ come from `dialect`.
package protocol SQLSession: Sendable {
    var dialect: SQLDialect { get }
    /// Runs one statement and returns its rows (use `RETURNING` to learn what changed).
    @discardableResult
    func rows(_ sql: String, _ arguments: [any SQLArgument]) async throws -> [SQLRow]
    /// Streams a query's rows to `body`, `batch` rows at a time, without holding them all
    /// (SQLite: one statement stepped between batches; PostgreSQL: a cursor in the current
    /// transaction, so the query takes no arguments there). `body` may run other statements.
    func forEachBatch(_ sql: String, batch: Int, _ body: ([SQLRow]) async throws -> Void) async throws
    /// Where a write transaction collects its events until just before it commits (PostgreSQL,
    /// see `DeferredEvents`); nil: events are inserted where they are made (SQLite).
    var deferredEvents: DeferredEvents? { get }
    /// Set when the transaction appended events (SQLite's write transactions; nil elsewhere).
    var eventMark: EventMark? { get }
}

extension SQLSession {
    package var deferredEvents: DeferredEvents? { nil }
    package var eventMark: EventMark? { nil }

    @discardableResult
    package func rows(_ sql: String) async throws -> [SQLRow] { try await rows(sql, []) }

    /// The first row, if any.
    package func row(_ sql: String, _ arguments: [any SQLArgument] = []) async throws -> SQLRow? {
        try await rows(sql, arguments).first
    }

    /// Whether the query returns any row.
    package func exists(_ sql: String, _ arguments: [any SQLArgument] = []) async throws -> Bool {
        try await !rows(sql, arguments).isEmpty
    }
}

/// A statement built piece by piece, numbering its placeholders.
package struct SQLStatement: Sendable {
    package var arguments: [any SQLArgument] = []

    package init() {}

    /// Adds an argument and returns its placeholder (`$n`).
    package mutating func bind(_ value: any SQLArgument) -> String {
        arguments.append(value)
        return "$\(arguments.count)"
    }
}

/// The events of a PostgreSQL write transaction, inserted together at its end, under a lock
/// held until it commits (`SQLStore.writeDeferredEvents`).
///
/// Readers follow the log by `seq` (pages' cursors, streams' `Last-Event-ID`, webhooks). Two
/// transactions that took their seqs in one order could commit in the other, and a reader in
/// between saw the higher seq first, moved its cursor past it and never saw the lower one.
/// Taking the seqs under a lock held through the commit makes commit order seq order. Taking
/// it last, when nothing else is left to lock (events have no foreign keys to rows another
/// transaction could hold), keeps it free of deadlocks with the transactions' other locks.
/// Whether a write transaction appended events, and of which types: for the wake-up after its
/// commit, and `EventTypeMarks`.
package final class EventMark: Sendable {
    private let types = Mutex(Set<EventType>())

    package init() {}

    func set(_ events: [Event]) { types.withLock { for e in events { $0.insert(e.type) } } }

    /// True once events were appended.
    package var isSet: Bool { types.withLock { !$0.isEmpty } }

    /// The types of the events appended.
    package var written: Set<EventType> { types.withLock { $0 } }
}

/// The newest log position of each event type this process knows of (SpatiaLite): a reader of
/// some types of a user's events after a position past all of them has nothing to read (an
/// OwnTracks post reads the group alerts since the phone's last post; alerts are rare). Raised
/// after each local commit that appended events, to the log's end then; every type is raised to
/// the log's end when the store opens and when another process committed (polled within a
/// quarter second). A mark may be above the newest event of its type (deleted events, other
/// types in the same commit), never below a committed one except between a commit and its raise,
/// where a reader skips what it will read next time (skipping never moves a reader past an event).
package final class EventTypeMarks: Sendable {
    private struct State {
        var floor: Int64 = .max
        var byType: [EventType: Int64] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    /// The newest position an event of `types` may have (`Int64.max` until the store opened).
    package func newest(of types: [EventType]) -> Int64 {
        state.withLock { s in types.reduce(s.floor) { max($0, s.byType[$1] ?? .min) } }
    }

    /// Events of `types` were committed up to `position`.
    func raise(_ types: Set<EventType>, to position: Int64) {
        state.withLock { s in for t in types { s.byType[t] = max(s.byType[t] ?? .min, position) } }
    }

    /// Events of any type may have been committed up to `position` (the store opened; another
    /// process committed).
    func raiseAll(to position: Int64) {
        state.withLock { s in s.floor = s.floor == .max ? position : max(s.floor, position) }
    }
}

package final class DeferredEvents: Sendable {
    private let events = Mutex<[Event]>([])

    package init() {}

    func append(_ more: [Event]) { events.withLock { $0 += more } }

    /// The events collected so far, which are then no longer held.
    func take() -> [Event] { events.withLock { e in defer { e = [] }; return e } }
}
