package import DBeaconCore
import Foundation
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
        // Read everything first (one SQLite snapshot), then write in one PostgreSQL transaction.
        let data: [(table: String, columns: [String], rows: [[Cell]])] = try await sqlite.read { db in
            let present = Set(try await db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").map { try $0.string("name") })
            var data: [(table: String, columns: [String], rows: [[Cell]])] = []
            for table in tables where present.contains(table) {
                guard let types = pgTypes[table] else { continue }
                let columns = try await db.rows("PRAGMA table_info(\(table))").map { try $0.string("name") }.filter { types[$0] != nil }
                let select = columns.map { $0 == "area" ? "AsBinary(area) AS area" : "\"\($0)\"" }.joined(separator: ", ")
                let rows = try await db.rows("SELECT \(select) FROM \(table)").map { row in
                    try columns.map { column in cell(try row[column], as: types[column] ?? "text") }
                }
                data.append((table, columns, rows))
            }
            return data
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
                    var statement = SQLStatement()
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
                    try columns.map { cell(try row[$0], as: pgTypes[table]?[$0] ?? "text") }
                }
            }
            reports.append(TableReport(table: table, sourceRows: rows.count, targetRows: targetRows.count,
                                       sourceChecksum: checksum(table, rows), targetChecksum: checksum(table, targetRows)))
        }
        return reports
    }

    /// A value as the PostgreSQL column of `type` holds it.
    static func cell(_ value: SQLValue, as type: String) -> Cell {
        switch value {
        case .null: return .null
        case .integer(let v): return type == "boolean" ? .bool(v != 0) : type == "double precision" ? .double(Double(v)) : .int(v)
        case .real(let v): return .double(v)
        case .text(let v): return .text(v)
        case .blob(let v): return .bytes(v)
        case .bool(let v): return .bool(v)
        case .textArray, .integerArray: return .text(value.jsonArray ?? "")
        }
    }

    static func argument(_ cell: Cell) -> any SQLArgument {
        switch cell {
        case .null: return String?.none
        case .int(let v): return v
        case .double(let v): return v
        case .text(let v): return v
        case .bytes(let v): return SQLBlob(v)
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

