import CSQLite
import DBeaconCore
import Foundation

/// One SQLite connection with SpatiaLite loaded, and its prepared statements. Not
/// thread-safe: `SpatiaLiteStore` hands each connection to one task at a time.
///
/// Statements use `$1…$n` placeholders, bound by number (the shared SQL of `SQLStore`).
final class SQLiteConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private var statements: [String: Prepared] = [:]
    /// The database's write-ahead log (`<path>-wal`).
    private let walPath: String

    /// A prepared statement, with its result columns and which argument each placeholder takes.
    private final class Prepared {
        let statement: OpaquePointer
        let columns: SQLColumns
        /// Per placeholder (1-based), the 0-based argument index.
        let argumentIndex: [Int]

        init(statement: OpaquePointer) {
            self.statement = statement
            columns = SQLColumns((0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) })
            argumentIndex = (0..<sqlite3_bind_parameter_count(statement)).map { i in
                guard let name = sqlite3_bind_parameter_name(statement, i + 1) else { return Int(i) }
                let text = String(cString: name)
                return Int(text.dropFirst()).map { $0 - 1 } ?? Int(i)
            }
        }

        deinit { sqlite3_finalize(statement) }
    }

    /// Opens the database at `path` (creating it unless `readOnly`) and, when `spatial`, loads
    /// `mod_spatialite`.
    init(path: String, readOnly: Bool, synchronousFull: Bool, spatial: Bool = true) throws {
        _ = Self.configureSQLite
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw DBeaconError(.unavailable, code: "database_unavailable", message: "cannot open \(path): \(message)")
        }
        handle = db
        walPath = path + "-wal"
        sqlite3_extended_result_codes(db, 1)
        // Other processes (the CLI with --db while the server runs) hold the write lock only briefly.
        sqlite3_busy_timeout(db, 10_000)
        if spatial { try loadSpatiaLite() }
        if !readOnly { try execute("PRAGMA journal_mode = WAL") }
        try execute("PRAGMA foreign_keys = ON")
        try execute("PRAGMA synchronous = \(synchronousFull ? "FULL" : "NORMAL")")
    }

    /// Process-wide SQLite settings, made once before the first connection opens: no memory
    /// statistics (their global mutex serialised every allocation of every connection).
    private static let configureSQLite: Void = {
        _ = dbeacon_sqlite_disable_memory_statistics()
    }()

    deinit {
        statements.removeAll()
        // The last connection to close checkpoints the log into the database file; with too
        // little free space for that, the log stays (the next open replays it) rather than
        // the checkpoint taking the space writes need.
        if !DiskSpace.allows(2 * DiskSpace.size(of: walPath), at: walPath) {
            dbeacon_skip_checkpoint_on_close(handle)
        }
        sqlite3_close_v2(handle)
    }

    private func loadSpatiaLite() throws {
        sqlite3_enable_load_extension(handle, 1)
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_load_extension(handle, "mod_spatialite", nil, &message)
        sqlite3_enable_load_extension(handle, 0)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(message)
            throw DBeaconError(.unavailable, code: "spatialite_unavailable",
                               message: "cannot load mod_spatialite (install libsqlite3-mod-spatialite): \(text)")
        }
    }

    /// Runs a script of statements without arguments (pragmas, migrations, BEGIN/COMMIT).
    func execute(_ script: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, script, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw Self.error(rc, text)
        }
    }

    /// Has `checkpointer` told the log's size after each commit of this connection, instead of
    /// checkpointing inside the commit (nil: SQLite's own automatic checkpoints again).
    func reportCommits(to checkpointer: WALCheckpointer?) {
        guard let checkpointer else {
            sqlite3_wal_hook(handle, nil, nil)
            sqlite3_wal_autocheckpoint(handle, 1_000)
            return
        }
        // The store keeps the checkpointer while this connection lives, and clears the hook first.
        sqlite3_wal_hook(handle, { context, db, _, frames in
            if let context { Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(frames: frames, db: db) }
            return SQLITE_OK
        }, Unmanaged.passUnretained(checkpointer).toOpaque())
    }

    /// Rows changed by all statements so far (to learn whether a transaction wrote anything).
    var totalChanges: Int64 { sqlite3_total_changes64(handle) }

    /// Runs one statement and returns its rows.
    func rows(_ sql: String, _ arguments: [any SQLArgument]) throws -> [SQLRow] {
        let prepared = try prepare(sql)
        let s = prepared.statement
        defer {
            sqlite3_reset(s)
            sqlite3_clear_bindings(s)
        }
        for (i, argumentIndex) in prepared.argumentIndex.enumerated() {
            guard argumentIndex < arguments.count else {
                throw DBeaconError.internalError("database error", cause: "missing argument \(argumentIndex + 1) for \(sql)")
            }
            try bind(arguments[argumentIndex].sqlValue, at: Int32(i + 1), in: s)
        }
        var result: [SQLRow] = []
        let count = sqlite3_column_count(s)
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw Self.error(rc, String(cString: sqlite3_errmsg(handle))) }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(count))
            for c in 0..<count { values.append(column(c, of: s)) }
            result.append(SQLRow(columns: prepared.columns, values: values))
        }
        return result
    }

    /// Steps through a query's rows `batch` at a time. The statement is prepared for this call
    /// (not the cached one), so `body` may run other statements on this connection meanwhile.
    func forEachBatch(_ sql: String, batch: Int, _ body: ([SQLRow]) async throws -> Void) async throws {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, 0, &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw Self.error(rc, String(cString: sqlite3_errmsg(handle)) + " in: " + sql)
        }
        let prepared = Prepared(statement: statement) // finalised when it goes
        let count = sqlite3_column_count(statement)
        var rows: [SQLRow] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw Self.error(rc, String(cString: sqlite3_errmsg(handle))) }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(count))
            for c in 0..<count { values.append(column(c, of: statement)) }
            rows.append(SQLRow(columns: prepared.columns, values: values))
            if rows.count >= batch {
                try await body(rows)
                rows = []
            }
        }
        if !rows.isEmpty { try await body(rows) }
        withExtendedLifetime(prepared) {}
    }

    private func prepare(_ sql: String) throws -> Prepared {
        if let p = statements[sql] { return p }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw Self.error(rc, String(cString: sqlite3_errmsg(handle)) + " in: " + sql)
        }
        let p = Prepared(statement: statement)
        // Statements built from filters vary; keep the cache bounded.
        if statements.count >= 512 { statements.removeAll() }
        statements[sql] = p
        return p
    }

    private func bind(_ value: SQLValue, at i: Int32, in s: OpaquePointer) throws {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(s, i)
        case .integer(let v): rc = sqlite3_bind_int64(s, i, v)
        case .real(let v): rc = sqlite3_bind_double(s, i, v)
        case .bool(let v): rc = sqlite3_bind_int64(s, i, v ? 1 : 0)
        case .text(let v): rc = sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT)
        case .blob(let bytes):
            rc = bytes.withUnsafeBytes { sqlite3_bind_blob(s, i, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT) }
        case .textArray, .integerArray:
            rc = sqlite3_bind_text(s, i, value.jsonArray ?? "[]", -1, SQLITE_TRANSIENT)
        }
        if rc != SQLITE_OK { throw Self.error(rc, String(cString: sqlite3_errmsg(handle))) }
    }

    private func column(_ c: Int32, of s: OpaquePointer) -> SQLValue {
        switch sqlite3_column_type(s, c) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(s, c))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(s, c))
        case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(s, c)))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(s, c))
            guard count > 0, let p = sqlite3_column_blob(s, c) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: p, count: count)))
        default: return .null
        }
    }

    /// SQLite result codes as DBeacon errors: constraint violations are conflicts, a busy
    /// database is 503, anything else an internal error.
    static func error(_ rc: Int32, _ message: String) -> any Error {
        switch rc & 0xff {
        case SQLITE_CONSTRAINT: return SQLConstraintViolation(constraint: nil, message: message)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return DBeaconError(.unavailable, code: "database_busy", message: "the database is busy, retry shortly")
        case SQLITE_FULL:
            return DBeaconError(.insufficientStorage, code: "insufficient_storage",
                                message: "the disk holding the database is full; nothing was written")
        default: return DBeaconError.internalError("database error", cause: "\(rc): \(message)")
        }
    }
}

/// SQLite copies the bound value before the call returns.
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A transaction on one SQLite connection, for the shared store code.
struct SQLiteSession: SQLSession {
    let connection: SQLiteConnection
    var eventMark: EventMark? = nil
    var dialect: SQLDialect { .sqlite }

    func rows(_ sql: String, _ arguments: [any SQLArgument]) async throws -> [SQLRow] {
        try connection.rows(sql, arguments)
    }

    func forEachBatch(_ sql: String, batch: Int, _ body: ([SQLRow]) async throws -> Void) async throws {
        try await connection.forEachBatch(sql, batch: batch, body)
    }
}
