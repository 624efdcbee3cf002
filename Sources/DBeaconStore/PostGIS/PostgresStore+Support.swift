import DBeaconCore
import Foundation
import Synchronization
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresNIO

/// A value bound to a `$n` placeholder.
protocol PGArgument: Sendable {
    func append(to binds: inout PostgresBindings) throws
}

extension String: PGArgument {
    func append(to binds: inout PostgresBindings) throws { try binds.append(self) }
}
extension Int: PGArgument {
    func append(to binds: inout PostgresBindings) throws { try binds.append(Int64(self)) }
}
extension Int64: PGArgument {
    func append(to binds: inout PostgresBindings) throws { try binds.append(self) }
}
extension Double: PGArgument {
    func append(to binds: inout PostgresBindings) throws { try binds.append(self) }
}
extension Bool: PGArgument {
    func append(to binds: inout PostgresBindings) throws { try binds.append(self) }
}
extension Array: PGArgument where Element: PGArrayElement {
    func append(to binds: inout PostgresBindings) throws { try Element.appendArray(self, to: &binds) }
}
extension Optional: PGArgument where Wrapped: PGArgument {
    func append(to binds: inout PostgresBindings) throws {
        switch self {
        case .some(let value): try value.append(to: &binds)
        case .none: binds.appendNull()
        }
    }
}

/// Elements of arrays bound as one parameter (`= ANY($1)`, `unnest($1::text[])`).
protocol PGArrayElement: Sendable {
    static func appendArray(_ values: [Self], to binds: inout PostgresBindings) throws
}
extension String: PGArrayElement {
    static func appendArray(_ values: [String], to binds: inout PostgresBindings) throws { try binds.append(values) }
}
extension Int64: PGArrayElement {
    static func appendArray(_ values: [Int64], to binds: inout PostgresBindings) throws { try binds.append(values) }
}

/// A BYTEA value.
struct PGBytes: PGArgument {
    var bytes: [UInt8]
    func append(to binds: inout PostgresBindings) throws { try binds.append(ByteBuffer(bytes: bytes)) }
}

/// One result row, read by column name.
struct PGRow {
    let cells: PostgresRandomAccessRow

    func decode<T: PostgresDecodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        try cells[name].decode(T.self, context: .default)
    }

    func string(_ name: String) throws -> String { try decode(name) }
    func optionalString(_ name: String) throws -> String? { try decode(name) }
    func int(_ name: String) throws -> Int { Int(try decode(name, as: Int64.self)) }
    func int64(_ name: String) throws -> Int64 { try decode(name) }
    func optionalInt64(_ name: String) throws -> Int64? { try decode(name) }
    func optionalInt(_ name: String) throws -> Int? { try optionalInt64(name).map(Int.init) }
    func double(_ name: String) throws -> Double { try decode(name) }
    func optionalDouble(_ name: String) throws -> Double? { try decode(name) }
    func bool(_ name: String) throws -> Bool { try decode(name) }
    func timestamp(_ name: String) throws -> Timestamp { Timestamp(millis: try int64(name)) }
    func optionalTimestamp(_ name: String) throws -> Timestamp? { try optionalInt64(name).map(Timestamp.init(millis:)) }
    func bytes(_ name: String) throws -> [UInt8] {
        let buffer: ByteBuffer = try decode(name)
        return Array(buffer.readableBytesView)
    }
}

/// A leased connection inside a transaction (or not), with small query helpers.
struct PGConnection: Sendable {
    let connection: PostgresConnection
    let logger: Logger

    /// Runs one statement and returns its rows (use `RETURNING` to count changed rows).
    @discardableResult
    func rows(_ sql: String, _ arguments: [any PGArgument] = []) async throws -> [PGRow] {
        var binds = PostgresBindings(capacity: arguments.count)
        for argument in arguments { try argument.append(to: &binds) }
        let sequence = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        var result: [PGRow] = []
        for try await row in sequence { result.append(PGRow(cells: row.makeRandomAccess())) }
        return result
    }

    /// The first row, if any.
    func row(_ sql: String, _ arguments: [any PGArgument] = []) async throws -> PGRow? {
        try await rows(sql, arguments).first
    }

    /// Whether the query returns any row.
    func exists(_ sql: String, _ arguments: [any PGArgument] = []) async throws -> Bool {
        try await !rows(sql, arguments).isEmpty
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

/// A statement built piece by piece, numbering its placeholders.
struct PGStatement {
    var arguments: [any PGArgument] = []

    /// Adds an argument and returns its placeholder (`$n`).
    mutating func bind(_ value: any PGArgument) -> String {
        arguments.append(value)
        return "$\(arguments.count)"
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
                    let pg = PGConnection(connection: connection, logger: logger)
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
