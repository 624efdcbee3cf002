package import DBeaconCore
import Foundation
import GRDB
package import Logging

/// Copies a SpatiaLite deployment into an empty PostGIS database, table by table and value
/// by value (ids, sequence numbers, token hashes, timestamps, perimeters as WKB, the outbox
/// with its attempts), in one PostgreSQL transaction, then compares both sides: per table the
/// row count and a checksum of the rows (normalised values, order-independent).
package enum StoreCopier {
    /// One table's figures on both sides.
    package struct TableReport: Sendable {
        package var table: String
        package var sourceRows: Int
        package var targetRows: Int
        package var sourceChecksum: String
        package var targetChecksum: String
        package var matches: Bool { sourceRows == targetRows && sourceChecksum == targetChecksum }
    }

    /// Tables in foreign-key order. Tables missing on either side are skipped (a later
    /// migration adds them to both).
    static let tables = [
        "settings", "users", "beacons", "registry_entries", "sighting_batches", "beacon_tags", "beacon_members",
        "relationships", "followers", "user_locations",
        "fence_states", "events", "webhooks", "outbox", "delivery_attempts", "meeting_attendees", "tracked_groups",
        "group_members", "tour_followers", "tour_visits", "place_media", "user_interests", "promotion_interactions",
    ]

    /// A normalised cell: the same text on both sides for the same value.
    enum Cell: Sendable {
        case null, int(Int64), double(Double), text(String), bytes([UInt8]), bool(Bool)

        var normalised: String {
            switch self {
            case .null: "∅"
            case .int(let v): "i\(v)"
            case .double(let v): "d\(v)"
            case .text(let v): "t\(v)"
            case .bytes(let v): "x" + v.map { String(format: "%02x", $0) }.joined()
            case .bool(let v): v ? "i1" : "i0"
            }
        }
    }

    /// Copies `source` (a SpatiaLite file) into `target` (a `postgres://` URL) and reports.
    package static func copy(from source: String, to target: String, logger: Logger) async throws -> [TableReport] {
        guard FileManager.default.fileExists(atPath: source) else { throw DBeaconError.notFound("database file \(source)") }
        let sqlite = try SpatiaLiteStore(path: source)
        let postgres = try await PostgresStore.connect(url: target, listen: false, logger: logger)
        do {
            let reports = try await copy(sqlite, postgres)
            await postgres.shutdown()
            return reports
        } catch {
            await postgres.shutdown()
            throw error
        }
    }

    private static func copy(_ sqlite: SpatiaLiteStore, _ postgres: PostgresStore) async throws -> [TableReport] {
        let pgTypes = try await postgres.read { db in
            var types: [String: [String: String]] = [:]
            for row in try await db.rows("""
                SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema()
                """) {
                types[try row.string("table_name"), default: [:]][try row.string("column_name")] = try row.string("data_type")
            }
            return types
        }
        let present = try await sqlite.writer.read { db in try tables.filter { try db.tableExists($0) } }
        let copied = present.filter { pgTypes[$0] != nil }
        // Read everything first (one SQLite snapshot), then write in one PostgreSQL transaction.
        let data: [(table: String, columns: [String], rows: [[Cell]])] = try await sqlite.writer.read { db in
            try copied.map { table in
                let columns = try db.columns(in: table).map(\.name).filter { pgTypes[table]?[$0] != nil }
                let select = columns.map { $0 == "area" ? "AsBinary(area) AS area" : "\"\($0)\"" }.joined(separator: ", ")
                let rows = try Row.fetchAll(db, sql: "SELECT \(select) FROM \(table)").map { row in
                    columns.map { column -> Cell in
                        let value: DatabaseValue = row[column]
                        return cell(value, as: pgTypes[table]?[column] ?? "text")
                    }
                }
                return (table, columns, rows)
            }
        }
        try await postgres.write { db, _ in
            guard try await !db.exists("SELECT 1 FROM users"), try await !db.exists("SELECT 1 FROM beacons") else {
                throw DBeaconError.conflict("the target database is not empty; migrate into a new database or schema",
                                            code: "target_not_empty")
            }
            try await db.rows("DELETE FROM settings")
            for (table, columns, rows) in data where !rows.isEmpty {
                let perRow = columns.count
                let batch = max(1, 20_000 / max(perRow, 1))
                var start = 0
                while start < rows.count {
                    var statement = PGStatement()
                    let values = rows[start..<min(start + batch, rows.count)].map { row in
                        "(" + zip(columns, row).map { column, value in
                            let mark = statement.bind(argument(value))
                            return column == "area" ? "ST_GeomFromWKB(\(mark), 4326)" : mark
                        }.joined(separator: ", ") + ")"
                    }
                    let names = columns.map { "\"\($0)\"" }.joined(separator: ", ")
                    try await db.rows("INSERT INTO \(table) (\(names)) VALUES \(values.joined(separator: ", "))", statement.arguments)
                    start += batch
                }
                if columns.contains("seq") {
                    try await db.rows("SELECT setval(pg_get_serial_sequence('\(table)', 'seq'), (SELECT max(seq) FROM \(table)))")
                }
            }
        }
        // Compare what is now on both sides.
        var reports: [TableReport] = []
        for (table, columns, rows) in data {
            let select = columns.map { $0 == "area" ? "ST_AsBinary(area, 'NDR') AS area" : "\"\($0)\"" }.joined(separator: ", ")
            let targetRows: [[Cell]] = try await postgres.read { db in
                try await db.rows("SELECT \(select) FROM \(table)").map { row in
                    try columns.map { try pgCell(row, $0, type: pgTypes[table]?[$0] ?? "text") }
                }
            }
            reports.append(TableReport(table: table, sourceRows: rows.count, targetRows: targetRows.count,
                                       sourceChecksum: checksum(table, rows), targetChecksum: checksum(table, targetRows)))
        }
        return reports
    }

    static func cell(_ value: DatabaseValue, as type: String) -> Cell {
        switch value.storage {
        case .null: return .null
        case .int64(let v): return type == "boolean" ? .bool(v != 0) : type == "double precision" ? .double(Double(v)) : .int(v)
        case .double(let v): return .double(v)
        case .string(let v): return .text(v)
        case .blob(let v): return .bytes(Array(v))
        }
    }

    static func pgCell(_ row: PGRow, _ column: String, type: String) throws -> Cell {
        switch type {
        case "boolean": return try row.decode(column, as: Bool?.self).map(Cell.bool) ?? .null
        case "bigint", "integer": return try row.optionalInt64(column).map(Cell.int) ?? .null
        case "double precision": return try row.optionalDouble(column).map(Cell.double) ?? .null
        case "bytea", "USER-DEFINED":
            guard row.cells[column].bytes != nil else { return .null }
            return .bytes(try row.bytes(column))
        default: return try row.optionalString(column).map(Cell.text) ?? .null
        }
    }

    static func argument(_ cell: Cell) -> any PGArgument {
        switch cell {
        case .null: return String?.none
        case .int(let v): return v
        case .double(let v): return v
        case .text(let v): return v
        case .bytes(let v): return PGBytes(bytes: v)
        case .bool(let v): return v
        }
    }

    /// FNV-1a (64 bit) over the table's rows, sorted, so row order does not matter.
    static func checksum(_ table: String, _ rows: [[Cell]]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for line in [table] + rows.map({ $0.map(\.normalised).joined(separator: "\u{1f}") }).sorted() {
            for byte in line.utf8 + [0x1e] {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
        }
        return String(format: "%016llx", hash)
    }
}

