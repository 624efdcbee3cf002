package import DBeaconCore
import Foundation

/// Who follows which beacon (the follower count is kept on the beacon's row).
extension SQLStore {
    package func follow(beacon: BeaconID, user: UserID, at: Timestamp) async throws -> Bool {
        try await write { db, log in try await Self.addFollower(db, beacon: beacon, user: user, at: at, log: &log) }
    }

    package func unfollow(beacon: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, log in try await Self.removeFollower(db, beacon: beacon, user: user, log: &log) }
    }

    @discardableResult
    static func addFollower(_ db: any SQLSession, beacon: BeaconID, user: UserID, at: Timestamp, log: inout SQLWriteLog) async throws -> Bool {
        let added = try await db.rows("""
            INSERT INTO followers(beacon_id, user_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (beacon_id, user_id) DO NOTHING
            RETURNING seq
            """, [beacon.rawValue, user.rawValue, at.millis])
        guard !added.isEmpty else { return false }
        try await db.rows("UPDATE beacons SET followers_count = followers_count + 1 WHERE id = $1", [beacon.rawValue])
        log.touch(beacon)
        return true
    }

    @discardableResult
    static func removeFollower(_ db: any SQLSession, beacon: BeaconID, user: UserID, log: inout SQLWriteLog) async throws -> Bool {
        let removed = try await db.rows("DELETE FROM followers WHERE beacon_id = $1 AND user_id = $2 RETURNING seq",
                                        [beacon.rawValue, user.rawValue])
        guard !removed.isEmpty else { return false }
        try await db.rows("UPDATE beacons SET followers_count = followers_count - 1 WHERE id = $1", [beacon.rawValue])
        log.touch(beacon)
        return true
    }

    package func followers(of beacon: BeaconID, limit: Int, after: Int64?) async throws -> Page<Follower> {
        try await read { db in
            let rows = try await db.rows("""
                SELECT f.seq, f.user_id, f.created_at, u.name FROM followers f JOIN users u ON u.id = f.user_id
                WHERE f.beacon_id = $1 AND f.seq > $2 ORDER BY f.seq LIMIT $3
                """, [beacon.rawValue, after ?? 0, limit + 1])
            let page = rows.prefix(limit)
            return Page(items: try page.map { Follower(user: UserID(uncheckedRawValue: try $0.string("user_id")), name: try $0.string("name"),
                                                       since: try $0.timestamp("created_at")) },
                        next: rows.count > limit ? try page.last?.int64("seq") : nil)
        }
    }

    package func isFollowing(beacon: BeaconID, user: UserID) async throws -> Bool {
        try await read { db in
            try await db.exists("SELECT 1 FROM followers WHERE beacon_id = $1 AND user_id = $2", [beacon.rawValue, user.rawValue])
        }
    }
}
