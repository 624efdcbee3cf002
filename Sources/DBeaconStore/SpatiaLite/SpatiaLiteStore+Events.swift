package import DBeaconCore
import DBeaconGeo
import Foundation
import GRDB

extension SpatiaLiteStore: EventStore {
    // MARK: Writing events

    /// Appends events and enqueues their deliveries to matching webhooks.
    static func insertEvents(_ db: Database, _ events: [Event]) throws {
        guard !events.isEmpty else { return }
        let before = try lastEventSeq(db)
        let statement = try db.cachedStatement(sql: """
            INSERT INTO events(id, type, recipient, beacon_id, created_at, data) VALUES (?, ?, ?, ?, ?, ?)
            """)
        for e in events {
            try statement.execute(arguments: [e.id.rawValue, e.type.rawValue, e.recipient.rawValue, e.beacon?.rawValue,
                                              e.createdAt.millis, JSONValue.object(e.data).jsonString])
        }
        try enqueueDeliveries(db, eventsAfter: before)
    }

    static func lastEventSeq(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT max(seq) FROM events") ?? 0
    }

    /// One outbox row per (new event, active webhook whose owner/scope and filters match).
    static func enqueueDeliveries(_ db: Database, eventsAfter seq: Int64) throws {
        try db.execute(sql: """
            INSERT INTO outbox(event_seq, webhook_id, status, attempts, next_attempt_at, created_at, updated_at)
            SELECT e.seq, w.id, 'pending', 0, e.created_at, e.created_at, e.created_at
            FROM events e JOIN webhooks w
              ON w.status = 'active' AND (w.scope = 'all' OR (w.scope = 'user' AND w.owner = e.recipient))
            WHERE e.seq > ? AND dbeacon_event_matches(w.events, e.type)
            """, arguments: [seq])
    }

    /// An event for each follower of `beacon` who may see it; visibility is decided here, in
    /// the same transaction as the change.
    static func fanOutToFollowers(_ db: Database, beacon: BeaconID, _ fanOut: FollowerFanOut) throws {
        let before = try lastEventSeq(db)
        let alive = fanOut.requireAlive
            ? """
              AND (f.user_id = b.owner OR ((b.lifetime_start IS NULL OR b.lifetime_start <= :at)
                                           AND (b.lifetime_end IS NULL OR b.lifetime_end > :at)))
              """
            : ""
        try db.execute(sql: """
            INSERT INTO events(id, type, recipient, beacon_id, created_at, data)
            SELECT dbeacon_event_id(), :type, f.user_id, b.id, :at, :data
            FROM followers f JOIN beacons b ON b.id = f.beacon_id
            WHERE f.beacon_id = :beacon
              AND (f.user_id = b.owner OR b.is_private = 0
                   OR EXISTS (SELECT 1 FROM beacon_members m WHERE m.beacon_id = b.id AND m.user_id = f.user_id))
              \(alive)
            ORDER BY f.seq
            """, arguments: ["type": fanOut.type.rawValue, "at": fanOut.at.millis, "data": JSONValue.object(fanOut.data).jsonString,
                             "beacon": beacon.rawValue])
        try enqueueDeliveries(db, eventsAfter: before)
    }

    package func appendEvents(_ events: [Event]) async throws {
        guard !events.isEmpty else { return }
        try await write { db, _ in try Self.insertEvents(db, events) }
    }

    // MARK: Reading events

    package func events(recipient: UserID?, after: Int64?, limit: Int) async throws -> Page<Event> {
        try await read { db in
            let rows: [Row]
            if let recipient {
                rows = try Row.fetchAll(db, sql: """
                    SELECT * FROM events WHERE recipient = ? AND seq > ? ORDER BY seq LIMIT ?
                    """, arguments: [recipient.rawValue, after ?? 0, limit + 1])
            } else {
                rows = try Row.fetchAll(db, sql: "SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                                        arguments: [after ?? 0, limit + 1])
            }
            let page = rows.prefix(limit)
            return Page(items: page.map(Self.event(from:)), next: rows.count > limit ? page.last?["seq"] : nil)
        }
    }

    package func eventPosition(id: EventID) async throws -> Int64? {
        try await read { db in try Int64.fetchOne(db, sql: "SELECT seq FROM events WHERE id = ?", arguments: [id.rawValue]) }
    }

    package func deleteEvents(before: Timestamp) async throws -> Int {
        try await write { db, _ in
            try db.execute(sql: """
                DELETE FROM events WHERE created_at < ? AND NOT EXISTS (
                    SELECT 1 FROM outbox o WHERE o.event_seq = events.seq AND o.status IN ('pending', 'in_flight'))
                """, arguments: [before.millis])
            return db.changesCount
        }
    }

    static func event(from row: Row) -> Event {
        let data = (try? JSONParser.parse(row["data"] as String))?.objectValue ?? JSONObject()
        return Event(id: EventID(uncheckedRawValue: row["id"]), type: EventType(rawValue: row["type"]),
                     createdAt: Timestamp(millis: row["created_at"]), recipient: UserID(uncheckedRawValue: row["recipient"]),
                     beacon: (row["beacon_id"] as String?).map(BeaconID.init(uncheckedRawValue:)), data: data)
    }

    // MARK: Fences

    package func applyFenceUpdates(_ updates: [FenceUpdate]) async throws {
        guard updates.contains(where: { !$0.isEmpty }) else { return }
        let writerID = writerID
        try await write { db, changes in
            if updates.contains(where: { !$0.locations.isEmpty || !$0.states.isEmpty || !$0.removed.isEmpty }) {
                try Self.logFenceWrites(db, writer: writerID)
            }
            let location = try db.cachedStatement(sql: """
                INSERT INTO user_locations(user_id, lon, lat, accuracy_m, fix_at, received_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(user_id) DO UPDATE SET lon = excluded.lon, lat = excluded.lat, accuracy_m = excluded.accuracy_m,
                    fix_at = excluded.fix_at, received_at = excluded.received_at
                """)
            let state = try db.cachedStatement(sql: """
                INSERT INTO fence_states(user_id, beacon_id, entered_at, dwelled, sighted_at)
                SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM beacons WHERE id = ?)
                ON CONFLICT(user_id, beacon_id) DO UPDATE SET entered_at = excluded.entered_at, dwelled = excluded.dwelled,
                    sighted_at = excluded.sighted_at
                """)
            let remove = try db.cachedStatement(sql: "DELETE FROM fence_states WHERE user_id = ? AND beacon_id = ?")
            var events: [Event] = []
            for update in updates {
                for l in update.locations {
                    try location.execute(arguments: [l.user.rawValue, l.position.lon, l.position.lat, l.accuracyM,
                                                     l.fixAt.millis, l.receivedAt.millis])
                }
                for r in update.removed { try remove.execute(arguments: [r.user.rawValue, r.beacon.rawValue]) }
                for s in update.states {
                    try state.execute(arguments: [s.user.rawValue, s.state.beacon.rawValue, s.state.enteredAt.millis,
                                                  s.state.dwelled, s.state.sightedAt?.millis, s.state.beacon.rawValue])
                }
                for m in update.moves {
                    try Self.move(m.beacon, to: m.position, radiusM: m.radiusM, db: db)
                    changes.append(.move(m.beacon, m.position))
                }
                events += update.events
            }
            try Self.insertEvents(db, events)
        }
    }

    package func loadFenceSnapshot(locationsSince since: Timestamp) async throws -> (locations: [UserLocation], states: [UserID: [FenceState]]) {
        try await read { db in
            let locations = try Row.fetchAll(db, sql: "SELECT * FROM user_locations WHERE received_at >= ?", arguments: [since.millis]).map {
                UserLocation(user: UserID(uncheckedRawValue: $0["user_id"]), position: Position(lon: $0["lon"], lat: $0["lat"]),
                             accuracyM: $0["accuracy_m"], fixAt: Timestamp(millis: $0["fix_at"]),
                             receivedAt: Timestamp(millis: $0["received_at"]))
            }
            var states: [UserID: [FenceState]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT * FROM fence_states") {
                states[UserID(uncheckedRawValue: row["user_id"]), default: []].append(
                    FenceState(beacon: BeaconID(uncheckedRawValue: row["beacon_id"]), enteredAt: Timestamp(millis: row["entered_at"]),
                               dwelled: row["dwelled"], sightedAt: (row["sighted_at"] as Int64?).map(Timestamp.init(millis:))))
            }
            return (locations, states)
        }
    }

    // MARK: Lifetimes

    package func lifetimeTransitions(after: Timestamp, upTo: Timestamp) async throws -> (started: [Beacon], ended: [Beacon]) {
        try await read { db in
            let started = try Self.fetchBeacons(db, sql: """
                SELECT \(Self.beaconColumns) FROM beacons b WHERE b.lifetime_start > ? AND b.lifetime_start <= ?
                ORDER BY b.lifetime_start
                """, arguments: [after.millis, upTo.millis])
            let ended = try Self.fetchBeacons(db, sql: """
                SELECT \(Self.beaconColumns) FROM beacons b WHERE b.lifetime_end > ? AND b.lifetime_end <= ?
                ORDER BY b.lifetime_end
                """, arguments: [after.millis, upTo.millis])
            return (started, ended)
        }
    }

    package static let lifetimeTickSetting = "lifetime_ticker_at"

    package func commitLifetimeTick(upTo: Timestamp, fanOuts: [(beacon: BeaconID, fanOut: FollowerFanOut)]) async throws {
        try await write { db, _ in
            for f in fanOuts where try Bool.fetchOne(db, sql: "SELECT 1 FROM beacons WHERE id = ?", arguments: [f.beacon.rawValue]) == true {
                try Self.fanOutToFollowers(db, beacon: f.beacon, f.fanOut)
            }
            try db.execute(sql: """
                INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value
                """, arguments: [Self.lifetimeTickSetting, String(upTo.millis)])
        }
    }
}
