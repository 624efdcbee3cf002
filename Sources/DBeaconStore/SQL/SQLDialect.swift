/// The few places where SpatiaLite and PostGIS SQL differ. Everything else in the stores is
/// written once.
package enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// `column IN (the elements of the array bound at param)`.
    ///
    /// On PostgreSQL a semi-join over `unnest`, not `column = ANY(param)`: a prepared statement
    /// runs a generic plan, which takes the array for ten elements and, on a small table (a
    /// thousand users), scans it comparing every row with every element (60,000 text comparisons
    /// for a batch of sixty users, 0.9 ms; the semi-join hashes the elements or probes the
    /// index once per element, 0.14 ms). The answers are the same, empty and NULL elements
    /// included.
    package func contains(_ column: String, _ param: String) -> String {
        switch self {
        case .sqlite: "\(column) IN (SELECT value FROM json_each(\(param)))"
        case .postgres: "\(column) IN (SELECT unnest(\(param)))"
        }
    }

    /// `values` bound as one array to a `$n` of several statements: SQLite receives arrays as
    /// JSON text, encoded here once rather than at each binding (a load binds 20,000 ids to
    /// three statements per block).
    package func boundList(_ values: [String]) -> SQLValue {
        switch self {
        case .sqlite: .text(SQLValue.textArray(values).jsonArray ?? "[]")
        case .postgres: .textArray(values)
        }
    }

    /// A FROM item `alias(value, position)` over the array bound at `param` (0-based positions).
    /// `type` is the PostgreSQL element type (`text`, `bigint`).
    package func elements(_ param: String, type: String = "text", as alias: String) -> String {
        switch self {
        case .sqlite: "(SELECT value, key AS position FROM json_each(\(param))) AS \(alias)"
        case .postgres: "(SELECT value, n - 1 AS position FROM unnest(\(param)::\(type)[]) WITH ORDINALITY AS u(value, n)) AS \(alias)"
        }
    }

    /// `text` with its ASCII letters in lower case (and nothing else changed), the same on both.
    package func asciiLower(_ text: String) -> String {
        switch self {
        case .sqlite: "lower(\(text))"
        case .postgres: "lower(\(text) COLLATE \"C\")"
        }
    }

    /// Whether the text `column` contains the text `param` anywhere (a scan: for rare work only).
    package func containsText(_ column: String, _ param: String) -> String {
        switch self {
        case .sqlite: "instr(\(column), \(param)) > 0"
        case .postgres: "strpos(\(column), CAST(\(param) AS TEXT)) > 0"
        }
    }

    /// A FROM item `alias(value)` over the elements of a JSON array of strings stored in `column`.
    package func jsonStrings(_ column: String, as alias: String) -> String {
        switch self {
        case .sqlite: "json_each(\(column)) AS \(alias)"
        case .postgres: "jsonb_array_elements_text(\(column)::jsonb) AS \(alias)(value)"
        }
    }

    /// A geometry (SRID 4326) from the WKB bound at `param`.
    package func geometry(fromWKB param: String) -> String {
        switch self {
        case .sqlite: "GeomFromWKB(\(param), 4326)"
        case .postgres: "ST_GeomFromWKB(\(param), 4326)"
        }
    }

    /// The little-endian WKB of a geometry column.
    /// A geometry column as the store reads it back: SpatiaLite's blob as stored (decoded by
    /// `WKB.decodeSpatiaLitePolygons`), PostGIS's as WKB.
    package func storedGeometry(_ column: String) -> String {
        switch self {
        case .sqlite: column
        case .postgres: wkb(column)
        }
    }

    package func wkb(_ column: String) -> String {
        switch self {
        case .sqlite: "AsBinary(\(column))"
        case .postgres: "ST_AsBinary(\(column), 'NDR')"
        }
    }

    /// A point (SRID 4326).
    package func point(lon: String, lat: String) -> String {
        switch self {
        case .sqlite: "MakePoint(\(lon), \(lat), 4326)"
        case .postgres: "ST_SetSRID(ST_MakePoint(\(lon), \(lat)), 4326)"
        }
    }

    /// Rows of `beacons b` whose `area` box contains the point: the spatial index.
    /// Keeps the beacons `b` whose perimeter's box meets the box of the four bound values (the
    /// spatial index: SpatiaLite's R*Tree, PostGIS's GiST).
    package func areaBoxMeets(west: String, south: String, east: String, north: String) -> String {
        switch self {
        case .sqlite:
            """
            b.seq IN (SELECT pkid FROM idx_beacons_area WHERE xmin <= \(east) AND xmax >= \(west) AND ymin <= \(north) AND ymax >= \(south))
            """
        case .postgres: "b.area && ST_MakeEnvelope(\(west), \(south), \(east), \(north), 4326)"
        }
    }

    package func areaBoxContains(lon: String, lat: String) -> String {
        switch self {
        case .sqlite:
            """
            b.seq IN (SELECT pkid FROM idx_beacons_area WHERE xmin <= \(lon) AND xmax >= \(lon) AND ymin <= \(lat) AND ymax >= \(lat))
            """
        case .postgres: "b.area && \(point(lon: lon, lat: lat))"
        }
    }

    /// Locks the selected rows until the transaction ends. SQLite needs none: a write
    /// transaction holds the whole database.
    package var forUpdate: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE"
        }
    }

    /// Locks the rows of `table` a queue query selects, skipping rows another transaction
    /// holds (outbox claims by several processes). SQLite: nothing to skip.
    package func lockSkippingLocked(_ table: String) -> String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE OF \(table) SKIP LOCKED"
        }
    }

    /// A query of the delivery claimants that are still alive (PostGIS: listener sessions,
    /// `pid@start`). SQLite claims have no claimant: none is alive after a restart.
    package var liveClaimants: String {
        switch self {
        case .sqlite: "SELECT NULL WHERE 0"
        case .postgres:
            """
            SELECT pid || '@' || CAST(floor(extract(epoch FROM backend_start) * 1000000) AS BIGINT) FROM pg_stat_activity
            WHERE backend_start IS NOT NULL
            """
        }
    }

    /// Locks the selected rows against changes until the transaction ends (SQLite: the write
    /// transaction already holds the database).
    package var forShare: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR SHARE"
        }
    }

    /// A statement that serialises transactions taking the same key (the text bound at
    /// `param`) until they end; nil where writes are serial anyway (SQLite).
    package func transactionLock(_ param: String) -> String? {
        switch self {
        case .sqlite: nil
        case .postgres: "SELECT pg_advisory_xact_lock(hashtext(\(param)))"
        }
    }

    /// Keeps the selected rows from being deleted (or their key changed) until the transaction ends.
    package var forKeyShare: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR KEY SHARE"
        }
    }
}
