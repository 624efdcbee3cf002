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
    var dialect: SQLDialect { .postgres }

    @discardableResult
    func rows(_ sql: String, _ arguments: [any SQLArgument]) async throws -> [SQLRow] {
        var binds = PostgresBindings(capacity: arguments.count)
        for argument in arguments { try Self.bind(argument.sqlValue, to: &binds) }
        do {
            let sequence = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            var result: [SQLRow] = []
            var columns: SQLColumns?
            for try await row in sequence {
                let cells = Array(row.makeRandomAccess())
                let names = columns ?? SQLColumns(cells.map(\.columnName))
                columns = names
                result.append(SQLRow(columns: names, values: try cells.map(Self.value)))
            }
            return result
        } catch let error as PSQLError where ["23505", "23503", "23514"].contains(error.serverInfo?[.sqlState] ?? "") {
            throw SQLConstraintViolation(constraint: error.serverInfo?[.constraintName], message: error.serverInfo?[.message] ?? "")
        }
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
    /// Told when the listener connected again after losing its connection.
    let resync = Mutex<(@Sendable () -> Void)?>(nil)
    /// Whether a listener was connected before (so the next connection is a reconnection).
    let listenedBefore = Mutex(false)
}

/// The NOTIFY payload of one beacon change: `node kind id` (the location of a move is re-read).
struct ChangeNotice {
    enum Kind: String { case upsert = "u", delete = "d", move = "m" }
    var node: String
    var kind: Kind
    var beacon: BeaconID

    init(_ change: BeaconChange, node: String) {
        self.node = node
        switch change {
        case .upsert(let b): kind = .upsert; beacon = b.id
        case .delete(let id): kind = .delete; beacon = id
        case .move(let id, _): kind = .move; beacon = id
        }
    }

    init?(payload: String) {
        let parts = payload.split(separator: " ")
        guard parts.count == 3, let kind = Kind(rawValue: String(parts[1])) else { return nil }
        node = String(parts[0])
        self.kind = kind
        beacon = BeaconID(uncheckedRawValue: String(parts[2]))
    }

    var payload: String { "\(node) \(kind.rawValue) \(beacon.rawValue)" }
}

extension PostgresStore {
    /// Keeps a dedicated connection LISTENing on the change channel (reconnecting after
    /// failures) and reports other processes' changes, re-reading each beacon.
    static func listen(target: PostgresURL, channel: String, node: NodeIdentity, observers: PostgresObservers,
                       client: PostgresClient, logger: Logger) async {
        var attempt = 0
        while !Task.isCancelled {
            do {
                // A pooled connection held for the process's lifetime: the pool's settings
                // (TLS, search path) apply to it too.
                try await client.withConnection { connection in
                    let pg = PostgresSession(connection: connection, logger: logger)
                    let me = try await pg.row("""
                        SELECT pg_backend_pid() || '@' || floor(extract(epoch FROM backend_start) * 1000000)::bigint AS claimant
                        FROM pg_stat_activity WHERE pid = pg_backend_pid()
                        """)
                    let claimant = try me?.string("claimant")
                    try await connection.listen(on: channel) { notifications in
                        node.markReady(claimant: claimant)
                        // Notifications sent while no listener was connected are lost: whoever
                        // mirrors the store reloads from it.
                        if observers.listenedBefore.withLock({ before in defer { before = true }; return before }),
                           let resync = observers.resync.withLock({ $0 }) {
                            logger.notice("PostgreSQL listener reconnected; resynchronising")
                            resync()
                        }
                        for try await notification in notifications {
                            guard let notice = ChangeNotice(payload: notification.payload), notice.node != node.id,
                                  let observer = observers.remote.observer else { continue }
                            if notice.kind == .delete {
                                observer(.delete(notice.beacon))
                            } else if let beacon = try await readBeacon(client: client, logger: logger, id: notice.beacon) {
                                observer(.upsert(beacon))
                            } else {
                                observer(.delete(notice.beacon))
                            }
                        }
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                attempt += 1
                logger.warning("PostgreSQL listener failed; reconnecting", metadata: ["error": "\(error)", "attempt": "\(attempt)"])
            }
            try? await Task.sleep(for: .milliseconds(min(5000, 100 * (1 << min(attempt, 6)))))
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
