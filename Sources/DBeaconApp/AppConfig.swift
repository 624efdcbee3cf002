package import DBeaconGeo
import Foundation
package import DBeaconServices
package import DBeaconHTTP
import DBeaconStore
package import Logging

/// Everything `dbeacon serve` can be told (CONTRACT.md, "Process").
package struct AppConfig: Sendable {
    /// Which implementation answers coverage queries.
    package enum Engine: String, Sendable, CaseIterable {
        /// The in-memory spatial index (hierarchical grid, prepared GEOS geometries, edge-indexed
        /// large polygons): the fast path and the default.
        case memory
        /// SpatiaLite R*Tree + ST_Covers: the reference path.
        case sql
    }

    package var host = "127.0.0.1"
    package var port = 8080
    package var databasePath = "./data/dbeacon.sqlite"
    package var adminToken: String?
    /// How long a request waits for the database before it is answered 503 (`--db-timeout`).
    package var databaseTimeoutSeconds = 5.0
    /// A token that may read `/metrics` besides the admin token (`--metrics-token`).
    package var metricsToken: String?
    package var samplesDirectory: String?
    package var allowPrivateWebhooks = false
    package var webhookRetrySchedule: [Double] = [0, 5, 300, 1800, 7200, 18000, 36000, 36000]
    package var engine: Engine = .memory
    package var maxBodyBytes = 1 << 20
    /// Bodies of `POST /v1/beacons/import` (a FeatureCollection in one transaction).
    package var maxImportBytes = 64 << 20
    package var limits = GeoLimits()
    package var logLevel: Logger.Level = .info
    /// `synchronous=FULL` (durable on power loss); only benchmarks of the cost turn it off.
    package var synchronousFull = true
    /// Dwell time, exit cushion and the other fence settings.
    package var fences = FenceConfig()
    /// Path loss, positioning and batch limits of sightings.
    package var sightings = SightingConfig()
    /// Delivered events older than this many days are deleted; nil keeps them.
    package var eventRetentionDays: Double? = 30
    /// Event streams: a comment line this often on an idle stream, and each stream ended after
    /// `eventStreamMaxSeconds` (the client reconnects and resumes with `Last-Event-ID`).
    package var eventStreamHeartbeatSeconds: Double = 15
    /// How long `/readyz` waits for the database (at most the database deadline).
    package var readinessTimeoutSeconds: Double = 2
    package var eventStreamMaxSeconds: Double = 60
    /// Group staleness and hysteresis, media gating, the promotion frequency cap.
    package var services = ServiceConfig()
    /// Whether to run the background services (deliverer, ticker); tests drive them by hand.
    package var runBackgroundServices = true
    /// On PostGIS: LISTEN for the writes of other server processes and keep the in-memory
    /// index in sync with them.
    package var followRemoteChanges = true
    /// Timeouts and caps on connections (slow or idle clients).
    package var connections = ConnectionLimits()
    /// Per-token and per-address request rates.
    package var rateLimits = RateLimits()
    /// Beacons one user may own (0: no limit).
    package var maxBeaconsPerUser = 10_000
    /// Visitors two beacons must share before one is offered as `also_visited` of the other.
    package var alsoVisitedMinVisitors = 5
    /// The map console served at `/`.
    package var console = ConsoleConfig()
    /// Snapshots of the in-memory index (SpatiaLite only; see `IndexSnapshotConfig`).
    package var indexSnapshots = IndexSnapshotConfig()

    package init() {}
}

/// Whether and where the in-memory index is kept as a snapshot file, so a restart maps it
/// instead of reading every beacon (`MemoryCoverageEngine.load(snapshotFrom:stamp:)`).
package struct IndexSnapshotConfig: Sendable {
    package enum Mode: String, Sendable, CaseIterable {
        /// Neither read nor written (tests, PostGIS).
        case off
        /// Read when current, never written (the CLI next to a running server).
        case read
        /// Read when current; written after a full load, every `intervalSeconds` when beacons
        /// changed, and at shutdown (the server).
        case readWrite = "read-write"
    }

    package var mode: Mode = .off
    /// The folder; nil: `<database file>.index` (no snapshots for a PostgreSQL database).
    package var directory: String?
    package var intervalSeconds = 600.0
    /// How large polygons' GeoJSON is kept next to their coordinates (`CoordinateFile.hintedText`):
    /// hinted (one byte per coordinate; answers format the text, the index on disk stays near the
    /// database's size) or formatted (the text itself; answers copy it, 2.3 times the bytes).
    package var hintedPerimeterText = true

    package init() {}

    /// The folder for a database, or nil when there is none.
    package func folder(for databasePath: String) -> String? {
        guard mode != .off, !StoreLocation.isPostgres(databasePath) else { return nil }
        return directory ?? databasePath + ".index"
    }
}
