package import DBeaconCore
import Foundation

/// The four services' state (migration v4), on either database.
extension SQLStore {
    // MARK: Meetings

    package func joinMeeting(_ meeting: BeaconID, user: UserID, at: Timestamp) async throws -> (joined: Bool, attendees: Int) {
        try await write { db, log in
            guard try await db.exists("SELECT 1 FROM beacons WHERE id = $1\(db.dialect.forShare)", [meeting.rawValue]) else {
                throw DBeaconError.notFound("meeting \(meeting)")
            }
            let joined = try await !db.rows("""
                INSERT INTO meeting_attendees(meeting_id, user_id, joined_at) VALUES ($1, $2, $3)
                ON CONFLICT DO NOTHING RETURNING user_id
                """, [meeting.rawValue, user.rawValue, at.millis]).isEmpty
            try await Self.addFollower(db, beacon: meeting, user: user, at: at, log: &log)
            let count = try await db.row("SELECT count(*) AS n FROM meeting_attendees WHERE meeting_id = $1", [meeting.rawValue])?.int("n") ?? 0
            return (joined, count)
        }
    }

    package func leaveMeeting(_ meeting: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, log in
            guard try await !db.rows("DELETE FROM meeting_attendees WHERE meeting_id = $1 AND user_id = $2 RETURNING user_id",
                                     [meeting.rawValue, user.rawValue]).isEmpty else { return false }
            try await Self.removeFollower(db, beacon: meeting, user: user, log: &log)
            return true
        }
    }

    package func meetingAttendees(_ meeting: BeaconID) async throws -> [MeetingAttendee] {
        try await read { db in
            try await db.rows("""
                SELECT a.user_id, a.joined_at, u.name FROM meeting_attendees a JOIN users u ON u.id = a.user_id
                WHERE a.meeting_id = $1 ORDER BY a.joined_at, a.user_id
                """, [meeting.rawValue]).map {
                MeetingAttendee(user: UserID(uncheckedRawValue: try $0.string("user_id")), name: try $0.string("name"),
                                joinedAt: try $0.timestamp("joined_at"))
            }
        }
    }

    package func attendedMeetings(user: UserID) async throws -> [BeaconID] {
        try await read { db in
            try await db.rows("SELECT meeting_id FROM meeting_attendees WHERE user_id = $1 ORDER BY joined_at", [user.rawValue])
                .map { BeaconID(uncheckedRawValue: try $0.string("meeting_id")) }
        }
    }

    /// The attendees of a private meeting who are no longer invited stop attending and
    /// following it (in the transaction that changed its invitees).
    static func dropUninvitedAttendees(_ db: any SQLSession, meeting: BeaconID, log: inout SQLWriteLog) async throws {
        // Attendees the meeting is no longer shared with: not even its notice of loss would
        // reach them (the policy's `.lossNotice`, with the attendee as the viewer).
        var s = SQLStatement()
        let id = s.bind(meeting.rawValue)
        let shared = policyClause(VisibilityPolicy.condition(for: .lossNotice), viewer: "a.user_id", at: "NULL", &s)
        let dropped = try await db.rows("""
            DELETE FROM meeting_attendees
            WHERE meeting_id = \(id) AND user_id IN (
                SELECT a.user_id FROM meeting_attendees a JOIN beacons b ON b.id = a.meeting_id
                WHERE a.meeting_id = \(id) AND NOT \(shared))
            RETURNING user_id
            """, s.arguments)
        for row in dropped {
            _ = try await removeFollower(db, beacon: meeting, user: UserID(uncheckedRawValue: try row.string("user_id")), log: &log)
        }
    }

    // MARK: Groups

    package func createGroup(_ group: TrackedGroup, beacon: Beacon) async throws {
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
        // (`fixReads`), one per read on SpatiaLite.
        guard let coalescer = fixReads?.groups else { return try await groups(involving: [user])[0] }
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
        try await write { db, _ in
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

    // MARK: Tours

    package func tours(withStops places: [BeaconID]) async throws -> [BeaconID] {
        guard !places.isEmpty else { return [] }
        return try await read { db in
            try await db.rows("""
                SELECT DISTINCT source_id FROM relationships WHERE type = 'tour' AND \(db.dialect.contains("target_id", "$1")) ORDER BY source_id
                """, [places.map(\.rawValue)]).map { BeaconID(uncheckedRawValue: try $0.string("source_id")) }
        }
    }

    package func followTour(_ tour: BeaconID, user: UserID, at: Timestamp) async throws -> Timestamp {
        try await write { db, log in
            try await db.rows("""
                INSERT INTO tour_followers(tour_id, user_id, started_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING
                """, [tour.rawValue, user.rawValue, at.millis])
            try await Self.addFollower(db, beacon: tour, user: user, at: at, log: &log)
            return try await db.row("SELECT started_at FROM tour_followers WHERE tour_id = $1 AND user_id = $2",
                                    [tour.rawValue, user.rawValue])?.timestamp("started_at") ?? at
        }
    }

    package func unfollowTour(_ tour: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, log in
            guard try await !db.rows("DELETE FROM tour_followers WHERE tour_id = $1 AND user_id = $2 RETURNING user_id",
                                     [tour.rawValue, user.rawValue]).isEmpty else { return false }
            try await Self.removeFollower(db, beacon: tour, user: user, log: &log)
            return true
        }
    }

    package func tourStart(_ tour: BeaconID, user: UserID) async throws -> Timestamp? {
        try await read { db in
            try await db.row("SELECT started_at FROM tour_followers WHERE tour_id = $1 AND user_id = $2",
                             [tour.rawValue, user.rawValue])?.timestamp("started_at")
        }
    }

    package func followedTours(user: UserID, containing places: [BeaconID]) async throws -> [FollowedTourStop] {
        guard !places.isEmpty else { return [] }
        let request = FollowedToursRequest(user: user, places: places)
        guard let coalescer = fixReads?.tours else { return try await followedTours([request])[0] }
        return try await coalescer.read(request) { [self] requests in try await followedTours(requests) }
    }

    /// `followedTours(user:containing:)` of each request, in one statement.
    func followedTours(_ requests: [FollowedToursRequest]) async throws -> [[FollowedTourStop]] {
        let users = Array(Set(requests.map(\.user.rawValue))), places = Array(Set(requests.flatMap(\.places).map(\.rawValue)))
        let rows = try await readStatement { dialect in
            ("""
            SELECT f.user_id, f.tour_id, r.target_id, f.started_at FROM tour_followers f
            JOIN relationships r ON r.source_id = f.tour_id AND r.type = 'tour'
            WHERE \(dialect.contains("f.user_id", "$1")) AND \(dialect.contains("r.target_id", "$2"))
            ORDER BY f.user_id, f.tour_id, r.target_id
            """, [users, places])
        }
        var byUser: [UserID: [FollowedTourStop]] = [:]
        for row in rows {
            byUser[UserID(uncheckedRawValue: try row.string("user_id")), default: []].append(
                (BeaconID(uncheckedRawValue: try row.string("tour_id")), BeaconID(uncheckedRawValue: try row.string("target_id")),
                 try row.timestamp("started_at")))
        }
        return requests.map { request in
            let places = Set(request.places)
            return (byUser[request.user] ?? []).filter { places.contains($0.place) }
        }
    }

    package func recordVisits(_ visits: [TourVisit]) async throws {
        guard !visits.isEmpty else { return }
        try await write { db, _ in
            for v in visits {
                try await db.rows("""
                    INSERT INTO tour_visits(tour_id, user_id, place_id, visited_at)
                    SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM tour_followers WHERE tour_id = $1 AND user_id = $2)
                      AND EXISTS (SELECT 1 FROM beacons WHERE id = $3)
                    ON CONFLICT DO NOTHING
                    """, [v.tour.rawValue, v.user.rawValue, v.place.rawValue, v.visitedAt.millis])
            }
        }
    }

    package func tourVisits(_ tour: BeaconID, user: UserID) async throws -> [TourVisit] {
        try await read { db in
            try await db.rows("""
                SELECT place_id, visited_at FROM tour_visits WHERE tour_id = $1 AND user_id = $2 ORDER BY visited_at, place_id
                """, [tour.rawValue, user.rawValue]).map {
                TourVisit(tour: tour, user: user, place: BeaconID(uncheckedRawValue: try $0.string("place_id")),
                          visitedAt: try $0.timestamp("visited_at"))
            }
        }
    }

    package func addPlaceMedia(_ media: PlaceMedia) async throws {
        try await write { db, _ in
            try await db.rows("""
                INSERT INTO place_media(id, place_id, user_id, kind, url, title, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
                """, [media.id.rawValue, media.place.rawValue, media.user.rawValue, media.content.kind,
                      media.content.url, media.content.title, media.createdAt.millis])
        }
    }

    package func placeMedia(_ place: BeaconID, limit: Int, after: Int64?) async throws -> Page<PlaceMedia> {
        try await read { db in
            let rows = try await db.rows("SELECT * FROM place_media WHERE place_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                                         [place.rawValue, after ?? 0, limit + 1])
            let page = rows.prefix(limit)
            return Page(items: try page.map(Self.placeMedia(from:)), next: rows.count > limit ? try page.last?.int64("seq") : nil)
        }
    }

    package func placeMediaItem(_ id: MediaID) async throws -> PlaceMedia? {
        try await read { db in try await db.row("SELECT * FROM place_media WHERE id = $1", [id.rawValue]).map(Self.placeMedia(from:)) }
    }

    package func deletePlaceMedia(_ id: MediaID) async throws -> Bool {
        try await write { db, _ in try await !db.rows("DELETE FROM place_media WHERE id = $1 RETURNING id", [id.rawValue]).isEmpty }
    }

    static func placeMedia(from row: SQLRow) throws -> PlaceMedia {
        let user = UserID(uncheckedRawValue: try row.string("user_id"))
        let at = try row.timestamp("created_at")
        return PlaceMedia(id: MediaID(uncheckedRawValue: try row.string("id")), place: BeaconID(uncheckedRawValue: try row.string("place_id")),
                          user: user,
                          content: ContentRef(kind: try row.string("kind"), url: try row.string("url"),
                                              title: try row.optionalString("title"), addedBy: user, createdAt: at),
                          createdAt: at)
    }

    // MARK: Advertising

    package func setInterests(_ user: UserID, _ interests: [(category: String, score: Int)]) async throws {
        try await write { db, _ in
            try await db.rows("DELETE FROM user_interests WHERE user_id = $1", [user.rawValue])
            for (i, item) in interests.enumerated() {
                try await db.rows("INSERT INTO user_interests(user_id, category, score, position) VALUES ($1, $2, $3, $4)",
                                  [user.rawValue, item.category, item.score, i])
            }
        }
    }

    package func interests(_ user: UserID) async throws -> [(category: String, score: Int)] {
        try await read { db in
            try await db.rows("SELECT category, score FROM user_interests WHERE user_id = $1 ORDER BY position", [user.rawValue])
                .map { (try $0.string("category"), try $0.int("score")) }
        }
    }

    package func recordInteraction(promotion: BeaconID, user: UserID, type: InteractionType, at: Timestamp) async throws {
        try await write { db, _ in
            try await db.rows("""
                INSERT INTO promotion_interactions(promotion_id, user_id, type, source, created_at) VALUES ($1, $2, $3, 'client', $4)
                """, [promotion.rawValue, user.rawValue, type.rawValue, at.millis])
        }
    }

    package func interactionCount(promotion: BeaconID, user: UserID, type: InteractionType, since: Timestamp) async throws -> Int {
        try await read { db in
            try await db.row("""
                SELECT count(*) AS n FROM promotion_interactions
                WHERE user_id = $1 AND promotion_id = $2 AND type = $3 AND created_at >= $4
                """, [user.rawValue, promotion.rawValue, type.rawValue, since.millis])?.int("n") ?? 0
        }
    }

    package func recordPick(promotion: BeaconID, user: UserID, at: Timestamp, since: Timestamp, cap: Int) async throws -> Bool {
        try await write { db, _ in
            // One pick decision per user at a time, across processes.
            if let lock = db.dialect.transactionLock("$1") { try await db.rows(lock, ["dbeacon_pick_" + user.rawValue]) }
            let recent = try await db.row("""
                SELECT count(*) AS n FROM promotion_interactions WHERE user_id = $1 AND source = 'pick' AND created_at >= $2
                """, [user.rawValue, since.millis])?.int("n") ?? 0
            guard recent < cap else { return false }
            try await db.rows("""
                INSERT INTO promotion_interactions(promotion_id, user_id, type, source, created_at) VALUES ($1, $2, 'shown', 'pick', $3)
                """, [promotion.rawValue, user.rawValue, at.millis])
            return true
        }
    }

    package func pickTimes(user: UserID, since: Timestamp) async throws -> [Timestamp] {
        try await read { db in
            try await db.rows("""
                SELECT created_at FROM promotion_interactions WHERE user_id = $1 AND source = 'pick' AND created_at >= $2
                ORDER BY created_at
                """, [user.rawValue, since.millis]).map { try $0.timestamp("created_at") }
        }
    }

    package func interactionCounts(user: UserID, promotions: [BeaconID]) async throws -> [BeaconID: InteractionCounts] {
        guard !promotions.isEmpty else { return [:] }
        return try await read { db in
            var result: [BeaconID: InteractionCounts] = [:]
            let arguments: [any SQLArgument] = [user.rawValue, promotions.map(\.rawValue)]
            for row in try await db.rows("""
                SELECT promotion_id, type, count(*) AS n FROM promotion_interactions
                WHERE user_id = $1 AND \(db.dialect.contains("promotion_id", "$2")) GROUP BY promotion_id, type
                """, arguments) {
                let id = BeaconID(uncheckedRawValue: try row.string("promotion_id"))
                Self.add(try row.string("type"), try row.int("n"), to: &result[id, default: InteractionCounts()])
            }
            for row in try await db.rows("""
                SELECT promotion_id FROM promotion_saves WHERE user_id = $1 AND \(db.dialect.contains("promotion_id", "$2"))
                """, arguments) {
                result[BeaconID(uncheckedRawValue: try row.string("promotion_id")), default: InteractionCounts()].saved = 1
            }
            for row in try await db.rows("""
                SELECT promotion_id, rating FROM promotion_ratings WHERE user_id = $1 AND \(db.dialect.contains("promotion_id", "$2"))
                """, arguments) {
                result[BeaconID(uncheckedRawValue: try row.string("promotion_id")), default: InteractionCounts()].rating = try row.int("rating")
            }
            return result
        }
    }

    private static func add(_ type: String, _ n: Int, to counts: inout InteractionCounts) {
        switch InteractionType(rawValue: type) {
        case .shown: counts.shown += n
        case .clicked: counts.clicked += n
        case .calendarAdd: counts.calendarAdds += n
        case .saved, .rated, .feedback, nil: break  // their own tables
        }
    }

    package func promotionTotals(_ promotion: BeaconID) async throws -> PromotionTotals {
        try await read { db in
            var counts = InteractionCounts()
            for row in try await db.rows("SELECT type, count(*) AS n FROM promotion_interactions WHERE promotion_id = $1 GROUP BY type",
                                         [promotion.rawValue]) {
                Self.add(try row.string("type"), try row.int("n"), to: &counts)
            }
            let id = promotion.rawValue
            let users = try await db.row("""
                SELECT count(DISTINCT user_id) AS n FROM (
                    SELECT user_id FROM promotion_interactions WHERE promotion_id = $1
                    UNION SELECT user_id FROM promotion_saves WHERE promotion_id = $1
                    UNION SELECT user_id FROM promotion_ratings WHERE promotion_id = $1
                    UNION SELECT user_id FROM promotion_feedback WHERE promotion_id = $1) AS u
                """, [id])?.int("n") ?? 0
            let saves = try await db.row("SELECT count(*) AS n FROM promotion_saves WHERE promotion_id = $1", [id])?.int("n") ?? 0
            let ratings = try await db.row("""
                SELECT count(*) AS n, COALESCE(sum(rating), 0) AS total FROM promotion_ratings WHERE promotion_id = $1
                """, [id])
            let feedback = try await db.row("SELECT count(*) AS n FROM promotion_feedback WHERE promotion_id = $1", [id])?.int("n") ?? 0
            return PromotionTotals(counts: counts, uniqueUsers: users, saves: saves, ratings: try ratings?.int("n") ?? 0,
                                   ratingSum: try ratings?.int("total") ?? 0, feedback: feedback)
        }
    }

    // MARK: Saved items, ratings, feedback

    package func savePromotion(_ promotion: BeaconID, user: UserID, at: Timestamp) async throws {
        try await write { db, _ in
            try await db.rows("""
                INSERT INTO promotion_saves(promotion_id, user_id, saved_at) VALUES ($1, $2, $3)
                ON CONFLICT (promotion_id, user_id) DO NOTHING
                """, [promotion.rawValue, user.rawValue, at.millis])
        }
    }

    package func unsavePromotion(_ promotion: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, _ in
            try await !db.rows("DELETE FROM promotion_saves WHERE promotion_id = $1 AND user_id = $2 RETURNING user_id",
                               [promotion.rawValue, user.rawValue]).isEmpty
        }
    }

    package func savedPromotions(user: UserID) async throws -> [(promotion: BeaconID, savedAt: Timestamp)] {
        try await read { db in
            try await db.rows("SELECT promotion_id, saved_at FROM promotion_saves WHERE user_id = $1 ORDER BY saved_at DESC, promotion_id",
                              [user.rawValue]).map {
                (BeaconID(uncheckedRawValue: try $0.string("promotion_id")), try $0.timestamp("saved_at"))
            }
        }
    }

    package func ratePromotion(_ promotion: BeaconID, user: UserID, rating: Int, at: Timestamp) async throws -> Bool {
        try await write { db, _ in
            try await !db.rows("""
                INSERT INTO promotion_ratings(promotion_id, user_id, rating, created_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (promotion_id, user_id) DO NOTHING RETURNING user_id
                """, [promotion.rawValue, user.rawValue, rating, at.millis]).isEmpty
        }
    }

    package func addPromotionFeedback(_ promotion: BeaconID, user: UserID, text: String, at: Timestamp) async throws {
        try await write { db, _ in
            try await db.rows("INSERT INTO promotion_feedback(promotion_id, user_id, text, created_at) VALUES ($1, $2, $3, $4)",
                              [promotion.rawValue, user.rawValue, text, at.millis])
        }
    }

    package func promotionFeedbackCount(_ promotion: BeaconID, user: UserID, since: Timestamp) async throws -> Int {
        try await read { db in
            try await db.row("""
                SELECT count(*) AS n FROM promotion_feedback WHERE promotion_id = $1 AND user_id = $2 AND created_at >= $3
                """, [promotion.rawValue, user.rawValue, since.millis])?.int("n") ?? 0
        }
    }

    package func promotionFeedback(_ promotion: BeaconID, limit: Int, after: Int64?) async throws -> Page<PromotionFeedback> {
        try await read { db in
            let rows = try await db.rows("""
                SELECT seq, text, created_at FROM promotion_feedback WHERE promotion_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
                """, [promotion.rawValue, after ?? 0, limit + 1])
            let page = rows.prefix(limit)
            return Page(items: try page.map { PromotionFeedback(text: try $0.string("text"), createdAt: try $0.timestamp("created_at")) },
                        next: rows.count > limit ? try page.last?.int64("seq") : nil)
        }
    }
}
