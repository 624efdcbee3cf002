package import DBeaconCore
import DBeaconGeo
import Foundation
package import GRDB
import GRDBSQLite

/// The embedded store: a SpatiaLite database file accessed through GRDB on the system SQLite.
///
/// Every connection loads `mod_spatialite` and registers `dbeacon_circle_contains`, the same
/// geodesic circle test the in-memory index uses, so the SQL path answers identically.
/// WAL mode, `synchronous=FULL` (a committed write survives power loss), immediate write
/// transactions and a busy timeout.
package final class SpatiaLiteStore: BeaconStore {
    package let writer: any DatabaseWriter
    /// Called on the writer's queue after each commit that changed beacons, in commit order.
    private let changeObserver: ChangeObserverBox
    /// This instance's tag in `beacon_changes`: its own rows are skipped when polling.
    let writerID = UUID().uuidString
    /// Where polling of other processes' changes stands (used on the writer's queue only).
    let remoteCursor = RemoteChangeCursor()

    /// Opens (creating if needed) the database at `path` and migrates it.
    package init(path: String, synchronousFull: Bool = true) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.maximumReaderCount = 8
        config.prepareDatabase { db in
            try SpatiaLiteStore.prepareConnection(db, synchronousFull: synchronousFull)
        }
        writer = try DatabasePool(path: path, configuration: config)
        changeObserver = ChangeObserverBox()
        try SpatiaLiteStore.migrate(writer)
        try writer.writeWithoutTransaction { [remoteCursor] db in
            remoteCursor.dataVersion = try Int.fetchOne(db, sql: "PRAGMA data_version") ?? 0
            remoteCursor.lastSeq = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM beacon_changes") ?? 0
        }
    }

    /// Registers the function that receives every committed beacon change.
    package func observeChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        changeObserver.set(observer)
    }

    static func prepareConnection(_ db: Database, synchronousFull: Bool) throws {
        guard let connection = db.sqliteConnection else { throw DBeaconError.internalError("no SQLite connection") }
        sqlite3_enable_load_extension(connection, 1)
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_load_extension(connection, "mod_spatialite", nil, &message)
        sqlite3_enable_load_extension(connection, 0)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(message)
            throw DBeaconError(.unavailable, code: "spatialite_unavailable",
                               message: "cannot load mod_spatialite (install libsqlite3-mod-spatialite): \(text)")
        }
        try db.execute(sql: "PRAGMA synchronous = \(synchronousFull ? "FULL" : "NORMAL")")
        db.add(function: circleContainsFunction)
        db.add(function: eventIDFunction)
        db.add(function: eventMatchesFunction)
    }

    /// `dbeacon_event_id()` → a new `evt_…` id (for events fanned out in SQL).
    static let eventIDFunction = DatabaseFunction("dbeacon_event_id", argumentCount: 0, pure: false) { _ in
        EventID.generate().rawValue
    }

    /// `dbeacon_event_matches(filters_json, type)` → 1 when a webhook's filters select the type.
    static let eventMatchesFunction = DatabaseFunction("dbeacon_event_matches", argumentCount: 2, pure: true) { values in
        guard let filters = String.fromDatabaseValue(values[0]), let type = String.fromDatabaseValue(values[1]),
              let parsed = try? JSONParser.parse(filters), let list = parsed.arrayValue else { return 0 }
        let eventType = EventType(rawValue: type)
        return list.contains { $0.stringValue.map(eventType.matches(filter:)) ?? false } ? 1 : 0
    }

    /// `dbeacon_circle_contains(center_lat, center_lon, radius_m, lat, lon)` → 0/1.
    static let circleContainsFunction = DatabaseFunction("dbeacon_circle_contains", argumentCount: 5, pure: true) { values in
        guard let clat = Double.fromDatabaseValue(values[0]), let clon = Double.fromDatabaseValue(values[1]),
              let r = Double.fromDatabaseValue(values[2]), let lat = Double.fromDatabaseValue(values[3]),
              let lon = Double.fromDatabaseValue(values[4]) else { return 0 }
        return Geodesy.circleContains(center: Position(lon: clon, lat: clat), radiusM: r,
                                      point: Position(lon: lon, lat: lat)) ? 1 : 0
    }

    /// Runs `body` in a write transaction and reports the beacon changes it made after commit
    /// (to this process's observers, and to other processes through `beacon_changes`).
    func write<T: Sendable>(_ body: @escaping @Sendable (Database, inout [BeaconChange]) throws -> T) async throws -> T {
        let observer = changeObserver
        let writerID = writerID
        return try await translatingErrors {
            try await writer.write { db in
                var changes: [BeaconChange] = []
                let outboxBefore = db.totalChangesCount
                let result = try body(db, &changes)
                try Self.logChanges(db, changes, writer: writerID)
                let notify = observer.observer
                let wake = observer.outboxWaker
                let wroteAnything = db.totalChangesCount != outboxBefore
                if (!changes.isEmpty && notify != nil) || (wroteAnything && wake != nil) {
                    let committed = changes
                    db.afterNextTransaction { _ in
                        if let notify { for change in committed { notify(change) } }
                        wake?()
                    }
                }
                return result
            }
        }
    }

    /// Registers the function called after commits (to wake the webhook deliverer).
    package func observeCommits(_ waker: @escaping @Sendable () -> Void) {
        changeObserver.setOutboxWaker(waker)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await translatingErrors { try await writer.read(body) }
    }

    private func translatingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DBeaconError {
            throw error
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw DBeaconError.conflict("constraint violated: \(error.message ?? "")")
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
            throw DBeaconError(.unavailable, code: "database_busy", message: "the database is busy, retry shortly")
        } catch let error as DatabaseError {
            throw DBeaconError.internalError("database error", cause: "\(error.resultCode): \(error.message ?? "")")
        }
    }
}

/// Where `pollRemoteChanges` stands: the last `PRAGMA data_version` seen on the writer
/// connection and the last `beacon_changes` row applied. Touched on the writer's queue only.
final class RemoteChangeCursor: @unchecked Sendable {
    var dataVersion = 0
    var lastSeq: Int64 = 0
    var lastPrune = Timestamp(millis: 0)
    var observer: (@Sendable (BeaconChange) -> Void)?
    var fenceWrites: (@Sendable () -> Void)?
}

/// Holds the change observer; set once at start-up, read on the writer queue.
final class ChangeObserverBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _observer: (@Sendable (BeaconChange) -> Void)?

    var observer: (@Sendable (BeaconChange) -> Void)? {
        lock.lock()
        defer { lock.unlock() }
        return _observer
    }

    func set(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        lock.lock()
        _observer = observer
        lock.unlock()
    }

    private var _outboxWaker: (@Sendable () -> Void)?

    var outboxWaker: (@Sendable () -> Void)? {
        lock.lock()
        defer { lock.unlock() }
        return _outboxWaker
    }

    func setOutboxWaker(_ waker: @escaping @Sendable () -> Void) {
        lock.lock()
        _outboxWaker = waker
        lock.unlock()
    }
}
