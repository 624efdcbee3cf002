import DBeaconCore
import Foundation
import Synchronization
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresNIO

/// A PostgreSQL connection (inside a transaction, or not) as a `SQLSession`: arguments bound
/// with their PostgreSQL types, cells read into the values both databases share.
struct PostgresSession: SQLSession {
    let connection: PostgresConnection
    let logger: Logger
    /// The store's prepared statements (nil: every statement is sent as it is).
    var statements: PreparedStatements? = nil
    /// Set in write transactions (`PostgresStore.write`).
    var deferredEvents: DeferredEvents? = nil
    var dialect: SQLDialect { .postgres }

    @discardableResult
    func rows(_ sql: String, _ arguments: [any SQLArgument]) async throws -> [SQLRow] {
        let values = arguments.map(\.sqlValue)
        // The arguments bound in binary, for a statement sent as it is (a prepared one takes
        // them as literals in its EXECUTE).
        func plain() async throws -> [SQLRow] {
            var binds = PostgresBindings(capacity: values.count)
            for value in values { try Self.bind(value, to: &binds) }
            return try await collect(sql, binds)
        }
        do {
            switch statements?.plan(sql, values, on: connection) ?? .plain {
            case .plain:
                return try await plain()
            case .execute(let name, let prepare, let index):
                guard let execute = PreparedStatements.execute(name, values) else { return try await plain() }
                if let prepare {
                    try await collect(prepare, PostgresBindings())
                    statements?.prepared(name, index: index, on: connection.id)
                }
                do {
                    return try await collect(execute, PostgresBindings())
                } catch let error as PSQLError where ["26000", "0A000"].contains(error.serverInfo?[.sqlState] ?? "") {
                    // Gone from the server, or "cached plan must not change result type" (a
                    // table it reads gained or lost a column): prepared anew next time.
                    statements?.forget(name, on: connection.id)
                    throw error
                }
            }
        } catch let error as PSQLError where ["23505", "23503", "23514"].contains(error.serverInfo?[.sqlState] ?? "") {
            throw SQLConstraintViolation(constraint: error.serverInfo?[.constraintName], message: error.serverInfo?[.message] ?? "")
        }
    }

    /// Runs one statement and collects its rows.
    @discardableResult
    private func collect(_ sql: String, _ binds: PostgresBindings) async throws -> [SQLRow] {
        // All rows collected on the event loop (no back-pressure): postgres-nio 1.33's
        // streaming path traps ("How can we receive a body part, after a
        // channelReadComplete…") when PostgreSQL dies while a stream waits for demand, and
        // the fault suite (scripts/fault-test.py) saw it take a node down. Answers here are
        // small pages anyway (`forEachBatch` pages large reads).
        let future: EventLoopFuture<PostgresQueryResult> = connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        let collected = try await future.get()
        var result: [SQLRow] = []
        result.reserveCapacity(collected.rows.count)
        var columns: SQLColumns?
        for row in collected.rows {
            let cells = Array(row.makeRandomAccess())
            let names = columns ?? SQLColumns(cells.map(\.columnName))
            columns = names
            result.append(SQLRow(columns: names, values: try cells.map(Self.value)))
        }
        return result
    }

    func forEachBatch(_ sql: String, batch: Int, _ body: ([SQLRow]) async throws -> Void) async throws {
        let cursor = "dbeacon_cursor_\(UInt64.random(in: 0...UInt64.max))"
        try await rows("DECLARE \(cursor) NO SCROLL CURSOR FOR \(sql)", [])
        while true {
            let page = try await rows("FETCH FORWARD \(max(batch, 1)) FROM \(cursor)", [])
            if !page.isEmpty { try await body(page) }
            if page.count < batch { break }
        }
        try await rows("CLOSE \(cursor)", [])
    }

    private static func bind(_ value: SQLValue, to binds: inout PostgresBindings) throws {
        switch value {
        case .null: binds.appendNull()
        case .integer(let v): binds.append(v)
        case .real(let v): binds.append(v)
        case .bool(let v): binds.append(v)
        case .text(let v): binds.append(v)
        case .blob(let v): binds.append(ByteBuffer(bytes: v))
        case .textArray(let v): binds.append(v)
        case .integerArray(let v): binds.append(v)
        }
    }

    private static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .int2, .int4, .int8: return .integer(try cell.decode(Int64.self))
        case .float4, .float8: return .real(try cell.decode(Double.self))
        case .numeric: return .real(Double(try cell.decode(String.self)) ?? .nan)
        case .bytea: return .blob(Array(try cell.decode(ByteBuffer.self).readableBytesView))
        default: return .text(try cell.decode(String.self))
        }
    }

    /// Runs a script of statements separated by `;` (migrations). Comments are dropped first;
    /// the schema files contain no `;` inside literals.
    func simple(_ script: String) async throws {
        let code = script.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard let range = line.range(of: "--") else { return line }
            return line[..<range.lowerBound]
        }.joined(separator: "\n")
        for statement in code.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
            try await rows(String(statement))
        }
    }
}

/// Who this process is, for notifications (`id`) and outbox claims (`claimant`: its
/// listener session, which PostgreSQL reports as gone once the process stops).
final class NodeIdentity: Sendable {
    let id = UUID().uuidString.lowercased()
    private let state = NIOLockedValueBox<(ready: Bool, claimant: String?)>((false, nil))

    var claimant: String? { state.withLockedValue { $0.claimant } }

    func markReady(claimant: String?) {
        state.withLockedValue { $0 = (true, claimant) }
    }

    /// Waits (up to 10 s) until the listener is subscribed, so no later change is missed.
    func waitUntilReady() async throws {
        for _ in 0..<1000 {
            if state.withLockedValue({ $0.ready }) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw DBeaconError(.unavailable, code: "database_unavailable", message: "cannot LISTEN on PostgreSQL")
    }
}

/// Observers of local and remote changes.
final class PostgresObservers: Sendable {
    let local = ChangeObserverBox()
    let remote = ChangeObserverBox()
    /// Awaited when the listener connected again after losing its connection.
    let resync = LockedFunction<@Sendable () async throws -> Void>()
    /// Whether a listener was connected before (so the next connection is a reconnection).
    let listenedBefore = Mutex(false)
    /// Told of account changes (this node's and, through NOTIFY, other nodes').
    let accounts = AccountObservers()
    /// Told after commits that appended events (this node's, and through NOTIFY other nodes').
    let events = LockedFunction<@Sendable () -> Void>()
}

/// The NOTIFY payload of one change: `node kind id`, a beacon's (the location of a move is
/// re-read) or, for `a`, a user's whose account changed (a token, disabled, erased), or, for
/// `e`, that the transaction appended events (id `-`).
struct ChangeNotice {
    enum Kind: String { case upsert = "u", delete = "d", move = "m", account = "a", events = "e" }
    var node: String
    var kind: Kind
    /// The beacon's id, or the user's for `account`.
    var id: String

    var beacon: BeaconID { BeaconID(uncheckedRawValue: id) }

    init(_ change: BeaconChange, node: String) {
        self.node = node
        switch change {
        case .upsert(let b): kind = .upsert; id = b.id.rawValue
        case .delete(let b): kind = .delete; id = b.rawValue
        case .move(let b, _): kind = .move; id = b.rawValue
        }
    }

    init(eventsBy node: String) {
        self.node = node
        kind = .events
        id = "-"
    }

    init(account user: UserID, node: String) {
        self.node = node
        kind = .account
        id = user.rawValue
    }

    init?(payload: String) {
        let parts = payload.split(separator: " ")
        guard parts.count == 3, let kind = Kind(rawValue: String(parts[1])) else { return nil }
        node = String(parts[0])
        self.kind = kind
        id = String(parts[2])
    }

    var payload: String { "\(node) \(kind.rawValue) \(id)" }
}

extension PostgresStore {
    /// Keeps a dedicated connection LISTENing on the change channel and reports other
    /// processes' changes; it cannot die silently:
    ///
    /// * the receive loop only queues notifications; a separate task applies them, each beacon
    ///   re-read within the deadline (a read that fails marks the feed for a resync);
    /// * a heartbeat (`SELECT 1` on the LISTEN connection every `heartbeat` seconds, within the
    ///   deadline) notices a dead connection that delivers nothing;
    /// * a lost connection is reconnected at once, then with a back-off that resets after every
    ///   success, and every reconnection resynchronises the index (notifications sent while no
    ///   listener was connected are gone) before the feed counts as caught up;
    /// * `feed` says all this to readiness (`/readyz`) and metrics.
    static func listen(target: PostgresURL, channel: String, node: NodeIdentity, observers: PostgresObservers,
                       client: PostgresClient, feed: ChangeFeedHealth, deadline: DatabaseDeadline, logger: Logger,
                       heartbeat: Duration = .seconds(2)) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    let pg = PostgresSession(connection: connection, logger: logger)
                    let me = try await deadline.run("the listener's identity") {
                        try await pg.row("""
                            SELECT pg_backend_pid() || '@' || floor(extract(epoch FROM backend_start) * 1000000)::bigint AS claimant
                            FROM pg_stat_activity WHERE pid = pg_backend_pid()
                            """)
                    }
                    let claimant = try me?.string("claimant")
                    try await connection.listen(on: channel) { notifications in
                        node.markReady(claimant: claimant)
                        failures = 0
                        feed.connected()
                        let (queue, pending) = AsyncStream.makeStream(of: ChangeNotice.self)
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            // Receive: queue only, never wait on the database here.
                            group.addTask {
                                defer { pending.finish() }
                                for try await notification in notifications {
                                    guard let notice = ChangeNotice(payload: notification.payload), notice.node != node.id else { continue }
                                    feed.received()
                                    pending.yield(notice)
                                }
                                throw DBeaconError(.unavailable, code: "database_unavailable", message: "the LISTEN connection ended")
                            }
                            // Heartbeat on the same connection.
                            group.addTask {
                                while true {
                                    try await Task.sleep(for: heartbeat)
                                    _ = try await deadline.run("the listener's heartbeat") { try await pg.row("SELECT 1 AS one") }
                                    feed.beat()
                                }
                            }
                            // Resynchronise after a reconnection, then apply what arrives.
                            group.addTask {
                                if observers.listenedBefore.withLock({ before in defer { before = true }; return before }),
                                   let resync = observers.resync.value {
                                    logger.notice("PostgreSQL listener reconnected; resynchronising")
                                    feed.catchingUp(true)
                                    try await resync()
                                    // Events committed while no listener was connected are news too.
                                    observers.events.value?()
                                }
                                feed.catchingUp(false)
                                for await notice in queue {
                                    if notice.kind == .account {
                                        observers.accounts.notify([UserID(uncheckedRawValue: notice.id)])
                                        feed.applied()
                                        continue
                                    }
                                    if notice.kind == .events {
                                        observers.events.value?()
                                        feed.applied()
                                        continue
                                    }
                                    guard let observer = observers.remote.observer else { feed.applied(); continue }
                                    if notice.kind == .delete {
                                        observer(.delete(notice.beacon))
                                    } else if let beacon = try await deadline.run("a changed beacon", {
                                        try await readBeacon(client: client, logger: logger, id: notice.beacon)
                                    }) {
                                        observer(.upsert(beacon))
                                    } else {
                                        observer(.delete(notice.beacon))
                                    }
                                    feed.applied()
                                }
                            }
                            // The first task to end (with an error) ends the connection.
                            try await group.next()
                            group.cancelAll()
                        }
                    }
                }
            } catch is CancellationError {
                feed.disconnected()
                return
            } catch {
                feed.disconnected()
                if Task.isCancelled { return }
                failures += 1
                logger.warning("PostgreSQL change feed lost; reconnecting", metadata: ["error": "\(error)", "failures": "\(failures)"])
            }
            // At once the first time, then 100 ms doubling to 2 s; reset by every success.
            if failures > 1 { try? await Task.sleep(for: .milliseconds(min(2000, 100 * (1 << min(failures - 2, 5))))) }
        }
    }
}

/// The state of the PostgreSQL change feed, for `/readyz` and `/metrics`: whether its LISTEN
/// connection is up, whether it is resynchronising after a reconnection, and how far behind
/// it is (notifications received but not yet applied, and the age of the oldest of them).
package final class ChangeFeedHealth: Sendable {
    private struct State {
        var listening: Bool
        var connected = false
        var catchingUp = false
        var queued = 0
        var oldestQueued: ContinuousClock.Instant?
        var lastBeat: ContinuousClock.Instant?
        var reconnections = 0
    }
    private let state: Mutex<State>

    package init(listening: Bool) { state = Mutex(State(listening: listening)) }

    /// Whether this node serves current answers as far as the feed goes: not listening at all
    /// (one node), or connected and caught up.
    package var isCurrent: Bool { state.withLock { !$0.listening || ($0.connected && !$0.catchingUp) } }
    package var isConnected: Bool { state.withLock { !$0.listening || $0.connected } }
    package var isCatchingUp: Bool { state.withLock { $0.catchingUp } }
    /// Seconds the oldest unapplied notification has waited (0 when none).
    package var lagSeconds: Double {
        state.withLock { s in s.oldestQueued.map { (ContinuousClock.now - $0).inSeconds } ?? 0 }
    }
    package var reconnections: Int { state.withLock { $0.reconnections } }

    func connected() {
        state.withLock { s in
            if !s.connected && s.lastBeat != nil { s.reconnections += 1 }
            s.connected = true
            s.lastBeat = .now
        }
    }
    func disconnected() { state.withLock { $0.connected = false; $0.queued = 0; $0.oldestQueued = nil } }
    func catchingUp(_ on: Bool) { state.withLock { $0.catchingUp = on } }
    func beat() { state.withLock { $0.lastBeat = .now } }
    func received() {
        state.withLock { s in
            s.queued += 1
            if s.oldestQueued == nil { s.oldestQueued = .now }
        }
    }
    func applied() {
        state.withLock { s in
            s.queued = max(0, s.queued - 1)
            s.oldestQueued = s.queued == 0 ? nil : .now
        }
    }
}

extension PostgresStore {
    /// One beacon as it is now, on a pooled connection (the listener, reporting a remote change).
    static func readBeacon(client: PostgresClient, logger: Logger, id: BeaconID) async throws -> Beacon? {
        try await client.withConnection { connection in
            try await beacons(ids: [id], db: PostgresSession(connection: connection, logger: logger)).first
        }
    }
}
