public import ArgumentParser
import DBeaconApp
import DBeaconHTTP
import Foundation
import Hummingbird
public import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the DBeacon HTTP server.",
        discussion: """
            Opens (or creates) the SpatiaLite database and serves the JSON API under /v1, plus /healthz,
            /metrics, /openapi.yaml and the map console at / (open http://127.0.0.1:8080/ in a browser and sign
            in with a token; it needs Debian's libjs-leaflet). On first start without --admin-token or $DBEACON_ADMIN_TOKEN an admin
            token is generated and printed once. SIGINT/SIGTERM shut down gracefully.
            Example: dbeacon serve --samples samples
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Option(help: """
        Database file (default: $DBEACON_DB, else ./data/dbeacon.sqlite; created if missing), or a PostgreSQL + PostGIS \
        database: postgres://user[:password]@host[:port]/dbname[?schema=NAME].
        """) var db: String?
    @Option(name: .customLong("admin-token"), help: "Admin token (default: $DBEACON_ADMIN_TOKEN; generated on first start if neither).")
    var adminToken: String?
    @Option(help: "Load the sample data set from this folder into an empty database.") var samples: String?
    @Flag(name: .customLong("allow-private-webhooks"), help: "Allow webhook URLs on loopback/private networks (tests, on-premises).")
    var allowPrivateWebhooks = false
    @Option(name: .customLong("webhook-retry-schedule"), help: "Seconds after the first attempt for each delivery attempt.")
    var webhookRetrySchedule = "0,5,300,1800,7200,18000,36000,36000"
    @Option(help: "Coverage engine: memory (in-memory spatial index, the default) or sql (SpatiaLite R*Tree + ST_Covers, the reference path).")
    var engine: AppConfig.Engine = .memory
    @Option(name: .customLong("index-snapshot"), help: ArgumentHelp(
        "Folder of the in-memory index's snapshot (default: the database file's path + .index; none: no snapshot).",
        discussion: "Written after a load from the database, every --index-snapshot-interval seconds when beacons changed, and at shutdown; a restart maps it instead of reading every beacon when the database has not changed since. Not used with PostgreSQL."))
    var indexSnapshot: String?
    @Option(name: .customLong("index-snapshot-interval"), help: "Seconds between snapshots of the in-memory index while beacons change.")
    var indexSnapshotInterval = 600.0
    @Option(name: .customLong("perimeter-text"), help: ArgumentHelp(
        "How the in-memory index keeps large perimeters' GeoJSON next to their coordinates: hinted or formatted.",
        discussion: "hinted (the default): one byte per coordinate, from which answers format the text; the index folder stays near the database's size. formatted: the text itself, which answers copy (faster for answers with large perimeters, about 2.3 times the coordinates on disk and in the page cache). Perimeters keep the form they were written in until the next compacting snapshot."))
    var perimeterText = "hinted"
    @Option(name: .customLong("dwell-seconds"), help: "Time inside a beacon before beacon.dwelled.") var dwellSeconds = 300.0
    @Option(name: .customLong("exit-cushion-m"), help: "Distance outside a perimeter before beacon.exited (at least the fix accuracy).")
    var exitCushionM = 25.0
    @Option(name: .customLong("db-timeout"),
            help: "Seconds a request waits for the database before it is answered 503 database_unavailable with Retry-After.")
    var dbTimeout = 5.0
    @Option(name: .customLong("max-fix-age"),
            help: "Seconds in the past a location fix, sighting or region crossing may be stamped (older ones are refused).")
    var maxFixAge = 600.0
    @Option(name: .customLong("metrics-token"),
            help: "A token that may read /metrics besides the admin token (default $DBEACON_METRICS_TOKEN; /metrics needs one of them).")
    var metricsToken: String?
    @Option(name: .customLong("also-visited-min-visitors"),
            help: "Visitors (not the owner, with accounts older than their visits) two beacons must share before visits suggest one as also_visited of the other.")
    var alsoVisitedMinVisitors = 5
    @Option(name: .customLong("group-stale-seconds"), help: "A group member without a fix for this long is flagged stale.")
    var groupStaleSeconds = 300.0
    @Option(name: .customLong("promotion-picks-per-hour"), help: "Frequency cap of promotion picks per user and hour.")
    var promotionPicksPerHour = 3
    @Option(name: .customLong("meeting-reminder-minutes"),
            help: "Send meeting.starting to invitees and attendees this long before a meeting starts (0: no reminders).")
    var meetingReminderMinutes = 15.0
    @Option(name: .customLong("event-retention-days"), help: "Delete delivered events older than this (0 keeps them).")
    var eventRetentionDays = 30.0
    @Option(name: .customLong("max-vertices"), help: "Largest number of vertices in one perimeter.") var maxVertices = 10_000
    @Option(name: .customLong("sighting-exit-seconds"), help: "Time without sightings of a physical beacon before beacon.exited.")
    var sightingExitSeconds = 30.0
    @Option(name: .customLong("path-loss-exponent"), help: "Path loss exponent n for distances from RSSI (2 = free space).")
    var pathLossExponent = 2.0
    @Option(name: .customLong("header-timeout"), help: "Seconds a connection may take to send a request head (and stay idle between requests).")
    var headerTimeout = 10.0
    @Option(name: .customLong("body-timeout"), help: "Seconds a request body may take to arrive once its head did.")
    var bodyTimeout = 30.0
    @Option(name: .customLong("max-connections"), help: "Open connections at most (also kept under the descriptor limit).")
    var maxConnections = 10_000
    @Option(name: .customLong("max-connections-per-client"), help: "Open connections per client address (0: no limit).")
    var maxConnectionsPerClient = 256
    @Option(name: .customLong("write-rate"), help: "Writes per second per token, bursts of 5 s worth (0: no limit).")
    var writeRate = 20.0
    @Option(name: .customLong("location-rate"), help: "Location reports (fixes, sightings) per second per token (0: no limit).")
    var locationRate = 20.0
    @Option(name: .customLong("fixes-per-minute"), help: "Location fixes per user and minute; a batch counts each fix (0: no limit).")
    var fixesPerMinute = 1_200.0
    @Option(name: .customLong("auth-failure-rate"), help: "Requests with a bad or missing token per second per client address (0: no limit).")
    var authFailureRate = 2.0
    @Option(name: .customLong("max-beacons-per-user"), help: "Beacons one user may own (0: no limit).")
    var maxBeaconsPerUser = 10_000
    @Option(name: .customLong("map-tiles"), help: """
        The map console's background: a tile URL template with {z}, {x}, {y} (and optionally {s}), or none \
        (offline: no background).
        """)
    var mapTiles = ConsoleConfig.openStreetMap
    @Option(name: .customLong("map-attribution"), help: "The attribution shown for --map-tiles.")
    var mapAttribution = "© OpenStreetMap contributors"
    @Option(name: .customLong("leaflet-dir"), help: "Where Leaflet's files are (Debian's libjs-leaflet).")
    var leafletDir = "/usr/share/javascript/leaflet"
    @Flag(name: .customLong("no-console"), help: "Do not serve the map console at /.") var noConsole = false
    @Option(name: .customLong("executor"), help: ArgumentHelp(
        "Where Swift tasks run: event-loops or cooperative.",
        discussion: "event-loops (the default): on the event loops that serve the connections, as jobs of Swift's generic executor (no thread switch between a request's I/O and its handler: about a quarter more nearby answers without perimeters at 1M beacons than on the cooperative pool, and a lower p99). cooperative: on Swift's own thread pool."))
    var executor = "event-loops"
    @Option(name: .customLong("log-level"), help: "Log level.") var logLevel: Logger.Level = .info
    @Flag(name: .customLong("log-json"), help: "Write logs as one JSON object per line.") var logJSON = false
    @Flag(name: .customLong("exit-with-parent"), help: ArgumentHelp(
        "Stop (as on SIGTERM) when the process that started this one ends (benchmarks, test harnesses).", visibility: .hidden))
    var exitWithParent = false

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be between 1 and 65535") }
        guard ["hinted", "formatted"].contains(perimeterText) else { throw ValidationError("--perimeter-text must be hinted or formatted") }
        guard ["event-loops", "cooperative"].contains(executor) else { throw ValidationError("--executor must be event-loops or cooperative") }
        guard indexSnapshotInterval > 0, indexSnapshotInterval.isFinite else {
            throw ValidationError("--index-snapshot-interval must be a positive number of seconds")
        }
        if indexSnapshot?.isEmpty == true { throw ValidationError("--index-snapshot needs a folder (or none)") }
        guard maxVertices >= 4 else { throw ValidationError("--max-vertices must be at least 4") }
        guard groupStaleSeconds > 0, promotionPicksPerHour >= 1 else {
            throw ValidationError("--group-stale-seconds must be positive and --promotion-picks-per-hour at least 1")
        }
        guard meetingReminderMinutes >= 0, meetingReminderMinutes.isFinite else {
            throw ValidationError("--meeting-reminder-minutes must not be negative")
        }
        guard dwellSeconds >= 0, exitCushionM >= 0, eventRetentionDays >= 0 else {
            throw ValidationError("--dwell-seconds, --exit-cushion-m and --event-retention-days must not be negative")
        }
        guard dbTimeout >= 0.5, dbTimeout <= 600 else { throw ValidationError("--db-timeout must be between 0.5 and 600 seconds") }
        guard maxFixAge > 0, maxFixAge.isFinite else { throw ValidationError("--max-fix-age must be a positive number of seconds") }
        guard alsoVisitedMinVisitors >= 2 else { throw ValidationError("--also-visited-min-visitors must be at least 2") }
        if metricsToken?.isEmpty == true { throw ValidationError("--metrics-token must not be empty") }
        if db?.isEmpty == true { throw ValidationError("--db must name a database file or a postgres:// URL, not be empty") }
        guard sightingExitSeconds > 0, pathLossExponent > 0 else {
            throw ValidationError("--sighting-exit-seconds and --path-loss-exponent must be positive")
        }
        guard headerTimeout > 0, bodyTimeout > 0 else { throw ValidationError("--header-timeout and --body-timeout must be positive") }
        guard maxConnections >= 1, maxConnectionsPerClient >= 0, maxBeaconsPerUser >= 0 else {
            throw ValidationError("--max-connections must be at least 1; --max-connections-per-client and --max-beacons-per-user not negative")
        }
        guard [writeRate, locationRate, fixesPerMinute, authFailureRate].allSatisfy({ $0 >= 0 && $0.isFinite }) else {
            throw ValidationError("--write-rate, --location-rate, --fixes-per-minute and --auth-failure-rate must not be negative")
        }
        _ = try parseSchedule()
        if mapTiles != "none", let problem = ConsoleConfig.validateTiles(mapTiles) {
            throw ValidationError("--map-tiles \(problem)")
        }
    }

    func parseSchedule() throws -> [Double] {
        let values = webhookRetrySchedule.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ $0 != nil && $0! >= 0 && $0!.isFinite }) else {
            throw ValidationError("--webhook-retry-schedule must be comma-separated non-negative seconds, e.g. 0,5,300")
        }
        return values.map { $0! }
    }

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        if exitWithParent { ParentWatch.start() }
        // Before anything else starts tasks: from here on they run on the event loops the
        // server's connections use (long synchronous work goes through `offEventLoops`).
        let onEventLoops = executor == "event-loops" && EventLoopGlobalExecutor.install()
        var config = AppConfig()
        config.host = host
        config.port = port
        config.databasePath = db ?? env["DBEACON_DB"] ?? "./data/dbeacon.sqlite"
        config.adminToken = adminToken ?? env["DBEACON_ADMIN_TOKEN"]
        config.samplesDirectory = samples
        config.allowPrivateWebhooks = allowPrivateWebhooks
        config.webhookRetrySchedule = try parseSchedule()
        config.engine = engine
        config.indexSnapshots.mode = indexSnapshot == "none" ? .off : .readWrite
        config.indexSnapshots.directory = indexSnapshot == "none" ? nil : indexSnapshot
        config.indexSnapshots.intervalSeconds = indexSnapshotInterval
        config.indexSnapshots.hintedPerimeterText = perimeterText == "hinted"
        config.limits.maxVertices = maxVertices
        config.fences.dwellSeconds = dwellSeconds
        config.fences.exitCushionM = exitCushionM
        config.fences.sightingExitSeconds = sightingExitSeconds
        config.fences.maxFixAgeSeconds = maxFixAge
        config.databaseTimeoutSeconds = dbTimeout
        config.metricsToken = metricsToken ?? env["DBEACON_METRICS_TOKEN"]
        config.sightings.pathLoss.exponent = pathLossExponent
        config.eventRetentionDays = eventRetentionDays > 0 ? eventRetentionDays : nil
        config.services.groupStaleSeconds = groupStaleSeconds
        config.services.promotionPicksPerWindow = promotionPicksPerHour
        config.services.meetingReminderSeconds = meetingReminderMinutes * 60
        config.connections.headerTimeoutSeconds = headerTimeout
        config.connections.bodyTimeoutSeconds = bodyTimeout
        config.connections.maxConnections = maxConnections
        config.connections.maxConnectionsPerClient = maxConnectionsPerClient
        config.rateLimits.writesPerSecond = writeRate
        config.rateLimits.locationReportsPerSecond = locationRate
        config.rateLimits.fixesPerMinute = fixesPerMinute
        config.rateLimits.authFailuresPerSecond = authFailureRate
        config.maxBeaconsPerUser = maxBeaconsPerUser
        config.alsoVisitedMinVisitors = alsoVisitedMinVisitors
        config.console.enabled = !noConsole
        config.console.tiles = mapTiles == "none" ? nil : mapTiles
        config.console.attribution = mapAttribution
        config.console.leafletDirectory = leafletDir
        config.logLevel = logLevel
        let level = config.logLevel
        let json = logJSON
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = json ? JSONLogHandler(label: label) : TextLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "dbeacon")
        if executor == "event-loops" && !onEventLoops {
            logger.warning("Swift tasks could not be moved to the event loops: they run on the cooperative pool")
        }
        let services = try await AppServices.make(config, logger: logger)
        if let token = services.generatedAdminToken {
            print("Generated admin token (shown only this once; store it safely): \(token)")
        }
        try await buildApplication(services, logger: logger).runService()
        // Everything has stopped: the snapshot holds the last state for the next start.
        await services.writeIndexSnapshot()
    }
}

/// `StreamLogHandler` on standard output, its metadata formatted when a message is logged.
/// The stream handler formats its metadata on every change of it, and Hummingbird sets a
/// request id on each request's logger: 1.7 % of a server answering 13,000 nearby requests a
/// second, for lines mostly never written.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata: Logger.Metadata = [:]

    init(label: String) { stream = .standardOutput(label: label) }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var handler = stream
        handler.metadata = metadata
        handler.log(event: event)
    }
}

/// Structured logs: one JSON object per line with time, level, label, message and metadata.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: String] = [
            "time": ISO8601DateFormatter().string(from: Date()), "level": event.level.rawValue,
            "label": label, "message": event.message.description,
        ]
        for (k, v) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { object[k] = v.description }
        if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }
    }
}

extension AppConfig.Engine: ExpressibleByArgument {}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Ends this process when its parent ends (`--exit-with-parent`): a thread of its own looks at
/// the parent's pid four times a second and, once the process was handed to another parent
/// (the one that started it died, however), sends itself SIGTERM (a graceful stop), then exits
/// outright if that has not ended it within 10 s. (Not `PR_SET_PDEATHSIG`: it fires when the
/// *thread* that spawned the process exits, and a Swift parent spawns from a pooled thread that
/// may be retired at any time.)
enum ParentWatch {
    static func start() {
        let parent = getppid()
        guard parent > 1 else { return }
        let thread = Thread {
            while getppid() == parent { usleep(250_000) }
            kill(getpid(), SIGTERM)
            sleep(10)
            _exit(1)
        }
        thread.name = "dbeacon-parent-watch"
        thread.start()
    }
}

