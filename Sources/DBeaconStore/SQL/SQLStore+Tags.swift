package import DBeaconCore

/// Categories (tags in use, followed tags), on either database.
extension SQLStore {
    package func tagCounts(viewer: Principal, now: Timestamp, bbox: BoundingBox?, limit: Int) async throws -> [TagCount] {
        var s = SQLStatement()
        var clauses = [Self.visibilityClause(viewer, now: now, &s)]
        if let box = bbox {
            clauses.append("b.lat BETWEEN \(s.bind(box.south)) AND \(s.bind(box.north))")
            let west = s.bind(box.west), east = s.bind(box.east)
            clauses.append(box.west <= box.east ? "b.lon BETWEEN \(west) AND \(east)" : "(b.lon >= \(west) OR b.lon <= \(east))")
        }
        let sql = """
            SELECT t.tag, count(*) AS n FROM beacon_tags t JOIN beacons b ON b.id = t.beacon_id
            WHERE \(clauses.joined(separator: " AND "))
            GROUP BY t.tag ORDER BY n DESC, t.tag LIMIT \(s.bind(limit))
            """
        let arguments = s.arguments
        return try await read { db in
            try await db.rows(sql, arguments).map { TagCount(tag: try $0.string("tag"), count: try $0.int("n")) }
        }
    }

    package func followTag(_ follow: TagFollow) async throws -> (follow: TagFollow, created: Bool) {
        try await write { db, _ in
            let existed = try await db.exists("SELECT 1 FROM tag_follows WHERE user_id = $1 AND tag = $2",
                                              [follow.user.rawValue, follow.tag])
            let row = try await db.row("""
                INSERT INTO tag_follows(user_id, tag, radius_m, created_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (user_id, tag) DO UPDATE SET radius_m = excluded.radius_m
                RETURNING created_at
                """, [follow.user.rawValue, follow.tag, follow.radiusM, follow.createdAt.millis])
            var stored = follow
            if let row { stored.createdAt = try row.timestamp("created_at") }
            return (stored, !existed)
        }
    }

    package func unfollowTag(user: UserID, tag: String) async throws -> Bool {
        try await write { db, _ in
            try await !db.rows("DELETE FROM tag_follows WHERE user_id = $1 AND tag = $2 RETURNING tag", [user.rawValue, tag]).isEmpty
        }
    }

    package func tagFollows(of user: UserID) async throws -> [TagFollow] {
        try await read { db in
            try await db.rows("SELECT * FROM tag_follows WHERE user_id = $1 ORDER BY tag", [user.rawValue]).map {
                TagFollow(user: user, tag: try $0.string("tag"), radiusM: try $0.double("radius_m"), createdAt: try $0.timestamp("created_at"))
            }
        }
    }

    package func tagFollowers(tags: [String], in box: BoundingBox) async throws -> [TagFollower] {
        guard !tags.isEmpty else { return [] }
        return try await read { db in
            var followers: [UserID: TagFollower] = [:]
            var order: [UserID] = []
            for row in try await db.rows("""
                SELECT f.user_id, f.tag, f.radius_m, l.lat, l.lon FROM tag_follows f JOIN user_locations l ON l.user_id = f.user_id
                WHERE \(db.dialect.contains("f.tag", "$1")) AND l.lat BETWEEN $2 AND $3 AND l.lon BETWEEN $4 AND $5
                ORDER BY f.user_id, f.tag
                """, [tags, box.south, box.north, box.west, box.east]) {
                let user = UserID(uncheckedRawValue: try row.string("user_id"))
                let follow = (tag: try row.string("tag"), radiusM: try row.double("radius_m"))
                if followers[user] == nil {
                    order.append(user)
                    followers[user] = TagFollower(user: user, location: Position(lon: try row.double("lon"), lat: try row.double("lat")),
                                                  follows: [])
                }
                followers[user]?.follows.append(follow)
            }
            return order.compactMap { followers[$0] }
        }
    }
}
