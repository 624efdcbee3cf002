package import DBeaconCore
import DBeaconGeo
import Foundation

/// The event log (with its webhook outbox), fence states and lifetimes, on either database.
extension SQLStore {
    // MARK: Writing events

    /// Appends events, in order, and enqueues their deliveries to matching webhooks; in a
    /// PostgreSQL write transaction at its end (`DeferredEvents`).
    static func insertEvents(_ db: any SQLSession, _ events: [Event]) async throws {
        guard !events.isEmpty else { return }
        if let deferred = db.deferredEvents {
            deferred.append(events)
            return
        }
        try await writeEvents(db, try await addressedToUsers(db, events))
        db.eventMark?.set(events)
    }

    /// The events whose recipients are users still. A decision read before a user was erased
    /// may commit after (a group alert to every member); its events for the erased user are
    /// dropped here, so none outlives the erasure. On PostgreSQL the recipients' rows are
    /// locked against deletion (`FOR KEY SHARE`) until commit: an erasure either ran before
    /// (its user is not found) or waits, and then deletes these events with the rest.
    static func addressedToUsers(_ db: any SQLSession, _ events: [Event]) async throws -> [Event] {
        let recipients = Set(events.map(\.recipient))
        let found = Set(try await db.rows("""
            SELECT id FROM users WHERE \(db.dialect.contains("id", "$1")) ORDER BY id\(db.dialect.forKeyShare)
            """, [recipients.sorted().map(\.rawValue)]).map { UserID(uncheckedRawValue: try $0.string("id")) })
        return found.count == recipients.count ? events : events.filter { found.contains($0.recipient) }
    }

    /// A PostgreSQL write transaction's events, last before its commit: the events lock (one
    /// per schema, two-key form, apart from the one-key locks of users), then the inserts.
    ///
    /// One statement per slice, one round trip: the lock (taken again by later slices, which
    /// costs nothing), the events in order, and their outbox rows from what the insert
    /// returned. The lock is in its own CTE, which the insert's rows are joined to: no row, so no
    /// seq, exists before it is held.
    static func writeDeferredEvents(_ db: any SQLSession, _ events: [Event]) async throws {
        guard !events.isEmpty else { return }
        // The recipients' rows before the events lock (an erasure holds a user's row and then
        // takes that lock: taken the other way round, the two would deadlock).
        let events = try await addressedToUsers(db, events)
        guard !events.isEmpty else { return }
        for chunk in events.chunkedInPowersOfTwo() {
            var s = SQLStatement()
            let values = chunk.enumerated().map { i, e in
                "(\(i), \(s.bind(e.id.rawValue)), \(s.bind(e.type.rawValue)), \(s.bind(e.recipient.rawValue)), "
                    + "CAST(\(s.bind(e.beacon?.rawValue)) AS TEXT), CAST(\(s.bind(e.createdAt.millis)) AS BIGINT), "
                    + "\(s.bind(JSONValue.object(e.data).jsonString)))"
            }
            try await db.rows("""
                WITH locked AS MATERIALIZED (
                    SELECT pg_advisory_xact_lock(hashtext('dbeacon_events'), hashtext(current_schema())) AS held),
                e AS (
                    INSERT INTO events(id, type, recipient, beacon_id, created_at, data)
                    SELECT v.id, v.type, v.recipient, v.beacon_id, v.created_at, v.data
                    FROM (VALUES \(values.joined(separator: ", "))) AS v(position, id, type, recipient, beacon_id, created_at, data)
                    CROSS JOIN locked ORDER BY v.position
                    RETURNING seq, type, recipient, created_at)
                \(deliveries(from: "e", db.dialect))
                """, s.arguments)
        }
    }

    private static func writeEvents(_ db: any SQLSession, _ events: [Event]) async throws {
        var seqs: [Int64] = []
        // Multi-row inserts, in order, within both databases' limits on placeholders, in a few shapes.
        for chunk in events.chunkedInPowersOfTwo() {
            var s = SQLStatement()
            let values = chunk.map { e in
                "(\(s.bind(e.id.rawValue)), \(s.bind(e.type.rawValue)), \(s.bind(e.recipient.rawValue)), \(s.bind(e.beacon?.rawValue)), "
                    + "\(s.bind(e.createdAt.millis)), \(s.bind(JSONValue.object(e.data).jsonString)))"
            }
            let rows = try await db.rows("""
                INSERT INTO events(id, type, recipient, beacon_id, created_at, data) VALUES \(values.joined(separator: ", "))
                RETURNING seq
                """, s.arguments)
            seqs += try rows.map { try $0.int64("seq") }
        }
        try await enqueueDeliveries(db, events: seqs)
    }

    /// One outbox row per (new event, active webhook whose owner/scope and filters match);
    /// filters are `*`, an exact type, or a prefix ending in `.*` (as `EventType.matches`).
    static func enqueueDeliveries(_ db: any SQLSession, events seqs: [Int64]) async throws {
        guard !seqs.isEmpty else { return }
        try await db.rows("""
            WITH e AS (SELECT seq, type, recipient, created_at FROM events WHERE \(db.dialect.contains("seq", "$1")))
            \(deliveries(from: "e", db.dialect))
            """, [seqs])
    }

    /// The outbox insert for the events of `source` (seq, type, recipient, created_at).
    private static func deliveries(from source: String, _ dialect: SQLDialect) -> String {
        """
        INSERT INTO outbox(event_seq, webhook_id, status, attempts, next_attempt_at, created_at, updated_at)
        SELECT e.seq, w.id, 'pending', 0, e.created_at, e.created_at, e.created_at
        FROM \(source) e JOIN webhooks w
          ON w.status = 'active' AND (w.scope = 'all' OR (w.scope = 'user' AND w.owner = e.recipient))
        WHERE EXISTS (
            SELECT 1 FROM \(dialect.jsonStrings("w.events", as: "f"))
            WHERE f.value = '*' OR f.value = e.type
               OR (substr(f.value, length(f.value) - 1) = '.*'
                   AND substr(e.type, 1, length(f.value) - 1) = substr(f.value, 1, length(f.value) - 1)))
        ORDER BY e.seq, w.created_at, w.id
        """
    }

    /// An event for each follower of `beacon` who may see it (but `excluding`), decided in the
    /// transaction; returns how many.
    @discardableResult
    static func fanOutToFollowers(_ db: any SQLSession, beacon: BeaconID, _ fanOut: FollowerFanOut,
                                  excluding: UserID? = nil) async throws -> Int {
        // The policy's clause with the follower as the viewer: those who may see the beacon now
        // (`requireAlive`), or, for notices of losing it, those it is shared with.
        var s = SQLStatement()
        let id = s.bind(beacon.rawValue), at = s.bind(fanOut.at.millis)
        let access: BeaconAccess = fanOut.requireAlive ? .see : .lossNotice
        let time = "CAST(\(at) AS BIGINT)" // typed, and used even when the condition reads no time
        let allowed = policyClause(VisibilityPolicy.condition(for: access), viewer: "f.user_id", at: time, &s)
        var recipients = try await db.rows("""
            SELECT f.user_id FROM followers f JOIN beacons b ON b.id = f.beacon_id
            WHERE f.beacon_id = \(id) AND \(time) IS NOT NULL AND \(allowed)
            ORDER BY f.seq
            """, s.arguments).map { UserID(uncheckedRawValue: try $0.string("user_id")) }
        if fanOut.alsoMembers {
            // The members of its group the notice is for (the policy's clause with the member
            // as the viewer), but its owner, who is told otherwise.
            let following = Set(recipients)
            var m = SQLStatement()
            let id = m.bind(beacon.rawValue)
            let told = policyClause(VisibilityPolicy.condition(for: access), viewer: "g.user_id",
                                    at: "CAST(\(m.bind(fanOut.at.millis)) AS BIGINT)", &m)
            for row in try await db.rows("""
                SELECT g.user_id FROM beacon_members g JOIN beacons b ON b.id = g.beacon_id
                WHERE g.beacon_id = \(id) AND g.user_id <> b.owner AND \(told) ORDER BY g.user_id
                """, m.arguments) {
                let user = UserID(uncheckedRawValue: try row.string("user_id"))
                if !following.contains(user) { recipients.append(user) }
            }
        }
        let events = recipients.filter { $0 != excluding }.map {
            Event(type: fanOut.type, createdAt: fanOut.at, recipient: $0, beacon: beacon, data: fanOut.data)
        }
        try await insertEvents(db, events)
        return events.count
    }

    package func appendEvents(_ events: [Event]) async throws {
        guard !events.isEmpty else { return }
        try await write { db, _ in try await Self.insertEvents(db, events) }
    }

    // MARK: Reading events

    package func events(recipient: UserID?, after: Int64?, limit: Int) async throws -> Page<Event> {
        try await read { db in
            let rows: [SQLRow]
            if let recipient {
                rows = try await db.rows("SELECT * FROM events WHERE recipient = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                                         [recipient.rawValue, after ?? 0, limit + 1])
            } else {
                rows = try await db.rows("SELECT * FROM events WHERE seq > $1 ORDER BY seq LIMIT $2", [after ?? 0, limit + 1])
            }
            let page = rows.prefix(limit)
            return Page(items: try page.map { try Self.event(from: $0) }, next: rows.count > limit ? try page.last?.int64("seq") : nil)
        }
    }

    package func events(recipient: UserID, after: Int64, types: [EventType], limit: Int) async throws -> (page: Page<Event>, through: Int64) {
        // None of these types was written after `after` (SpatiaLite): nothing to read, and the
        // reader stays where it is.
        if let marks = eventTypeMarks, marks.newest(of: types) <= after { return (Page(items: [], next: nil), after) }
        return try await read { db in
            // The newest position first: the log's order is its commit order (one writer, or the
            // events lock on PostgreSQL), so every event up to it is committed and read below.
            let through = try await db.row(Self.latestPositionSQL)?.int64("n") ?? 0
            guard through > after, !types.isEmpty else { return (Page(items: [], next: nil), max(through, after)) }
            let rows = try await db.rows("""
                SELECT * FROM events WHERE recipient = $1 AND seq > $2 AND seq <= $3 AND \(db.dialect.contains("type", "$5"))
                ORDER BY seq LIMIT $4
                """, [recipient.rawValue, after, through, limit + 1, types.map(\.rawValue)])
            let page = rows.prefix(limit)
            return (Page(items: try page.map { try Self.event(from: $0) }, next: rows.count > limit ? try page.last?.int64("seq") : nil),
                    through)
        }
    }

    package func latestEventPosition() async throws -> Int64 {
        try await read { db in try await db.row(Self.latestPositionSQL)?.int64("n") ?? 0 }
    }

    /// The newest position of the log (0 when empty), as `n`.
    static var latestPositionSQL: String { "SELECT COALESCE(max(seq), 0) AS n FROM events" }

    package func eventRecipients(after: Int64, limit: Int) async throws -> [(position: Int64, recipient: UserID)] {
        try await read { db in
            try await db.rows("SELECT seq, recipient FROM events WHERE seq > $1 ORDER BY seq LIMIT $2", [after, limit]).map {
                (try $0.int64("seq"), UserID(uncheckedRawValue: try $0.string("recipient")))
            }
        }
    }

    package func eventPosition(id: EventID) async throws -> Int64? {
        try await read { db in try await db.row("SELECT seq FROM events WHERE id = $1", [id.rawValue])?.int64("seq") }
    }

    package func deleteEvents(before: Timestamp) async throws -> Int {
        try await write { db, _ in
            try await db.rows("""
                DELETE FROM events WHERE created_at < $1 AND NOT EXISTS (
                    SELECT 1 FROM outbox o WHERE o.event_seq = events.seq AND o.status IN ('pending', 'in_flight'))
                RETURNING seq
                """, [before.millis]).count
        }
    }

    static func event(from row: SQLRow, prefix: String = "") throws -> Event {
        let data = (try? JSONParser.parse(try row.string(prefix + "data")))?.objectValue ?? JSONObject()
        return Event(id: EventID(uncheckedRawValue: try row.string(prefix + "id")), type: EventType(rawValue: try row.string(prefix + "type")),
                     createdAt: try row.timestamp(prefix + "created_at"),
                     recipient: UserID(uncheckedRawValue: try row.string(prefix + "recipient")),
                     beacon: try row.optionalString(prefix + "beacon_id").map(BeaconID.init(uncheckedRawValue:)), data: data)
    }

    // MARK: Fences

    package func applyFenceUpdates(_ updates: [FenceUpdate]) async throws {
        guard updates.contains(where: { !$0.isEmpty }) else { return }
        try await write { db, log in try await Self.writeFenceUpdates(db, updates, log: &log) }
    }

    static func writeFenceUpdates(_ db: any SQLSession, _ updates: [FenceUpdate], log: inout SQLWriteLog) async throws {
        if updates.contains(where: { !$0.locations.isEmpty || !$0.states.isEmpty || !$0.removed.isEmpty }) {
            log.fencesChanged = true
        }
        // The net effect of the updates, in order: the last location per user, and per
        // (user, beacon) the last state or its removal. Then multi-row statements.
        var locations: [UserID: UserLocation] = [:]
        var locationOrder: [UserID] = []
        var states: [FenceKey: FenceState?] = [:]
        var stateOrder: [FenceKey] = []
        var events: [Event] = []
        for update in updates {
            for l in update.locations {
                if locations.updateValue(l, forKey: l.user) == nil { locationOrder.append(l.user) }
            }
            for r in update.removed {
                let key = FenceKey(user: r.user, beacon: r.beacon)
                if states.updateValue(nil, forKey: key) == nil { stateOrder.append(key) }
            }
            for s in update.states {
                let key = FenceKey(user: s.user, beacon: s.state.beacon)
                if states.updateValue(s.state, forKey: key) == nil { stateOrder.append(key) }
            }
            for m in update.moves {
                try await move(m.beacon, to: m.position, radiusM: m.radiusM, db: db)
                log.changes.append(.move(m.beacon, m.position))
            }
            events += update.events
        }
        let located = locationOrder.compactMap { locations[$0] }
        let ended = stateOrder.filter { states[$0] == .some(nil) }
        let kept = stateOrder.compactMap { key in states[key].flatMap { $0 }.map { (key.user, $0) } }
        let largest = 256
        if db.dialect == .postgres && located.count <= largest && ended.count <= largest && kept.count <= largest {
            // One statement, one round trip: the three writes as data-modifying CTEs (their
            // rows are disjoint: a (user, beacon) either ended or is kept).
            var s = SQLStatement()
            var parts: [String] = []
            if !located.isEmpty { parts.append("located AS (\(upsertLocations(located, &s)) RETURNING 1)") }
            if !ended.isEmpty { parts.append("ended AS (\(deleteStates(ended, &s)) RETURNING 1)") }
            if !kept.isEmpty { parts.append("kept AS (\(upsertStates(kept, db.dialect, &s)) RETURNING 1)") }
            if !parts.isEmpty { try await db.rows("WITH \(parts.joined(separator: ",\n")) SELECT 1", s.arguments) }
        } else {
            for chunk in located.chunkedInPowersOfTwo(largest: largest) {
                var s = SQLStatement()
                try await db.rows(upsertLocations(chunk, &s), s.arguments)
            }
            // The states that ended: on PostgreSQL a statement per slice; on SQLite one per state
            // (in process, and its planner scans the table for a row-value IN).
            if db.dialect == .sqlite {
                for key in ended {
                    try await db.rows("DELETE FROM fence_states WHERE user_id = $1 AND beacon_id = $2", [key.user.rawValue, key.beacon.rawValue])
                }
            } else {
                for chunk in ended.chunkedInPowersOfTwo(largest: largest) {
                    var s = SQLStatement()
                    try await db.rows(deleteStates(chunk, &s), s.arguments)
                }
            }
            for chunk in kept.chunkedInPowersOfTwo(largest: largest) {
                var s = SQLStatement()
                try await db.rows(upsertStates(chunk, db.dialect, &s), s.arguments)
            }
        }
        try await insertEvents(db, events)
    }

    private static func upsertLocations(_ locations: some Collection<UserLocation>, _ s: inout SQLStatement) -> String {
        let values = locations.map { l in
            "(\(s.bind(l.user.rawValue)), \(s.bind(l.position.lon)), \(s.bind(l.position.lat)), \(s.bind(l.accuracyM)), "
                + "\(s.bind(l.fixAt.millis)), \(s.bind(l.receivedAt.millis)))"
        }
        return """
            INSERT INTO user_locations(user_id, lon, lat, accuracy_m, fix_at, received_at) VALUES \(values.joined(separator: ", "))
            ON CONFLICT (user_id) DO UPDATE SET lon = excluded.lon, lat = excluded.lat, accuracy_m = excluded.accuracy_m,
                fix_at = excluded.fix_at, received_at = excluded.received_at
            """
    }

    /// PostgreSQL only (a row-value IN).
    private static func deleteStates(_ keys: some Collection<FenceKey>, _ s: inout SQLStatement) -> String {
        let pairs = keys.map { key in "(\(s.bind(key.user.rawValue)), \(s.bind(key.beacon.rawValue)))" }
        return "DELETE FROM fence_states WHERE (user_id, beacon_id) IN (VALUES \(pairs.joined(separator: ", ")))"
    }

    /// A state of a beacon deleted meanwhile is dropped (the cascade already ran). On PostGIS
    /// the beacon is locked against deletion (`FOR KEY SHARE`) while it is checked, so a delete
    /// committing on another node in between waits or is seen, instead of failing the fix with
    /// a foreign key violation.
    private static func upsertStates(_ states: some Collection<(UserID, FenceState)>, _ dialect: SQLDialect,
                                     _ s: inout SQLStatement) -> String {
        let values = states.map { user, state in
            "(\(s.bind(user.rawValue)), \(s.bind(state.beacon.rawValue)), \(s.bind(state.enteredAt.millis)), \(s.bind(state.dwelled)), "
                + "CAST(\(s.bind(state.sightedAt?.millis)) AS BIGINT))"
        }
        return """
            WITH v(user_id, beacon_id, entered_at, dwelled, sighted_at) AS (VALUES \(values.joined(separator: ", ")))
            INSERT INTO fence_states(user_id, beacon_id, entered_at, dwelled, sighted_at)
            SELECT v.user_id, v.beacon_id, v.entered_at, v.dwelled, v.sighted_at FROM v
            WHERE EXISTS (SELECT 1 FROM beacons b WHERE b.id = v.beacon_id\(dialect.forKeyShare))
            ON CONFLICT (user_id, beacon_id) DO UPDATE SET entered_at = excluded.entered_at, dwelled = excluded.dwelled,
                sighted_at = excluded.sighted_at
            """
    }

    package func loadFenceSnapshot(locationsSince since: Timestamp) async throws -> (locations: [UserLocation], states: [UserID: [FenceState]]) {
        try await read { db in
            let locations = try await db.rows("SELECT * FROM user_locations WHERE received_at >= $1", [since.millis]).map(Self.location(from:))
            var states: [UserID: [FenceState]] = [:]
            for row in try await db.rows("SELECT * FROM fence_states") {
                states[UserID(uncheckedRawValue: try row.string("user_id")), default: []].append(try Self.fenceState(from: row))
            }
            return (locations, states)
        }
    }

    // MARK: Fence decisions shared by several processes

    package var sharedFenceState: Bool { dialect == .postgres }

    package func decideFence<T: Sendable>(lock users: [UserID], near boxes: [BoundingBox], inside beacons: [BeaconID],
                                          _ decide: @escaping @Sendable (FenceSnapshot) async throws -> (FenceUpdate, T)) async throws -> T {
        // Without a shared batcher (one process decides: SQLite), a batch of one per decision.
        let batcher = fenceBatcher ?? FenceDecisionBatcher(maxBatch: 1)
        return try await batcher.decide(lock: users, near: boxes, inside: beacons, on: self, decide)
    }

    package func fenceUsersDue(enteredBefore: Timestamp, sightedBefore: Timestamp) async throws -> [UserID] {
        try await read { db in
            try await db.rows("""
                SELECT DISTINCT user_id FROM fence_states
                WHERE (NOT dwelled AND entered_at <= $1) OR (sighted_at IS NOT NULL AND sighted_at <= $2)
                ORDER BY user_id
                """, [enteredBefore.millis, sightedBefore.millis]).map { UserID(uncheckedRawValue: try $0.string("user_id")) }
        }
    }

    /// Takes the cross-process fence lock of each user (in one order, so two decisions locking
    /// the same set cannot deadlock); nothing on SQLite, whose write transaction is exclusive.
    static func lockFenceUsers(_ db: any SQLSession, _ users: Set<UserID>) async throws {
        guard db.dialect == .postgres, !users.isEmpty else { return }
        try await db.rows("""
            SELECT pg_advisory_xact_lock(k) FROM (
                SELECT DISTINCT hashtextextended('fence:' || u, 0) AS k FROM unnest($1::text[]) AS u ORDER BY k) AS keys
            """, [users.map(\.rawValue)])
    }

    /// Users located in any of `boxes` or inside any of `beacons`.
    static func fenceUsers(_ db: any SQLSession, near boxes: [BoundingBox], inside beacons: [BeaconID]) async throws -> [UserID] {
        guard !boxes.isEmpty || !beacons.isEmpty else { return [] }
        var s = SQLStatement()
        var parts: [String] = []
        for box in boxes {
            parts.append("""
                SELECT user_id FROM user_locations
                WHERE lat BETWEEN \(s.bind(box.south)) AND \(s.bind(box.north)) AND lon BETWEEN \(s.bind(box.west)) AND \(s.bind(box.east))
                """)
        }
        if !beacons.isEmpty {
            parts.append("SELECT user_id FROM fence_states WHERE \(db.dialect.contains("beacon_id", s.bind(beacons.map(\.rawValue))))")
        }
        return try await db.rows(parts.joined(separator: " UNION "), s.arguments).map { UserID(uncheckedRawValue: try $0.string("user_id")) }
    }

    static func fenceState(from row: SQLRow) throws -> FenceState {
        FenceState(beacon: BeaconID(uncheckedRawValue: try row.string("beacon_id")), enteredAt: try row.timestamp("entered_at"),
                   dwelled: try row.bool("dwelled"), sightedAt: try row.optionalTimestamp("sighted_at"))
    }

    static func location(from row: SQLRow) throws -> UserLocation {
        UserLocation(user: UserID(uncheckedRawValue: try row.string("user_id")),
                     position: Position(lon: try row.double("lon"), lat: try row.double("lat")),
                     accuracyM: try row.double("accuracy_m"), fixAt: try row.timestamp("fix_at"),
                     receivedAt: try row.timestamp("received_at"))
    }

    // MARK: Lifetimes

    package func lifetimeTransitions(after: Timestamp, upTo: Timestamp) async throws -> (started: [Beacon], ended: [Beacon]) {
        try await read { db in
            let started = try await Self.fetchBeacons(db, """
                SELECT \(Self.beaconColumns(db.dialect)) FROM beacons b WHERE b.lifetime_start > $1 AND b.lifetime_start <= $2
                ORDER BY b.lifetime_start
                """, [after.millis, upTo.millis])
            let ended = try await Self.fetchBeacons(db, """
                SELECT \(Self.beaconColumns(db.dialect)) FROM beacons b WHERE b.lifetime_end > $1 AND b.lifetime_end <= $2
                ORDER BY b.lifetime_end
                """, [after.millis, upTo.millis])
            return (started, ended)
        }
    }

    package func upcomingStarts(service: String, after: Timestamp, upTo: Timestamp) async throws -> [Beacon] {
        try await read { db in
            try await Self.fetchBeacons(db, """
                SELECT \(Self.beaconColumns(db.dialect)) FROM beacons b
                WHERE b.service = $3 AND b.lifetime_start > $1 AND b.lifetime_start <= $2
                ORDER BY b.lifetime_start
                """, [after.millis, upTo.millis, service])
        }
    }

    /// Several processes may tick (PostGIS nodes): the stored tick is locked, and a transition
    /// another process already reported (at or before the stored tick) is skipped, so each
    /// `beacon.started` / `beacon.ended` goes out once.
    package func commitLifetimeTick(upTo: Timestamp, fanOuts: [(beacon: BeaconID, fanOut: FollowerFanOut)]) async throws {
        let key = StoreSetting.lifetimeTick
        try await write { db, _ in
            try await db.rows("INSERT INTO settings(key, value) VALUES ($1, '0') ON CONFLICT (key) DO NOTHING", [key])
            let stored = try await db.row("SELECT value FROM settings WHERE key = $1\(db.dialect.forUpdate)", [key])?.string("value")
            let done = stored.flatMap(Int64.init) ?? 0
            for f in fanOuts where f.fanOut.at.millis > done {
                guard try await db.exists("SELECT 1 FROM beacons WHERE id = $1", [f.beacon.rawValue]) else { continue }
                try await Self.fanOutToFollowers(db, beacon: f.beacon, f.fanOut)
            }
            try await db.rows("UPDATE settings SET value = $2 WHERE key = $1", [key, String(max(done, upTo.millis))])
        }
    }
}

/// Keys of the `settings` table the server itself keeps.
package enum StoreSetting {
    /// Up to when lifetime transitions were reported (milliseconds since the epoch).
    package static let lifetimeTick = "lifetime_ticker_at"
}

/// A (user, beacon) fence state key, for merging updates.
private struct FenceKey: Hashable {
    let user: UserID
    let beacon: BeaconID
}
