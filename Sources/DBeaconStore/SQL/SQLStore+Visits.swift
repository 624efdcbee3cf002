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

    package func coVisits(beacon: BeaconID, minVisitors: Int, limit: Int) async throws -> [(beacon: BeaconID, visitors: Int)] {
        try await read { db in
            try await db.rows("""
                SELECT other.beacon_id, count(DISTINCT other.recipient) AS n
                FROM (SELECT DISTINCT recipient FROM events WHERE beacon_id = $1 AND type = 'beacon.entered') AS here
                JOIN events other ON other.recipient = here.recipient
                WHERE other.type = 'beacon.entered' AND other.beacon_id IS NOT NULL AND other.beacon_id <> $1
                GROUP BY other.beacon_id HAVING count(DISTINCT other.recipient) >= $2
                ORDER BY n DESC, other.beacon_id LIMIT $3
                """, [beacon.rawValue, minVisitors, limit]).map {
                (BeaconID(uncheckedRawValue: try $0.string("beacon_id")), try $0.int("n"))
            }
        }
    }

    package func enteredTags(user: UserID) async throws -> [(tag: String, entries: Int)] {
        try await read { db in
            try await db.rows("""
                SELECT t.tag, count(*) AS n FROM events e JOIN beacon_tags t ON t.beacon_id = e.beacon_id
                WHERE e.recipient = $1 AND e.type = 'beacon.entered'
                GROUP BY t.tag ORDER BY n DESC, t.tag
                """, [user.rawValue]).map { (try $0.string("tag"), try $0.int("n")) }
        }
    }
}
