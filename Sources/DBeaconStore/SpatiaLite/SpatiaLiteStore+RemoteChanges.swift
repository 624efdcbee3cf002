package import DBeaconCore
import Foundation
import GRDB

/// Other processes on the same file (the CLI with `--db` while `serve` runs): every write
/// transaction logs its beacon changes in `beacon_changes` with this instance's `writerID`;
/// `pollRemoteChanges` notices other connections' commits through `PRAGMA data_version`
/// (which changes only for commits made by other connections) and reports their changes, read
/// from the store as they are now, to the observers, on the writer's queue: local commits and
/// remote changes reach the observers in one order, so an index never goes back to an older
/// state of a beacon.
extension SpatiaLiteStore: BeaconChangeFeed {
    /// Rows of the change log are kept this long (a poller reads them within a second).
    static let changeLogRetention = 600.0

    static func logChanges(_ db: Database, _ changes: [BeaconChange], writer: String) throws {
        guard !changes.isEmpty else { return }
        let now = Timestamp.now().millis
        let statement = try db.cachedStatement(sql: """
            INSERT INTO beacon_changes(beacon_id, kind, writer, created_at) VALUES (?, ?, ?, ?)
            """)
        for change in changes {
            switch change {
            case .upsert(let b): try statement.execute(arguments: [b.id.rawValue, "upsert", writer, now])
            case .delete(let id): try statement.execute(arguments: [id.rawValue, "delete", writer, now])
            case .move(let id, _): try statement.execute(arguments: [id.rawValue, "move", writer, now])
            }
        }
    }

    /// Logs that fence states or user locations changed (another process's fence engine must reload).
    static func logFenceWrites(_ db: Database, writer: String) throws {
        try db.execute(sql: "INSERT INTO beacon_changes(beacon_id, kind, writer, created_at) VALUES (NULL, 'fences', ?, ?)",
                       arguments: [writer, Timestamp.now().millis])
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
        try await writer.writeWithoutTransaction { db in
            let version = try Int.fetchOne(db, sql: "PRAGMA data_version") ?? 0
            let now = Timestamp.now()
            if now.seconds(since: cursor.lastPrune) > 60 {
                cursor.lastPrune = now
                try db.execute(sql: "DELETE FROM beacon_changes WHERE created_at < ?",
                               arguments: [now.adding(seconds: -Self.changeLogRetention).millis])
            }
            guard version != cursor.dataVersion else { return }
            cursor.dataVersion = version
            var changes: [BeaconChange] = []
            var fences = false
            try db.inTransaction(.deferred) {
                let rows = try Row.fetchAll(db, sql: """
                    SELECT seq, beacon_id, kind, writer FROM beacon_changes WHERE seq > ? ORDER BY seq
                    """, arguments: [cursor.lastSeq])
                var ids: [String] = []
                var seen = Set<String>()
                for row in rows {
                    cursor.lastSeq = row["seq"]
                    guard (row["writer"] as String) != me else { continue }
                    guard let id: String = row["beacon_id"] else {
                        fences = true
                        continue
                    }
                    if seen.insert(id).inserted { ids.append(id) }
                }
                // The current state of each changed beacon: deleted if it is gone.
                var current: [String: Beacon] = [:]
                for chunk in ids.chunked(500) {
                    let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                    for b in try Self.fetchBeacons(db, sql: "SELECT \(Self.beaconColumns) FROM beacons b WHERE b.id IN (\(marks))",
                                                   arguments: StatementArguments(chunk)) {
                        current[b.id.rawValue] = b
                    }
                }
                changes = ids.map { id in current[id].map(BeaconChange.upsert) ?? .delete(BeaconID(uncheckedRawValue: id)) }
                return .commit
            }
            if let observer = cursor.observer { for change in changes { observer(change) } }
            if fences { cursor.fenceWrites?() }
        }
    }
}
