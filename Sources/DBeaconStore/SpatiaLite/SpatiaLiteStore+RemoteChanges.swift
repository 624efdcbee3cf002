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
        guard !log.changes.isEmpty || log.fencesChanged else { return }
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
    }

    package func observeRemoteChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        remoteCursor.observer = observer
    }

    package func observeRemoteFenceWrites(_ handler: @escaping @Sendable () -> Void) {
        remoteCursor.fenceWrites = handler
    }

    /// The file is never reached through a connection that could drop notifications.
    package func observeResyncNeeded(_ handler: @escaping @Sendable () -> Void) {}

    package var remoteChangePollInterval: Duration? { .milliseconds(250) }

    package var remoteChangesNeedFenceEvaluation: Bool { true }

    /// Reports the changes other processes committed since the last poll (nothing when no
    /// other connection committed). Cheap when idle: one pragma on the writer connection.
    package func pollRemoteChanges() async throws {
        let cursor = remoteCursor
        let me = writerID
        try await withWriter { db in
            let version = try db.rows("PRAGMA data_version", []).first?.int("data_version") ?? 0
            let now = Timestamp.now()
            if now.seconds(since: cursor.lastPrune) > 60 {
                cursor.lastPrune = now
                _ = try db.rows("DELETE FROM beacon_changes WHERE created_at < $1", [now.adding(seconds: -Self.changeLogRetention).millis])
            }
            guard version != cursor.dataVersion else { return }
            cursor.dataVersion = version
            var fences = false
            try db.execute("BEGIN")
            let changes: [BeaconChange]
            do {
                let rows = try db.rows("SELECT seq, beacon_id, kind, writer FROM beacon_changes WHERE seq > $1 ORDER BY seq",
                                       [cursor.lastSeq])
                var ids: [String] = []
                var seen = Set<String>()
                for row in rows {
                    cursor.lastSeq = try row.int64("seq")
                    guard try row.string("writer") != me else { continue }
                    guard let id = try row.optionalString("beacon_id") else {
                        fences = true
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
                try db.execute("COMMIT")
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
            if let observer = cursor.observer { for change in changes { observer(change) } }
            if fences { cursor.fenceWrites?() }
        }
    }
}
