package import DBeaconCore
import DBeaconGeo
import Foundation
import GRDB

/// The four services' state (migration v4) on SpatiaLite.
extension SpatiaLiteStore: ServiceStore {
    // MARK: Meetings

    package func joinMeeting(_ meeting: BeaconID, user: UserID, at: Timestamp) async throws -> (joined: Bool, attendees: Int) {
        try await write { db, _ in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM beacons WHERE id = ?", arguments: [meeting.rawValue]) == true else {
                throw DBeaconError.notFound("meeting \(meeting)")
            }
            try db.execute(sql: "INSERT OR IGNORE INTO meeting_attendees(meeting_id, user_id, joined_at) VALUES (?, ?, ?)",
                           arguments: [meeting.rawValue, user.rawValue, at.millis])
            let joined = db.changesCount > 0
            try Self.addFollower(db, beacon: meeting, user: user, at: at)
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM meeting_attendees WHERE meeting_id = ?",
                                         arguments: [meeting.rawValue]) ?? 0
            return (joined, count)
        }
    }

    package func leaveMeeting(_ meeting: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM meeting_attendees WHERE meeting_id = ? AND user_id = ?",
                           arguments: [meeting.rawValue, user.rawValue])
            guard db.changesCount > 0 else { return false }
            try Self.removeFollower(db, beacon: meeting, user: user)
            return true
        }
    }

    package func meetingAttendees(_ meeting: BeaconID) async throws -> [MeetingAttendee] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT a.user_id, a.joined_at, u.name FROM meeting_attendees a JOIN users u ON u.id = a.user_id
                WHERE a.meeting_id = ? ORDER BY a.joined_at, a.user_id
                """, arguments: [meeting.rawValue]).map {
                MeetingAttendee(user: UserID(uncheckedRawValue: $0["user_id"]), name: $0["name"],
                                joinedAt: Timestamp(millis: $0["joined_at"]))
            }
        }
    }

    package func attendedMeetings(user: UserID) async throws -> [BeaconID] {
        try await read { db in
            try String.fetchAll(db, sql: "SELECT meeting_id FROM meeting_attendees WHERE user_id = ? ORDER BY joined_at",
                                arguments: [user.rawValue]).map(BeaconID.init(uncheckedRawValue:))
        }
    }

    /// Attendees of a private meeting who are neither its organizer nor among its members stop
    /// attending and following it (run after the beacon's members were rewritten).
    static func dropUninvitedAttendees(_ db: Database, meeting: BeaconID) throws {
        let dropped = try String.fetchAll(db, sql: """
            SELECT a.user_id FROM meeting_attendees a JOIN beacons b ON b.id = a.meeting_id
            WHERE a.meeting_id = ? AND b.is_private = 1 AND a.user_id <> b.owner
              AND NOT EXISTS (SELECT 1 FROM beacon_members m WHERE m.beacon_id = b.id AND m.user_id = a.user_id)
            """, arguments: [meeting.rawValue])
        for user in dropped {
            try db.execute(sql: "DELETE FROM meeting_attendees WHERE meeting_id = ? AND user_id = ?", arguments: [meeting.rawValue, user])
            try removeFollower(db, beacon: meeting, user: UserID(uncheckedRawValue: user))
        }
    }

    static func addFollower(_ db: Database, beacon: BeaconID, user: UserID, at: Timestamp) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO followers(beacon_id, user_id, created_at) VALUES (?, ?, ?)",
                       arguments: [beacon.rawValue, user.rawValue, at.millis])
        if db.changesCount > 0 {
            try db.execute(sql: "UPDATE beacons SET followers_count = followers_count + 1 WHERE id = ?", arguments: [beacon.rawValue])
        }
    }

    static func removeFollower(_ db: Database, beacon: BeaconID, user: UserID) throws {
        try db.execute(sql: "DELETE FROM followers WHERE beacon_id = ? AND user_id = ?", arguments: [beacon.rawValue, user.rawValue])
        if db.changesCount > 0 {
            try db.execute(sql: "UPDATE beacons SET followers_count = followers_count - 1 WHERE id = ?", arguments: [beacon.rawValue])
        }
    }

    // MARK: Groups

    package func createGroup(_ group: TrackedGroup, beacon: Beacon) async throws {
        try await write { db, changes in
            try Self.insert(beacon, db: db)
            try db.execute(sql: """
                INSERT INTO tracked_groups(id, beacon_id, name, leader, range_m, allowed, placed, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [group.id.rawValue, group.beacon.rawValue, group.name, group.leader.rawValue, group.rangeM,
                                 group.allowed.map { JSONValue.array($0.map { .string($0.rawValue) }).jsonString },
                                 group.placed, group.createdAt.millis])
            changes.append(.upsert(beacon))
        }
    }

    static func trackedGroup(from row: Row) -> TrackedGroup {
        let allowed = (row["allowed"] as String?).flatMap { try? JSONParser.parse($0).arrayValue }
        return TrackedGroup(
            id: GroupID(uncheckedRawValue: row["id"]), beacon: BeaconID(uncheckedRawValue: row["beacon_id"]), name: row["name"],
            leader: UserID(uncheckedRawValue: row["leader"]), rangeM: row["range_m"],
            allowed: allowed.map { $0.compactMap { $0.stringValue.map(UserID.init(uncheckedRawValue:)) } },
            placed: row["placed"], createdAt: Timestamp(millis: row["created_at"]))
    }

    package func group(id: GroupID) async throws -> TrackedGroup? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM tracked_groups WHERE id = ?", arguments: [id.rawValue]).map(Self.trackedGroup)
        }
    }

    package func groups(beacons: [BeaconID]) async throws -> [TrackedGroup] {
        guard !beacons.isEmpty else { return [] }
        return try await read { db in
            var result: [TrackedGroup] = []
            for chunk in beacons.chunked(500) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                result += try Row.fetchAll(db, sql: "SELECT * FROM tracked_groups WHERE beacon_id IN (\(marks))",
                                           arguments: StatementArguments(chunk.map(\.rawValue))).map(Self.trackedGroup)
            }
            return result
        }
    }

    package func groups(involving user: UserID) async throws -> [TrackedGroup] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM tracked_groups g WHERE g.leader = :uid OR EXISTS (
                    SELECT 1 FROM group_members m WHERE m.group_id = g.id AND m.user_id = :uid AND m.status = 'active')
                ORDER BY g.created_at, g.id
                """, arguments: ["uid": user.rawValue]).map(Self.trackedGroup)
        }
    }

    package func groupMembers(_ group: GroupID) async throws -> [GroupMembership] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT m.*, u.name FROM group_members m JOIN users u ON u.id = m.user_id
                WHERE m.group_id = ? AND m.status = 'active' ORDER BY m.joined_at, m.user_id
                """, arguments: [group.rawValue]).map { row in
                GroupMembership(
                    user: UserID(uncheckedRawValue: row["user_id"]), name: row["name"], joinedAt: Timestamp(millis: row["joined_at"]),
                    rangeState: (row["range_state"] as String?).flatMap(RangeState.init(rawValue:)),
                    rangeDistanceM: row["range_distance_m"],
                    rangeChangedAt: (row["range_changed_at"] as Int64?).map(Timestamp.init(millis:)))
            }
        }
    }

    package func addGroupMember(_ group: GroupID, user: UserID, at: Timestamp, events: [Event]) async throws -> GroupJoinOutcome {
        try await write { db, _ in
            let status = try String.fetchOne(db, sql: "SELECT status FROM group_members WHERE group_id = ? AND user_id = ?",
                                             arguments: [group.rawValue, user.rawValue])
            switch status {
            case "active": return .alreadyMember
            case "removed": return .removed
            default: break
            }
            // A member who left comes back as new: range state and join time start over.
            try db.execute(sql: """
                INSERT INTO group_members(group_id, user_id, status, joined_at) VALUES (?, ?, 'active', ?)
                ON CONFLICT(group_id, user_id) DO UPDATE SET status = 'active', joined_at = excluded.joined_at,
                    range_state = NULL, range_distance_m = NULL, range_changed_at = NULL
                """, arguments: [group.rawValue, user.rawValue, at.millis])
            try Self.insertEvents(db, events)
            return .joined
        }
    }

    package func removeGroupMember(_ group: GroupID, user: UserID, removed: Bool, events: [Event],
                                   revoking access: GroupAccessRevocation?) async throws -> Bool {
        try await write { db, changes in
            if removed {
                // The row stays, marked removed, so the removed member cannot rejoin.
                try db.execute(sql: """
                    UPDATE group_members SET status = 'removed', range_state = NULL, range_distance_m = NULL,
                        range_changed_at = NULL
                    WHERE group_id = ? AND user_id = ? AND status = 'active'
                    """, arguments: [group.rawValue, user.rawValue])
            } else {
                try db.execute(sql: "DELETE FROM group_members WHERE group_id = ? AND user_id = ? AND status = 'active'",
                               arguments: [group.rawValue, user.rawValue])
            }
            guard db.changesCount > 0 else { return false }
            if let access {
                try Self.checkVersion(db, id: access.beacon.id, expected: access.expectedVersion)
                try Self.update(access.beacon, db: db)
                try db.execute(sql: "UPDATE tracked_groups SET allowed = ? WHERE id = ?",
                               arguments: [access.allowedJSON, group.rawValue])
                changes.append(.upsert(access.beacon))
            }
            try Self.insertEvents(db, events)
            return true
        }
    }

    package func applyRangeTransitions(_ group: GroupID, _ transitions: [RangeTransition], events: [Event]) async throws {
        guard !transitions.isEmpty || !events.isEmpty else { return }
        try await write { db, _ in
            for t in transitions {
                try db.execute(sql: """
                    UPDATE group_members SET range_state = ?, range_distance_m = ?, range_changed_at = ?
                    WHERE group_id = ? AND user_id = ? AND status = 'active' AND range_state IS ?
                    """, arguments: [t.new.rawValue, t.distanceM, t.at.millis, group.rawValue, t.member.rawValue,
                                     t.expected?.rawValue])
                guard db.changesCount == 1 else {
                    throw DBeaconError(.preconditionFailed, code: "range_state_changed",
                                       message: "the member's range state changed concurrently")
                }
            }
            try Self.insertEvents(db, events)
        }
    }

    package func placeGroup(_ group: GroupID, beacon: Beacon, expectedVersion: Int) async throws {
        try await write { db, changes in
            try Self.checkVersion(db, id: beacon.id, expected: expectedVersion)
            // The location may have moved since it was read: keep the stored one.
            let stored = try Row.fetchOne(db, sql: "SELECT lon, lat FROM beacons WHERE id = ?", arguments: [beacon.id.rawValue])
            var b = beacon
            if let stored { b.location = Position(lon: stored["lon"], lat: stored["lat"]) }
            try Self.update(b, db: db)
            try db.execute(sql: "UPDATE tracked_groups SET placed = 1 WHERE id = ?", arguments: [group.rawValue])
            changes.append(.upsert(b))
        }
    }

    package func userLocations(_ users: [UserID]) async throws -> [UserLocation] {
        guard !users.isEmpty else { return [] }
        return try await read { db in
            var result: [UserLocation] = []
            for chunk in users.chunked(500) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                result += try Row.fetchAll(db, sql: "SELECT * FROM user_locations WHERE user_id IN (\(marks))",
                                           arguments: StatementArguments(chunk.map(\.rawValue))).map {
                    UserLocation(user: UserID(uncheckedRawValue: $0["user_id"]), position: Position(lon: $0["lon"], lat: $0["lat"]),
                                 accuracyM: $0["accuracy_m"], fixAt: Timestamp(millis: $0["fix_at"]),
                                 receivedAt: Timestamp(millis: $0["received_at"]))
                }
            }
            return result
        }
    }

    // MARK: Tours

    package func tours(withStops places: [BeaconID]) async throws -> [BeaconID] {
        guard !places.isEmpty else { return [] }
        return try await read { db in
            var result = Set<String>()
            for chunk in places.chunked(500) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                result.formUnion(try String.fetchAll(db, sql: """
                    SELECT DISTINCT source_id FROM relationships WHERE type = 'tour' AND target_id IN (\(marks))
                    """, arguments: StatementArguments(chunk.map(\.rawValue))))
            }
            return result.sorted().map(BeaconID.init(uncheckedRawValue:))
        }
    }

    package func followTour(_ tour: BeaconID, user: UserID, at: Timestamp) async throws -> Timestamp {
        try await write { db, _ in
            try db.execute(sql: "INSERT OR IGNORE INTO tour_followers(tour_id, user_id, started_at) VALUES (?, ?, ?)",
                           arguments: [tour.rawValue, user.rawValue, at.millis])
            try Self.addFollower(db, beacon: tour, user: user, at: at)
            let start = try Int64.fetchOne(db, sql: "SELECT started_at FROM tour_followers WHERE tour_id = ? AND user_id = ?",
                                           arguments: [tour.rawValue, user.rawValue]) ?? at.millis
            return Timestamp(millis: start)
        }
    }

    package func unfollowTour(_ tour: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM tour_followers WHERE tour_id = ? AND user_id = ?", arguments: [tour.rawValue, user.rawValue])
            guard db.changesCount > 0 else { return false }
            try Self.removeFollower(db, beacon: tour, user: user)
            return true
        }
    }

    package func tourStart(_ tour: BeaconID, user: UserID) async throws -> Timestamp? {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT started_at FROM tour_followers WHERE tour_id = ? AND user_id = ?",
                               arguments: [tour.rawValue, user.rawValue]).map(Timestamp.init(millis:))
        }
    }

    package func followedTours(user: UserID, containing places: [BeaconID]) async throws -> [(tour: BeaconID, place: BeaconID, since: Timestamp)] {
        guard !places.isEmpty else { return [] }
        return try await read { db in
            let marks = Array(repeating: "?", count: places.count).joined(separator: ",")
            return try Row.fetchAll(db, sql: """
                SELECT f.tour_id, r.target_id, f.started_at FROM tour_followers f
                JOIN relationships r ON r.source_id = f.tour_id AND r.type = 'tour'
                WHERE f.user_id = ? AND r.target_id IN (\(marks))
                """, arguments: StatementArguments([user.rawValue] + places.map(\.rawValue))).map {
                (BeaconID(uncheckedRawValue: $0["tour_id"]), BeaconID(uncheckedRawValue: $0["target_id"]),
                 Timestamp(millis: $0["started_at"]))
            }
        }
    }

    package func recordVisits(_ visits: [TourVisit]) async throws {
        guard !visits.isEmpty else { return }
        try await write { db, _ in
            for v in visits {
                try db.execute(sql: """
                    INSERT OR IGNORE INTO tour_visits(tour_id, user_id, place_id, visited_at)
                    SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM tour_followers WHERE tour_id = ? AND user_id = ?)
                      AND EXISTS (SELECT 1 FROM beacons WHERE id = ?)
                    """, arguments: [v.tour.rawValue, v.user.rawValue, v.place.rawValue, v.visitedAt.millis,
                                     v.tour.rawValue, v.user.rawValue, v.place.rawValue])
            }
        }
    }

    package func tourVisits(_ tour: BeaconID, user: UserID) async throws -> [TourVisit] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT place_id, visited_at FROM tour_visits WHERE tour_id = ? AND user_id = ? ORDER BY visited_at, place_id
                """, arguments: [tour.rawValue, user.rawValue]).map {
                TourVisit(tour: tour, user: user, place: BeaconID(uncheckedRawValue: $0["place_id"]),
                          visitedAt: Timestamp(millis: $0["visited_at"]))
            }
        }
    }

    package func addPlaceMedia(_ media: PlaceMedia) async throws {
        try await write { db, _ in
            try db.execute(sql: """
                INSERT INTO place_media(id, place_id, user_id, kind, url, title, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [media.id.rawValue, media.place.rawValue, media.user.rawValue, media.content.kind,
                                 media.content.url, media.content.title, media.createdAt.millis])
        }
    }

    package func placeMedia(_ place: BeaconID, limit: Int, after: Int64?) async throws -> Page<PlaceMedia> {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM place_media WHERE place_id = ? AND seq > ? ORDER BY seq LIMIT ?
                """, arguments: [place.rawValue, after ?? 0, limit + 1])
            let page = rows.prefix(limit)
            return Page(items: page.map { row in
                let user = UserID(uncheckedRawValue: row["user_id"])
                let at = Timestamp(millis: row["created_at"])
                return PlaceMedia(id: MediaID(uncheckedRawValue: row["id"]), place: place, user: user,
                                  content: ContentRef(kind: row["kind"], url: row["url"], title: row["title"], addedBy: user,
                                                      createdAt: at),
                                  createdAt: at)
            }, next: rows.count > limit ? page.last?["seq"] : nil)
        }
    }

    // MARK: Advertising

    package func setInterests(_ user: UserID, _ interests: [(category: String, score: Int)]) async throws {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM user_interests WHERE user_id = ?", arguments: [user.rawValue])
            for (i, item) in interests.enumerated() {
                try db.execute(sql: "INSERT INTO user_interests(user_id, category, score, position) VALUES (?, ?, ?, ?)",
                               arguments: [user.rawValue, item.category, item.score, i])
            }
        }
    }

    package func interests(_ user: UserID) async throws -> [(category: String, score: Int)] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT category, score FROM user_interests WHERE user_id = ? ORDER BY position",
                             arguments: [user.rawValue]).map { ($0["category"], $0["score"]) }
        }
    }

    package func recordInteraction(promotion: BeaconID, user: UserID, type: InteractionType, at: Timestamp) async throws {
        try await write { db, _ in
            try db.execute(sql: """
                INSERT INTO promotion_interactions(promotion_id, user_id, type, source, created_at) VALUES (?, ?, ?, 'client', ?)
                """, arguments: [promotion.rawValue, user.rawValue, type.rawValue, at.millis])
        }
    }

    package func interactionCount(promotion: BeaconID, user: UserID, type: InteractionType, since: Timestamp) async throws -> Int {
        try await read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(*) FROM promotion_interactions WHERE user_id = ? AND promotion_id = ? AND type = ? AND created_at >= ?
                """, arguments: [user.rawValue, promotion.rawValue, type.rawValue, since.millis]) ?? 0
        }
    }

    package func recordPick(promotion: BeaconID, user: UserID, at: Timestamp, since: Timestamp, cap: Int) async throws -> Bool {
        try await write { db, _ in
            let recent = try Int.fetchOne(db, sql: """
                SELECT count(*) FROM promotion_interactions WHERE user_id = ? AND source = 'pick' AND created_at >= ?
                """, arguments: [user.rawValue, since.millis]) ?? 0
            guard recent < cap else { return false }
            try db.execute(sql: """
                INSERT INTO promotion_interactions(promotion_id, user_id, type, source, created_at) VALUES (?, ?, 'shown', 'pick', ?)
                """, arguments: [promotion.rawValue, user.rawValue, at.millis])
            return true
        }
    }

    package func pickTimes(user: UserID, since: Timestamp) async throws -> [Timestamp] {
        try await read { db in
            try Int64.fetchAll(db, sql: """
                SELECT created_at FROM promotion_interactions WHERE user_id = ? AND source = 'pick' AND created_at >= ?
                ORDER BY created_at
                """, arguments: [user.rawValue, since.millis]).map(Timestamp.init(millis:))
        }
    }

    package func interactionCounts(user: UserID, promotions: [BeaconID]) async throws -> [BeaconID: InteractionCounts] {
        guard !promotions.isEmpty else { return [:] }
        return try await read { db in
            var result: [BeaconID: InteractionCounts] = [:]
            for chunk in promotions.chunked(500) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                let rows = try Row.fetchAll(db, sql: """
                    SELECT promotion_id, type, count(*) AS n FROM promotion_interactions
                    WHERE user_id = ? AND promotion_id IN (\(marks)) GROUP BY promotion_id, type
                    """, arguments: StatementArguments([user.rawValue] + chunk.map(\.rawValue)))
                for row in rows {
                    let id = BeaconID(uncheckedRawValue: row["promotion_id"])
                    Self.add(row["type"], row["n"], to: &result[id, default: InteractionCounts()])
                }
            }
            return result
        }
    }

    private static func add(_ type: String, _ n: Int, to counts: inout InteractionCounts) {
        switch InteractionType(rawValue: type) {
        case .shown: counts.shown += n
        case .clicked: counts.clicked += n
        case .calendarAdd: counts.calendarAdds += n
        case nil: break
        }
    }

    package func promotionTotals(_ promotion: BeaconID) async throws -> PromotionTotals {
        try await read { db in
            var counts = InteractionCounts()
            for row in try Row.fetchAll(db, sql: """
                SELECT type, count(*) AS n FROM promotion_interactions WHERE promotion_id = ? GROUP BY type
                """, arguments: [promotion.rawValue]) {
                Self.add(row["type"], row["n"], to: &counts)
            }
            let users = try Int.fetchOne(db, sql: "SELECT count(DISTINCT user_id) FROM promotion_interactions WHERE promotion_id = ?",
                                         arguments: [promotion.rawValue]) ?? 0
            return PromotionTotals(counts: counts, uniqueUsers: users)
        }
    }
}
