package import DBeaconCore
import Foundation

/// Other processes on the same file (the CLI with `--db` while `serve` runs): every write
/// transaction logs its beacon changes in `beacon_changes` with this instance's `writerID`;
/// `pollRemoteChanges` notices other connections' commits through `PRAGMA data_version`
/// (which changes only for commits made by other connections) and reports their changes, read
/// from the store as they are now, to the observers, under the write lock: local commits and
/// remote changes reach the observers in one order, so an index never goes back to an older
/// state of a beacon.
extension SpatiaLiteStore: BeaconChangeFeed {
    /// Rows of the change log are kept this long (a poller reads them within a second).
    static let changeLogRetention = 600.0

    /// Logs the transaction's beacon changes (and fence writes) for other processes.
    func logChanges(_ log: SQLWriteLog, on db: SQLiteConnection) throws {
        guard !log.changes.isEmpty || log.fencesChanged || !log.accountsChanged.isEmpty else { return }
        let now = Timestamp.now().millis
        let insert = "INSERT INTO beacon_changes(beacon_id, kind, writer, created_at) VALUES ($1, $2, $3, $4)"
        for change in log.changes {
            switch change {
            case .upsert(let b): _ = try db.rows(insert, [b.id.rawValue, "upsert", writerID, now])
            case .delete(let id): _ = try db.rows(insert, [id.rawValue, "delete", writerID, now])
            case .move(let id, _): _ = try db.rows(insert, [id.rawValue, "move", writerID, now])
            }
        }
        if log.fencesChanged {
            _ = try db.rows(insert, [String?.none, "fences", writerID, now])
        }
        if !log.accountsChanged.isEmpty {
            // Whose account is not said: the log keeps no user id (a server clears its token cache).
            _ = try db.rows(insert, [String?.none, "accounts", writerID, now])
        }
        // The change counter of index snapshots counts transactions that changed beacons (not
        // fence writes: a fix does not make a snapshot stale).
        if !log.changes.isEmpty {
            _ = try db.rows("""
                INSERT INTO settings(key, value) VALUES ($1, '1')
                ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
                """, [Self.changeCounterSetting])
        }
    }

    package func observeRemoteChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        remoteCursor.observer = observer
    }

    package func observeRemoteFenceWrites(_ handler: @escaping @Sendable () -> Void) {
        remoteCursor.fenceWrites = handler
    }

    /// The file is never reached through a connection that could drop notifications.
    package func observeResyncNeeded(_ handler: @escaping @Sendable () async throws -> Void) {}

    package var changeFeedHealth: ChangeFeedHealth? { nil }

    package func ping(within deadline: DatabaseDeadline) async -> Bool {
        let store = self
        return (try? await deadline.run("a ping") { try await store.read { db in try await db.row("SELECT 1 AS one")?.int("one") } }) == 1
    }

    package var remoteChangePollInterval: Duration? { .milliseconds(250) }

    package var remoteChangesNeedFenceEvaluation: Bool { true }

    /// The key of the setting that names this database for index snapshots.
    static let storeIDSetting = "index_store_id"

    /// The database's id (made on first use; a setting, so no beacon change) and the number of
    /// transactions that changed beacons (counted in `logChanges`, by every process).
    package func changeStamp() async throws -> ChangeStamp? {
        let id = try await storeID()
        return try await withWriter { db in ChangeStamp(store: id, counter: try Self.changeCounter(db)) }
    }

    package func withSettledChanges<T: Sendable>(_ body: @Sendable (ChangeStamp) throws -> T) async throws -> T? {
        let id = try await storeID()
        return try await withWriter { db in
            // Local commits reach the observers before the write lock is released; other
            // processes' are applied here, and the counter is read in the same transaction.
            let counter = try await pollRemoteChangesLocked(db, force: true)
            return try body(ChangeStamp(store: id, counter: counter))
        }
    }

    private func storeID() async throws -> String {
        if let id = try await setting(Self.storeIDSetting) { return id }
        return try await setSettingIfAbsent(Self.storeIDSetting, value: UUID().uuidString)
    }

    /// The key of the setting that counts transactions that changed beacons.
    static let changeCounterSetting = "beacon_change_counter"

    static func changeCounter(_ db: SQLiteConnection) throws -> Int64 {
        let value = try db.rows("SELECT value FROM settings WHERE key = $1", [changeCounterSetting]).first?.string("value")
        return value.flatMap { Int64($0) } ?? 0
    }

    /// Reports the changes other processes committed since the last poll (nothing when no
    /// other connection committed). Cheap when idle: one pragma on the writer connection.
    package func pollRemoteChanges() async throws {
        try await withWriter { db in _ = try await pollRemoteChangesLocked(db, force: false) }
    }

    /// `pollRemoteChanges` on the writer connection (holding the write lock); with `force`, also
    /// when no other connection committed. Returns the change counter as of the changes applied
    /// (only when forced; else 0).
    private func pollRemoteChangesLocked(_ db: SQLiteConnection, force: Bool) async throws -> Int64 {
        let cursor = remoteCursor
        let me = writerID
        let version = try db.rows("PRAGMA data_version", []).first?.int("data_version") ?? 0
        let now = Timestamp.now()
        if now.seconds(since: cursor.lastPrune) > 60 {
            cursor.lastPrune = now
            _ = try db.rows("DELETE FROM beacon_changes WHERE created_at < $1", [now.adding(seconds: -Self.changeLogRetention).millis])
        }
        let remoteCommit = version != cursor.dataVersion
        guard remoteCommit || force else { return 0 }
        cursor.dataVersion = version
        var fences = false, accounts = false
        try db.execute("BEGIN")
        let changes: [BeaconChange]
        let counter: Int64
        var eventsThrough: Int64?
        do {
            let rows = try db.rows("SELECT seq, beacon_id, kind, writer FROM beacon_changes WHERE seq > $1 ORDER BY seq",
                                   [cursor.lastSeq])
            var ids: [String] = []
            var seen = Set<String>()
            for row in rows {
                cursor.lastSeq = try row.int64("seq")
                guard try row.string("writer") != me else { continue }
                guard let id = try row.optionalString("beacon_id") else {
                    if try row.string("kind") == "accounts" { accounts = true } else { fences = true }
                    continue
                }
                if seen.insert(id).inserted { ids.append(id) }
            }
            // The current state of each changed beacon: deleted if it is gone.
            var current: [String: Beacon] = [:]
            for b in try await Self.beacons(ids: ids.map(BeaconID.init(uncheckedRawValue:)), db: SQLiteSession(connection: db)) {
                current[b.id.rawValue] = b
            }
            changes = ids.map { id in current[id].map(BeaconChange.upsert) ?? .delete(BeaconID(uncheckedRawValue: id)) }
            counter = force ? try Self.changeCounter(db) : 0
            if remoteCommit { eventsThrough = try db.rows(Self.latestPositionSQL, []).first?.int64("n") }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
        if let observer = cursor.observer { for change in changes { observer(change) } }
        if fences { cursor.fenceWrites?() }
        if accounts { accountObservers.notify([nil]) }
        // Another connection committed: it may have appended events (the CLI's fixes and
        // sightings do); the notifier reads the log, which is cheap when nothing is new.
        if remoteCommit {
            eventWaker.value?()
            grouplessUsers?.forgetAll()  // it may have added group members
            if let eventsThrough { eventTypeMarks?.raiseAll(to: eventsThrough) }  // and appended events
        }
        return counter
}
}
