import DBeaconCore
import Foundation
package import Logging

/// Copies a SpatiaLite deployment into an empty PostGIS database, table by table and value
/// by value (ids, sequence numbers, token hashes, timestamps, perimeters as WKB, the outbox
/// with its attempts), streamed in pages of multi-row INSERTs within one PostgreSQL
/// transaction, then compares both sides: per table the row count and a checksum of the rows
/// (normalised values, order-independent).
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
        "tag_follows", "promotion_saves", "promotion_ratings", "promotion_feedback", "devices", "phone_states", "retired_users",
    ]

    /// A normalised cell: the same value on both sides for the same stored value.
    enum Cell: Sendable {
        case null, int(Int64), double(Double), text(String), bytes([UInt8]), bool(Bool)

        /// Feeds the cell to an FNV-1a hash: a type tag, then its bytes (a boolean as the
        /// integer 0 or 1, as SQLite stores it).
        func hash(into h: inout UInt64) {
            func byte(_ b: UInt8) {
                h ^= UInt64(b)
                h = h &* 0x100_0000_01b3
            }
            func word(_ w: UInt64) { for i in 0..<8 { byte(UInt8(truncatingIfNeeded: w >> (8 * UInt64(i)))) } }
            switch self {
            case .null: byte(0)
            case .int(let v): byte(1); word(UInt64(bitPattern: v))
            case .bool(let v): byte(1); word(v ? 1 : 0)
            case .double(let v): byte(2); word(v.bitPattern)
            case .text(let v): byte(3); word(UInt64(v.utf8.count)); for b in v.utf8 { byte(b) }
            case .bytes(let v): byte(4); word(UInt64(v.count)); for b in v { byte(b) }
            }
        }
    }

    /// Copies `source` (a SpatiaLite file) into `target` (a `postgres://` URL) and reports.
    /// `pageValues` bounds the values per page (and per INSERT statement).
    package static func copy(from source: String, to target: String, logger: Logger,
                             pageValues: Int = 20_000) async throws -> [TableReport] {
        guard FileManager.default.fileExists(atPath: source) else { throw DBeaconError.notFound("database file \(source)") }
        let sqlite = try SpatiaLiteStore(path: source)
        let postgres = try await PostgresStore.connect(url: target, listen: false, logger: logger)
        do {
            // A migration is bulk work, bounded as such (not by a request's deadline).
            let reports = try await DatabaseDeadline.$bulk.withValue(.bulkWork) { try await copy(sqlite, postgres, pageValues: pageValues) }
            await postgres.shutdown()
            return reports
        } catch {
            await postgres.shutdown()
            throw error
        }
    }

    private static func copy(_ sqlite: SpatiaLiteStore, _ postgres: PostgresStore, pageValues: Int) async throws -> [TableReport] {
        let pgTypes = try await postgres.read { db in
            var types: [String: [String: String]] = [:]
            for row in try await db.rows("""
                SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema()
                """) {
                types[try row.string("table_name"), default: [:]][try row.string("column_name")] = try row.string("data_type")
            }
            return types
        }
        // One SQLite snapshot streamed into one PostgreSQL transaction, a page at a time (pages
        // of ~20,000 values, each one multi-row INSERT), so memory stays flat whatever the size.
        let copied: [TableCopy] = try await sqlite.read { source in
            let present = Set(try await source.rows("SELECT name FROM sqlite_master WHERE type = 'table'").map { try $0.string("name") })
            return try await postgres.write { db, _ in
                guard try await !db.exists("SELECT 1 FROM users"), try await !db.exists("SELECT 1 FROM beacons") else {
                    throw DBeaconError.conflict("the target database is not empty; migrate into a new database or schema",
                                                code: "target_not_empty")
                }
                try await db.rows("DELETE FROM settings")
                var copied: [TableCopy] = []
                for table in tables where present.contains(table) {
                    guard let types = pgTypes[table] else { continue }
                    let columns = try await source.rows("PRAGMA table_info(\(table))").map { try $0.string("name") }.filter { types[$0] != nil }
                    let select = columns.map { $0 == "area" ? "AsBinary(area) AS area" : "\"\($0)\"" }.joined(separator: ", ")
                    var copy = TableCopy(table: table, columns: columns)
                    try await source.forEachBatch("SELECT \(select) FROM \(table)", batch: pageRows(columns.count, pageValues)) { rows in
                        let cells = try rows.map { row in try columns.map { cell(try row[$0], as: types[$0] ?? "text") } }
                        for row in cells { copy.checksum.add(row) }
                        try await insert(cells, into: table, columns: columns, db: db)
                    }
                    if columns.contains("seq") && copy.checksum.rows > 0 {
                        try await db.rows("SELECT setval(pg_get_serial_sequence('\(table)', 'seq'), (SELECT max(seq) FROM \(table)))")
                    }
                    copied.append(copy)
                }
                return copied
            }
        }
        // Compare what is now on both sides, streaming the target too.
        var reports: [TableReport] = []
        for copy in copied {
            let select = copy.columns.map { $0 == "area" ? "ST_AsBinary(area, 'NDR') AS area" : "\"\($0)\"" }.joined(separator: ", ")
            let target: RowSetChecksum = try await postgres.read { db in
                var checksum = RowSetChecksum(table: copy.table)
                try await db.forEachBatch("SELECT \(select) FROM \(copy.table)", batch: pageRows(copy.columns.count, pageValues)) { rows in
                    for row in rows {
                        checksum.add(try copy.columns.map { cell(try row[$0], as: pgTypes[copy.table]?[$0] ?? "text") })
                    }
                }
                return checksum
            }
            reports.append(TableReport(table: copy.table, sourceRows: copy.checksum.rows, targetRows: target.rows,
                                       sourceChecksum: copy.checksum.hex, targetChecksum: target.hex))
        }
        return reports
    }

    /// What was copied of one table: its columns and the checksum of the rows read.
    struct TableCopy: Sendable {
        let table: String
        let columns: [String]
        var checksum: RowSetChecksum

        init(table: String, columns: [String]) {
            self.table = table
            self.columns = columns
            checksum = RowSetChecksum(table: table)
        }
    }

    /// Rows per page of about `values` values (PostgreSQL allows 65,535 parameters per statement).
    static func pageRows(_ columns: Int, _ values: Int) -> Int { max(1, min(values, 60_000) / max(columns, 1)) }

    /// One multi-row INSERT.
    static func insert(_ rows: [[Cell]], into table: String, columns: [String], db: any SQLSession) async throws {
        guard !rows.isEmpty else { return }
        var statement = SQLStatement()
        let values = rows.map { row in
            "(" + zip(columns, row).map { column, value in
                let mark = statement.bind(argument(value))
                return column == "area" ? "ST_GeomFromWKB(\(mark), 4326)" : mark
            }.joined(separator: ", ") + ")"
        }
        let names = columns.map { "\"\($0)\"" }.joined(separator: ", ")
        try await db.rows("INSERT INTO \(table) (\(names)) VALUES \(values.joined(separator: ", "))", statement.arguments)
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

    /// An order-independent checksum of a table's rows, computed as they stream by: the
    /// wrapping sum of each row's FNV-1a (64 bit) hash of its normalised cells, with the count.
    struct RowSetChecksum: Sendable {
        private(set) var rows = 0
        private var sum: UInt64 = 0
        private let seed: UInt64

        init(table: String) {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            Cell.text(table).hash(into: &h)
            seed = h
        }

        mutating func add(_ row: [Cell]) {
            rows += 1
            var h = seed
            for cell in row { cell.hash(into: &h) }
            sum = sum &+ h
        }

        var hex: String { String(format: "%016llx", sum) }
    }
}

