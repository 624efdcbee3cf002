package import DBeaconCore
import DBeaconGeo
import Foundation
package import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// The scale-out store: the same model and guarantees as `SpatiaLiteStore`, on PostgreSQL +
/// PostGIS through postgres-nio. Several server processes may share one database:
///
/// * every write is one transaction; version checks lock the row (`FOR UPDATE`), so the
///   optimistic-concurrency guarantees hold across processes;
/// * the webhook outbox is claimed with `FOR UPDATE SKIP LOCKED`, so each delivery is sent by
///   exactly one process;
/// * each committed beacon change is announced with `NOTIFY` (payload: process, kind, beacon
///   id); every other process re-reads the beacon and reports it to `observeRemoteChanges`, so
///   its in-memory index stays in sync.
///
/// Selected by a `postgres://user[:password]@host[:port]/database[?schema=NAME&sslmode=…]`
/// URL. `schema` keeps all tables (and the notification channel) in one PostgreSQL schema, so
/// several independent deployments, or tests, can share a database.
package final class PostgresStore: SQLStore {
    let client: PostgresClient
    let logger: Logger
    /// The PostgreSQL schema holding the tables (nil: the user's default search path).
    package let schema: String?
    /// The NOTIFY channel for beacon changes of this schema.
    let channel: String
    /// Identifies this process in notifications (its own are ignored) and outbox claims.
    let node: NodeIdentity
    let observers: PostgresObservers
    /// Told of account changes: this node's after commit, other nodes' through NOTIFY.
    package var accountObservers: AccountObservers { observers.accounts }
    /// How long a transaction may wait for PostgreSQL (`--db-timeout`).
    let deadline: DatabaseDeadline
    /// The change feed's state, for readiness and metrics.
    package let feed: ChangeFeedHealth
    /// The statements run prepared (`PreparedStatements`; nil with `prepare=off` in the URL).
    let statements: PreparedStatements?
    private let runTask: Task<Void, Never>
    /// Fence decisions of this node, several per transaction.
    package let fenceBatcher: FenceDecisionBatcher? = FenceDecisionBatcher()
    /// The reads of every fix, one statement for the fixes reading at once.
    package let fixReads: FixReadCoalescers? = FixReadCoalescers()
    package var grouplessUsers: GrouplessUsers? { nil }
    package var eventTypeMarks: EventTypeMarks? { nil }
    private let listenTask: Task<Void, Never>?

    /// Connects, creates the schema and the PostGIS extension if needed, applies the
    /// migrations of `schema/postgis/`, and (with `listen`) starts following the changes made
    /// by other processes. `migrations` is for tests that build a database as an older
    /// release left it.
    package static func connect(url: String, listen: Bool = true, logger: Logger, deadline: DatabaseDeadline = .default,
                                migrations: [(String, String)] = PostGISSchema.migrations) async throws -> PostgresStore {
        let target = try PostgresURL(url)
        let store = PostgresStore(target: target, listen: listen, logger: logger, deadline: deadline)
        do {
            try await store.prepareDatabase(migrations: migrations)
            if listen { try await store.node.waitUntilReady() }
        } catch {
            await store.shutdown()
            throw Self.translate(error)
        }
        return store
    }

    private init(target: PostgresURL, listen: Bool, logger: Logger, deadline: DatabaseDeadline) {
        var config = PostgresClient.Configuration(host: target.host, port: target.port, username: target.user,
                                                  password: target.password, database: target.database, tls: target.tls)
        // The server side of the deadline: no statement, lock wait or idle transaction outlives
        // the time a request waits for it.
        let ms = Int(deadline.seconds * 1000)
        config.options.additionalStartupParameters = [
            ("statement_timeout", String(ms)), ("lock_timeout", String(max(100, ms / 2))),
            ("idle_in_transaction_session_timeout", String(2 * ms)),
            // Prepared statements are run with their arguments written as literals
            // (`PreparedStatements.literal`), which reads a backslash as itself only with this on.
            ("standard_conforming_strings", "on"),
        ]
        if let schema = target.schema {
            config.options.additionalStartupParameters.append(("search_path", "\"\(schema)\", public"))
        }
        config.options.maximumConnections = 16
        // A dead server is noticed within the deadline, and a connection is tried again at once
        // when it comes back (the pool's back-off would keep writes failing for seconds).
        config.options.connectTimeout = .milliseconds(Int64(min(ms, 3000)))
        config.options.keepAliveBehavior = .init(frequency: .seconds(10), query: "SELECT 1")
        let client = PostgresClient(configuration: config, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        self.schema = target.schema
        self.channel = "dbeacon_changes" + (target.schema.map { "_" + $0 } ?? "")
        self.node = NodeIdentity()
        self.observers = PostgresObservers()
        self.deadline = deadline
        self.feed = ChangeFeedHealth(listening: listen)
        self.statements = target.prepares ? PreparedStatements() : nil
        // The pool must run for the store to be usable at all (migrations, the samples loaded
        // before the service group starts), so it lives exactly as long as the store. Started
        // immediately: `run()` marks the pool running before it first suspends, so the first
        // lease (the migrations, right after) finds it running (else PostgresNIO warns).
        self.runTask = Task.immediate { await client.run() }
        if listen {
            let channel = channel, node = node, observers = observers, feed = feed
            listenTask = Task {
                await PostgresStore.listen(target: target, channel: channel, node: node, observers: observers,
                                           client: client, feed: feed, deadline: deadline, logger: logger)
            }
        } else {
            listenTask = nil
            node.markReady(claimant: nil)
        }
    }

    /// Stops listening and closes the connections.
    package func shutdown() async {
        listenTask?.cancel()
        runTask.cancel()
        await listenTask?.value
        await runTask.value
    }

    deinit {
        listenTask?.cancel()
        runTask.cancel()
    }

    package var dialect: SQLDialect { .postgres }
    package var deliveryClaimant: String? { node.claimant }

    /// Registers the function that receives every beacon change committed by this process.
    package func observeChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        observers.local.set(observer)
    }

    /// Registers the function called after commits (to wake the webhook deliverer).
    package func observeCommits(_ waker: @escaping @Sendable () -> Void) {
        observers.local.setOutboxWaker(waker)
    }

    /// Registers the function called after commits that appended events: this node's, and
    /// other nodes' through NOTIFY.
    package func observeEventCommits(_ waker: @escaping @Sendable () -> Void) {
        observers.events.value = waker
    }

    /// Registers the function that receives beacon changes committed by other processes.
    package func observeRemoteChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        observers.remote.set(observer)
    }

    /// Registers the function awaited when the listener reconnected (remote changes may be lost).
    package func observeResyncNeeded(_ handler: @escaping @Sendable () async throws -> Void) {
        observers.resync.value = handler
    }

    /// The names of the applied migrations, in the order they were applied.
    package func appliedMigrations() async throws -> [String] {
        try await read { db in
            try await db.rows("SELECT name FROM dbeacon_migrations ORDER BY applied_at, CAST(substr(name, 2) AS INTEGER)").map { try $0.string("name") }
        }
    }

    /// The PostGIS library version (`postgis_lib_version()`), e.g. `3.3.2`.
    package func postgisVersion() async throws -> String {
        try await read { db in try await db.row("SELECT postgis_lib_version() AS v")?.string("v") ?? "" }
    }

    // MARK: Schema

    /// Applies, in list order, each migration not yet recorded in `dbeacon_migrations`: a
    /// migration added later with a lower number (v3 after v4) still reaches older databases.
    private func prepareDatabase(migrations: [(String, String)]) async throws {
        try await client.withConnection { connection in
            let tx = PostgresSession(connection: connection, logger: logger)
            if let schema {
                _ = try await tx.rows("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"")
            }
            // Needs the privilege to create extensions the first time only.
            let hasPostGIS = try await tx.rows("SELECT 1 FROM pg_extension WHERE extname = 'postgis'")
            if hasPostGIS.isEmpty {
                _ = try await tx.rows("CREATE EXTENSION IF NOT EXISTS postgis SCHEMA public")
            }
            _ = try await tx.rows("BEGIN")
            do {
                // One migrating process at a time per schema.
                _ = try await tx.rows("SELECT pg_advisory_xact_lock(hashtext($1))", ["dbeacon_migrate_" + (schema ?? "")])
                _ = try await tx.rows("""
                    CREATE TABLE IF NOT EXISTS dbeacon_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """)
                let applied = Set(try await tx.rows("SELECT name FROM dbeacon_migrations").map { try $0.string("name") })
                for (name, sql) in migrations where !applied.contains(name) {
                    try await tx.simple(sql)
                    _ = try await tx.rows("INSERT INTO dbeacon_migrations(name) VALUES ($1)", [name])
                }
                _ = try await tx.rows("COMMIT")
            } catch {
                _ = try? await tx.rows("ROLLBACK")
                throw error
            }
        }
    }

    // MARK: Transactions

    /// Runs `body` in a write transaction (read committed; rows that decide are locked by the
    /// body), announces the beacon changes it made with NOTIFY inside that transaction, and
    /// reports them to the local observer after commit.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession, inout SQLWriteLog) async throws -> T) async throws -> T {
        let observers = observers, channel = channel, node = node
        let (result, changes, accounts, wroteEvents): (T, [BeaconChange], [UserID], Bool) = try await transaction("BEGIN") { plain in
            let deferred = DeferredEvents()
            var tx = plain
            tx.deferredEvents = deferred
            var log = SQLWriteLog()
            let result = try await body(tx, &log)
            try await Self.settleTouched(&log, db: tx)
            // The events last, under the lock that orders commits by seq (`DeferredEvents`).
            let events = deferred.take()
            try await Self.writeDeferredEvents(plain, events)
            // One round trip for all of the transaction's notices, in order (a bulk insert of
            // thousands of beacons used to pay one per beacon).
            let notices = log.changes.map { ChangeNotice($0, node: node.id).payload }
                + log.accountsChanged.map { ChangeNotice(account: $0, node: node.id).payload }
                + (events.isEmpty ? [] : [ChangeNotice(eventsBy: node.id).payload])
            if !notices.isEmpty {
                _ = try await tx.rows("SELECT pg_notify($1, n.payload) FROM unnest($2::text[]) WITH ORDINALITY AS n(payload, i) ORDER BY n.i",
                                      [channel, notices])
            }
            return (result, log.changes, log.accountsChanged, !events.isEmpty)
        }
        if let notify = observers.local.observer { for change in changes { notify(change) } }
        if !accounts.isEmpty { observers.accounts.notify(accounts) }
        observers.local.outboxWaker?()
        if wroteEvents { observers.events.value?() }
        return result
    }

    /// One read-only statement in autocommit: a single round trip (no BEGIN, no COMMIT), within
    /// the deadline like a transaction.
    package func readStatement(_ query: @Sendable (SQLDialect) -> (String, [any SQLArgument])) async throws -> [SQLRow] {
        let (sql, arguments) = query(.postgres)
        return try await session("a query") { db in try await db.rows(sql, arguments) }
    }

    /// Runs `body` in a read-only snapshot, so multi-query reads see one state.
    package func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        try await transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
    }

    private func transaction<T: Sendable>(_ begin: String, _ body: @escaping @Sendable (PostgresSession) async throws -> T) async throws -> T {
        let bulk = DatabaseDeadline.bulk
        return try await session("a transaction") { tx in
            _ = try await tx.rows(begin)
            if let bulk { _ = try await tx.rows("SET LOCAL statement_timeout = \(Int(bulk.seconds * 1000))") }
            do {
                let result = try await body(tx)
                _ = try await tx.rows("COMMIT")
                return result
            } catch {
                _ = try? await tx.rows("ROLLBACK")
                throw error
            }
        }
    }

    /// `body` on a pooled connection, answered within the deadline (the bulk one inside bulk
    /// work); PostgreSQL's errors translated.
    private func session<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresSession) async throws -> T) async throws -> T {
        let client = client, logger = logger, statements = statements
        do {
            return try await (DatabaseDeadline.bulk ?? deadline).run(what) { try await client.withConnection { connection in
                try await body(PostgresSession(connection: connection, logger: logger, statements: statements))
            } }
        } catch {
            throw Self.translate(error)
        }
    }

    package var changeFeedHealth: ChangeFeedHealth? { feed }

    /// Whether PostgreSQL answers `SELECT 1` within `deadline` (readiness).
    package func ping(within deadline: DatabaseDeadline) async -> Bool {
        let client = client, logger = logger
        return (try? await deadline.run("a ping") {
            try await client.withConnection { c in try await PostgresSession(connection: c, logger: logger).row("SELECT 1 AS one")?.int("one") }
        }) == 1
    }

    static func translate(_ error: any Error) -> any Error {
        if error is DBeaconError || error is CancellationError { return error }
        if let violation = error as? SQLConstraintViolation { return violation.conflict }
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                let message = error.serverInfo?[.message] ?? ""
                switch state {
                case "23505", "23503", "23514":
                    return DBeaconError.conflict("constraint violated: \(message)")
                case "40001", "40P01", "55P03":
                    return DBeaconError(.unavailable, code: "database_busy", message: "the database is busy, retry shortly")
                case "0A000" where message.contains("cached plan"):
                    // A prepared statement whose table changed its columns (a newer node migrated
                    // the schema); it is prepared anew on its next run (`PreparedStatements`).
                    return DBeaconError(.unavailable, code: "database_busy", message: "the database is busy, retry shortly")
                case "57014":  // statement_timeout: the server side of the deadline
                    return DBeaconError(.unavailable, code: "database_unavailable", message: "the database did not answer in time; retry shortly")
                case "53100":
                    return DBeaconError(.insufficientStorage, code: "insufficient_storage",
                                        message: "the database server's disk is full; nothing was written")
                case _ where state.hasPrefix("08") || state.hasPrefix("57P") || state == "53300":
                    // Connection failures, admin shutdown, crash recovery, too many connections.
                    return DBeaconError(.unavailable, code: "database_unavailable", message: "PostgreSQL is unavailable (\(state)); retry shortly")
                default:
                    return DBeaconError.internalError("database error", cause: "\(state): \(message)")
                }
            }
            return DBeaconError(.unavailable, code: "database_unavailable",
                                message: "cannot reach PostgreSQL: \(String(reflecting: error.code))")
        }
        return DBeaconError.internalError("database error", cause: "\(error)")
    }
}

/// The parts of a `postgres://` URL.
struct PostgresURL: Sendable {
    var host: String
    var port: Int
    var user: String
    var password: String?
    var database: String?
    var schema: String?
    var tls: PostgresClient.Configuration.TLS
    /// Whether statements run again and again are prepared (`prepare=off` turns it off).
    var prepares = true

    /// Whether `string` names a PostgreSQL database rather than a SpatiaLite file.
    static func matches(_ string: String) -> Bool {
        string.hasPrefix("postgres://") || string.hasPrefix("postgresql://")
    }

    init(_ string: String) throws {
        guard Self.matches(string), let components = URLComponents(string: string), let host = components.host, !host.isEmpty else {
            throw DBeaconError(.badRequest, code: "invalid_database_url",
                               message: "expected postgres://user[:password]@host[:port]/database[?schema=NAME]")
        }
        self.host = host
        port = components.port ?? 5432
        user = components.user.flatMap { $0.removingPercentEncoding } ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        password = components.password.flatMap { $0.removingPercentEncoding }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? nil : path
        var schema: String?
        var tls = PostgresClient.Configuration.TLS.disable
        for item in components.queryItems ?? [] {
            switch item.name {
            case "schema", "search_path":
                guard let value = item.value, !value.isEmpty,
                      value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }), value.count <= 40 else {
                    throw DBeaconError(.badRequest, code: "invalid_database_url", message: "schema must be 1-40 of [A-Za-z0-9_]")
                }
                schema = value.lowercased()
            case "prepare":
                switch item.value {
                case "on": prepares = true
                case "off": prepares = false
                default: throw DBeaconError(.badRequest, code: "invalid_database_url", message: "prepare must be on or off")
                }
            case "sslmode":
                switch item.value {
                case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
                case "prefer": tls = .prefer(.makeClientConfiguration())
                default: tls = .disable
                }
            default:
                break
            }
        }
        self.schema = schema
        self.tls = tls
    }
}

package extension PostgresStore {
    /// Whether a `--db` value names a PostgreSQL database (`postgres://…`).
    static func isURL(_ string: String) -> Bool { PostgresURL.matches(string) }
}
