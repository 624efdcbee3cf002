package import DBeaconCore
import Foundation

/// Group tracking's groups, members and range states (migration v4), on either database.
extension SQLStore {
    package func createGroup(_ group: TrackedGroup, beacon: Beacon) async throws {
        defer { grouplessUsers?.involved(group.leader) }
        try await write { db, log in
            try await Self.insertRow(beacon, db: db)
            try await Self.writeChildren(beacon, db: db, replacing: false)
            try await db.rows("""
                INSERT INTO tracked_groups(id, beacon_id, name, leader, range_m, allowed, placed, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                """, [group.id.rawValue, group.beacon.rawValue, group.name, group.leader.rawValue, group.rangeM,
                      group.allowed.map { JSONValue.array($0.map { .string($0.rawValue) }).jsonString },
                      group.placed, group.createdAt.millis])
            log.changes.append(.upsert(beacon))
        }
    }

    static func trackedGroup(from row: SQLRow) throws -> TrackedGroup {
        let allowed = try row.optionalString("allowed").flatMap { try? JSONParser.parse($0).arrayValue }
        return TrackedGroup(
            id: GroupID(uncheckedRawValue: try row.string("id")), beacon: BeaconID(uncheckedRawValue: try row.string("beacon_id")),
            name: try row.string("name"), leader: UserID(uncheckedRawValue: try row.string("leader")), rangeM: try row.double("range_m"),
            allowed: allowed.map { $0.compactMap { $0.stringValue.map(UserID.init(uncheckedRawValue:)) } },
            placed: try row.bool("placed"), createdAt: try row.timestamp("created_at"))
    }

    package func group(id: GroupID) async throws -> TrackedGroup? {
        try await read { db in try await db.row("SELECT * FROM tracked_groups WHERE id = $1", [id.rawValue]).map(Self.trackedGroup) }
    }

    package func groups(beacons: [BeaconID]) async throws -> [TrackedGroup] {
        guard !beacons.isEmpty else { return [] }
        return try await read { db in
            try await db.rows("SELECT * FROM tracked_groups WHERE \(db.dialect.contains("beacon_id", "$1"))", [beacons.map(\.rawValue)]).map(Self.trackedGroup)
        }
    }

    package func groups(involving user: UserID) async throws -> [TrackedGroup] {
        // Read for every fix: one statement for all the fixes reading at once on PostgreSQL
        // (`fixReads`); on SpatiaLite, one per read, none for a user known to be in no group.
        guard let coalescer = fixReads?.groups else {
            guard let groupless = grouplessUsers else { return try await groups(involving: [user])[0] }
            let known = groupless.lookup(user)
            if known.groupless { return [] }
            let found = try await groups(involving: [user])[0]
            if found.isEmpty { groupless.remember(user, readAt: known.generation) }
            return found
        }
        return try await coalescer.read(user) { [self] users in try await groups(involving: users) }
    }

    /// `groups(involving:)` of each user, in one statement.
    func groups(involving users: [UserID]) async throws -> [[TrackedGroup]] {
        let rows = try await readStatement { dialect in
            ("""
            SELECT x.involved, g.* FROM (
                SELECT leader AS involved, id AS group_id FROM tracked_groups WHERE \(dialect.contains("leader", "$1"))
                UNION
                SELECT user_id, group_id FROM group_members WHERE \(dialect.contains("user_id", "$1")) AND status = 'active'
            ) AS x JOIN tracked_groups g ON g.id = x.group_id
            ORDER BY g.created_at, g.id
            """, [users.map(\.rawValue)])
        }
        var byUser: [UserID: [TrackedGroup]] = [:]
        for row in rows { byUser[UserID(uncheckedRawValue: try row.string("involved")), default: []].append(try Self.trackedGroup(from: row)) }
        return users.map { byUser[$0] ?? [] }
    }

    package func groupMembers(_ group: GroupID) async throws -> [GroupMembership] {
        try await read { db in
            try await db.rows("""
                SELECT m.*, u.name FROM group_members m JOIN users u ON u.id = m.user_id
                WHERE m.group_id = $1 AND m.status = 'active' ORDER BY m.joined_at, m.user_id
                """, [group.rawValue]).map { row in
                GroupMembership(
                    user: UserID(uncheckedRawValue: try row.string("user_id")), name: try row.string("name"),
                    joinedAt: try row.timestamp("joined_at"),
                    rangeState: try row.optionalString("range_state").flatMap(RangeState.init(rawValue:)),
                    rangeDistanceM: try row.optionalDouble("range_distance_m"),
                    rangeChangedAt: try row.optionalTimestamp("range_changed_at"))
            }
        }
    }

    package func addGroupMember(_ group: GroupID, user: UserID, at: Timestamp, events: [Event]) async throws -> GroupJoinOutcome {
        defer { grouplessUsers?.involved(user) }
        return try await write { db, _ in
            // The group row serialises joins of one group across processes.
            guard try await db.exists("SELECT 1 FROM tracked_groups WHERE id = $1\(db.dialect.forUpdate)", [group.rawValue]) else {
                throw DBeaconError.notFound("group \(group)")
            }
            let status = try await db.row("SELECT status FROM group_members WHERE group_id = $1 AND user_id = $2",
                                          [group.rawValue, user.rawValue])?.string("status")
            switch status {
            case "active": return .alreadyMember
            case "removed": return .removed
            default: break
            }
            try await db.rows("""
                INSERT INTO group_members(group_id, user_id, status, joined_at) VALUES ($1, $2, 'active', $3)
                ON CONFLICT (group_id, user_id) DO UPDATE SET status = 'active', joined_at = excluded.joined_at,
                    range_state = NULL, range_distance_m = NULL, range_changed_at = NULL
                """, [group.rawValue, user.rawValue, at.millis])
            try await Self.insertEvents(db, events)
            return .joined
        }
    }

    package func removeGroupMember(_ group: GroupID, user: UserID, removed: Bool, events: [Event],
                                   revoking access: GroupAccessRevocation?) async throws -> Bool {
        try await write { db, log in
            let changed: [SQLRow]
            if removed {
                changed = try await db.rows("""
                    UPDATE group_members SET status = 'removed', range_state = NULL, range_distance_m = NULL, range_changed_at = NULL
                    WHERE group_id = $1 AND user_id = $2 AND status = 'active' RETURNING user_id
                    """, [group.rawValue, user.rawValue])
            } else {
                changed = try await db.rows("""
                    DELETE FROM group_members WHERE group_id = $1 AND user_id = $2 AND status = 'active' RETURNING user_id
                    """, [group.rawValue, user.rawValue])
            }
            guard !changed.isEmpty else { return false }
            if let access {
                try await Self.checkVersion(db, id: access.beacon.id, expected: access.expectedVersion)
                try await Self.update(access.beacon, db: db)
                try await db.rows("UPDATE tracked_groups SET allowed = $1 WHERE id = $2", [access.allowedJSON, group.rawValue])
                log.changes.append(.upsert(access.beacon))
            }
            try await Self.insertEvents(db, events)
            return true
        }
    }

    package func applyRangeTransitions(_ group: GroupID, _ transitions: [RangeTransition], events: [Event]) async throws {
        guard !transitions.isEmpty || !events.isEmpty else { return }
        try await write { db, _ in
            for t in transitions {
                let updated = try await db.rows("""
                    UPDATE group_members SET range_state = $1, range_distance_m = $2, range_changed_at = $3
                    WHERE group_id = $4 AND user_id = $5 AND status = 'active' AND range_state IS NOT DISTINCT FROM CAST($6 AS TEXT)
                    RETURNING user_id
                    """, [t.new.rawValue, t.distanceM, t.at.millis, group.rawValue, t.member.rawValue, t.expected?.rawValue])
                guard updated.count == 1 else {
                    throw DBeaconError(.preconditionFailed, code: "range_state_changed",
                                       message: "the member's range state changed concurrently")
                }
            }
            try await Self.insertEvents(db, events)
        }
    }

    package func placeGroup(_ group: GroupID, beacon: Beacon, expectedVersion: Int) async throws {
        try await write { db, log in
            try await Self.checkVersion(db, id: beacon.id, expected: expectedVersion)
            var b = beacon
            if let stored = try await db.row("SELECT lon, lat FROM beacons WHERE id = $1", [beacon.id.rawValue]) {
                b.location = Position(lon: try stored.double("lon"), lat: try stored.double("lat"))
            }
            try await Self.update(b, db: db)
            try await db.rows("UPDATE tracked_groups SET placed = true WHERE id = $1", [group.rawValue])
            log.changes.append(.upsert(b))
        }
    }

    package func userLocations(_ users: [UserID]) async throws -> [UserLocation] {
        guard !users.isEmpty else { return [] }
        return try await read { db in
            try await db.rows("SELECT * FROM user_locations WHERE \(db.dialect.contains("user_id", "$1"))", [users.map(\.rawValue)]).map(Self.location(from:))
        }
    }
}
