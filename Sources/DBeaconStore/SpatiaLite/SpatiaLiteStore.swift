package import DBeaconCore
import Foundation
import Synchronization

/// The embedded store: a SpatiaLite database file on the system SQLite.
///
/// One writer connection (a write transaction is `BEGIN IMMEDIATE`: it holds the database, so
/// decisions need no row locks) and a pool of reader connections, each read one snapshot (WAL
/// mode). Transactions run on `SQLiteExecutor`'s threads, off the tasks' threads (the cooperative pool or the event loops). `synchronous=FULL` by default: a committed write survives power loss. Other
/// processes may use the same file (the CLI with `--db` while the server runs): their
/// changes are found through the `beacon_changes` log (`pollRemoteChanges`).
package final class SpatiaLiteStore: SQLStore {
    private let writer: SQLiteConnection
    /// Checkpoints the writer's log off the commit path (see `WALCheckpointer`).
    private let checkpointer: WALCheckpointer
    private let writeLock = AsyncSemaphore(permits: 1)
    private let readers: Mutex<[SQLiteConnection]>
    private let readPermits: AsyncSemaphore
    /// Called after each commit that changed beacons, in commit order.
    private let changeObserver = ChangeObserverBox()
    /// Told after commits that appended events (`observeEventCommits`).
    let eventWaker = LockedFunction<@Sendable () -> Void>()
    /// Told of account changes: this process's after commit, other processes' when polled.
    package let accountObservers = AccountObservers()
    /// This instance's tag in `beacon_changes`: its own rows are skipped when polling.
    let writerID = UUID().uuidString
    /// Where polling of other processes' changes stands (used under the write lock only).
    let remoteCursor = RemoteChangeCursor()

    package static let readerCount = 4

    /// Opens (creating if needed) the database at `path` and migrates it. A commit that leaves
    /// `checkpointFrames` pages or more in the log asks for a checkpoint (see `WALCheckpointer`).
    package init(path: String, synchronousFull: Bool = true, checkpointFrames: Int32 = WALCheckpointer.defaultRequestFrames) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        writer = try SQLiteConnection(path: path, readOnly: false, synchronousFull: synchronousFull)
        try Self.migrate(writer)
        // The statement journals and temporary tables of the writer's transactions stay in memory
        // (after the migrations, whose index builds may sort large tables).
        try writer.execute("PRAGMA temp_store = MEMORY")
        try writer.execute("PRAGMA cache_size = -65536")
        checkpointer = try WALCheckpointer(path: path, synchronousFull: synchronousFull, requestFrames: checkpointFrames)
        writer.reportCommits(to: checkpointer)
        var readers: [SQLiteConnection] = []
        for _ in 0..<Self.readerCount {
            let reader = try SQLiteConnection(path: path, readOnly: false, synchronousFull: synchronousFull)
            try reader.execute("PRAGMA query_only = ON")
            readers.append(reader)
        }
        self.readers = Mutex(readers)
        readPermits = AsyncSemaphore(permits: readers.count)
        remoteCursor.dataVersion = try writer.rows("PRAGMA data_version", []).first?.int("data_version") ?? 0
        remoteCursor.lastSeq = try writer.rows("SELECT coalesce(max(seq), 0) AS seq FROM beacon_changes", []).first?.int64("seq") ?? 0
        eventTypeMarks?.raiseAll(to: try writer.rows(Self.latestPositionSQL, []).first?.int64("n") ?? 0)
        // An account changed (an erased user's id leaves memory with their rows).
        accountObservers.add { [grouplessUsers] user in
            if let user { grouplessUsers?.involved(user) } else { grouplessUsers?.forgetAll() }
        }
    }

    deinit {
        writer.reportCommits(to: nil)
        checkpointer.stop()
    }

    /// Background checkpoints of the log so far, and the last one's log and copied pages (tests).
    package var checkpoints: (runs: Int, logFrames: Int, copiedFrames: Int) {
        let s = checkpointer.statistics
        return (s.runs, s.logFrames, s.copiedFrames)
    }

    package var dialect: SQLDialect { .sqlite }
    /// Fence state is not shared (one process decides): no batch of locked decisions.
    package var fenceBatcher: FenceDecisionBatcher? { nil }
    package var fixReads: FixReadCoalescers? { nil }
    package let grouplessUsers: GrouplessUsers? = GrouplessUsers()
    package let eventTypeMarks: EventTypeMarks? = EventTypeMarks()
    package var deliveryClaimant: String? { nil }

    /// Registers the function that receives every committed beacon change.
    package func observeChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        changeObserver.set(observer)
    }

    /// Registers the function called after commits (to wake the webhook deliverer).
    package func observeCommits(_ waker: @escaping @Sendable () -> Void) {
        changeObserver.setOutboxWaker(waker)
    }

    /// Registers the function called after commits that appended events (this process's, and
    /// any of another connection: see `pollRemoteChanges`).
    package func observeEventCommits(_ waker: @escaping @Sendable () -> Void) {
        eventWaker.value = waker
    }

    // MARK: Transactions

    /// Runs `body` in a write transaction, logs its beacon changes for other processes, and
    /// after commit reports them to this process's observer (in commit order: the write lock
    /// is held until they are reported).
    package func write<T: Sendable>(_ body: @escaping @Sendable (any SQLSession, inout SQLWriteLog) async throws -> T) async throws -> T {
        do {
            return try await withTaskExecutorPreference(SQLiteExecutor.shared) {
                try await writeLock.withPermit { try await writeTransaction(body) }
            }
        } catch let error as SQLConstraintViolation {
            throw error.conflict
        }
    }

    private func writeTransaction<T: Sendable>(_ body: @Sendable (any SQLSession, inout SQLWriteLog) async throws -> T) async throws -> T {
        let before = writer.totalChanges
        try writer.execute("BEGIN IMMEDIATE")
        var log = SQLWriteLog()
        let events = EventMark()
        let result: T
        let eventsThrough: Int64?
        do {
            result = try await body(SQLiteSession(connection: writer, eventMark: events), &log)
            try await Self.settleTouched(&log, db: SQLiteSession(connection: writer))
            try logChanges(log, on: writer)
            eventsThrough = events.isSet ? try writer.rows(Self.latestPositionSQL, []).first?.int64("n") : nil
            try writer.execute("COMMIT")
        } catch {
            try? writer.execute("ROLLBACK")
            throw error
        }
        if let eventsThrough { eventTypeMarks?.raise(events.written, to: eventsThrough) }
        if let notify = changeObserver.observer { for change in log.changes { notify(change) } }
        if !log.accountsChanged.isEmpty { accountObservers.notify(log.accountsChanged) }
        if writer.totalChanges != before { changeObserver.outboxWaker?() }
        if events.isSet { eventWaker.value?() }
        return result
    }

    /// Runs `body` on a reader connection in one snapshot.
    package func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        do {
            return try await withTaskExecutorPreference(SQLiteExecutor.shared) { try await readTransaction(body) }
        } catch let error as SQLConstraintViolation {
            throw error.conflict
        }
    }

    private func readTransaction<T: Sendable>(_ body: @Sendable (any SQLSession) async throws -> T) async throws -> T {
        await readPermits.wait()
        let connection = readers.withLock { $0.removeLast() }
        defer {
            readers.withLock { $0.append(connection) }
            readPermits.signal()
        }
        try connection.execute("BEGIN")
        do {
            let result = try await body(SQLiteSession(connection: connection))
            try connection.execute("COMMIT")
            return result
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` on the writer connection outside any transaction, holding the write lock
    /// (remote change polling, which must see the latest commits of other processes).
    func withWriter<T>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(SQLiteExecutor.shared) {
            try await writeLock.withPermit { try await body(writer) }
        }
    }

    // MARK: Schema

    /// Initialises SpatiaLite's metadata (outside any transaction, as `InitSpatialMetaData`
    /// requires; with only the WGS84 reference systems: DBeacon stores SRID 4326 only, and the
    /// full EPSG table would add 6 MB to every database) and then applies, each in its own transaction, the append-only migrations of
    /// `schema/spatialite/` not yet recorded. (`grdb_migrations` is where the releases built
    /// on GRDB recorded them; files they created open unchanged.)
    static func migrate(_ db: SQLiteConnection) throws {
        if try db.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'spatial_ref_sys'", []).isEmpty {
            try db.execute("SELECT InitSpatialMetaData(1, 'WGS84')")
        }
        try db.execute("CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
        let applied = Set(try db.rows("SELECT identifier FROM grdb_migrations", []).map { try $0.string("identifier") })
        for (name, sql) in SpatiaLiteSchema.migrations where !applied.contains(name) {
            try db.execute("BEGIN IMMEDIATE")
            do {
                try db.execute(sql)
                _ = try db.rows("INSERT INTO grdb_migrations(identifier) VALUES ($1)", [name])
                try db.execute("COMMIT")
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The names of the applied migrations.
    package func appliedMigrations() async throws -> [String] {
        try await read { db in try await db.rows("SELECT identifier FROM grdb_migrations ORDER BY rowid").map { try $0.string("identifier") } }
    }

    /// The SpatiaLite library version (`spatialite_version()`), e.g. `5.0.1`.
    package func spatialiteVersion() async throws -> String {
        try await read { db in try await db.row("SELECT spatialite_version() AS v")?.string("v") ?? "" }
    }
}

/// Where `pollRemoteChanges` stands: the last `PRAGMA data_version` seen on the writer
/// connection and the last `beacon_changes` row applied. Touched under the write lock only.
final class RemoteChangeCursor: @unchecked Sendable {
    var dataVersion = 0
    var lastSeq: Int64 = 0
    var lastPrune = Timestamp(millis: 0)
    var observer: (@Sendable (BeaconChange) -> Void)?
    var fenceWrites: (@Sendable () -> Void)?
}
