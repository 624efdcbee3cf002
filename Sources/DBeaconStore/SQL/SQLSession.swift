import DBeaconCore

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
}

extension SQLSession {
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
