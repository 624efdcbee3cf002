package import DBeaconCore

/// Visit analytics over the event log, on either database.
extension SQLStore {
    package func fenceCrossings(beacon: BeaconID) async throws -> [FenceCrossing] {
        try await read { db in
            try await db.rows("""
                SELECT recipient, type, created_at, data FROM events
                WHERE beacon_id = $1 AND type IN ('beacon.entered', 'beacon.exited') ORDER BY recipient, seq
                """, [beacon.rawValue]).map { row in
                // The crossing's own time (`data.at`: the fix or sighting time), else when it was logged.
                let data = (try? JSONParser.parse(try row.string("data")))?.objectValue
                let logged = try row.timestamp("created_at")
                let at = data?["at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) ?? logged
                return FenceCrossing(user: UserID(uncheckedRawValue: try row.string("recipient")),
                                     entered: try row.string("type") == EventType.entered.rawValue, at: at)
            }
        }
    }

    package func coVisits(beacon: BeaconID, excluding owner: UserID, minVisitors: Int,
                          limit: Int) async throws -> [(beacon: BeaconID, visitors: Int)] {
        // Visitors other than the owner, counted only for entries made after their account
        // existed: an owner cannot manufacture visitors to learn where a real one went.
        try await read { db in
            try await db.rows("""
                SELECT other.beacon_id, count(DISTINCT other.recipient) AS n
                FROM events here
                JOIN users u ON u.id = here.recipient
                JOIN events other ON other.recipient = here.recipient
                WHERE here.beacon_id = $1 AND here.type = 'beacon.entered' AND here.recipient <> $4
                  AND u.created_at <= here.created_at AND u.created_at <= other.created_at
                  AND other.type = 'beacon.entered' AND other.beacon_id IS NOT NULL AND other.beacon_id <> $1
                GROUP BY other.beacon_id HAVING count(DISTINCT other.recipient) >= $2
                ORDER BY n DESC, other.beacon_id LIMIT $3
                """, [beacon.rawValue, minVisitors, limit, owner.rawValue]).map {
                (BeaconID(uncheckedRawValue: try $0.string("beacon_id")), try $0.int("n"))
            }
        }
    }

    package func enteredBeacons(user: UserID) async throws -> [(beacon: BeaconID, entries: Int)] {
        try await read { db in
            try await db.rows("""
                SELECT beacon_id, count(*) AS n FROM events
                WHERE recipient = $1 AND type = 'beacon.entered' AND beacon_id IS NOT NULL
                GROUP BY beacon_id ORDER BY beacon_id
                """, [user.rawValue]).map { (BeaconID(uncheckedRawValue: try $0.string("beacon_id")), try $0.int("n")) }
        }
    }
}
