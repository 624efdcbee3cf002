package import DBeaconCore
import Foundation

/// How erasing a user treats every table of the schema (issue 43), in the order the rules run.
/// `schema/*/v13_accounts.sql` lists the same rules beside the tables' definitions; the erasure
/// suite reads the tables from the schema itself and fails for one that is in none of `rules`,
/// `cascades` and `exempt`, so a new table cannot ship without deciding what erasure does to it.
package enum ErasurePlan {
    /// One table's rule: what it does, and the statements that do it.
    package struct Rule: Sendable {
        package let table: String
        package let summary: String
        let run: @Sendable (ErasureRun) async throws -> Void
    }

    /// The rules, in the order they run (events first, before the notices are written; the
    /// user's row last, after every row that refers to it).
    package static let rules: [Rule] = [
        Rule(table: "events", summary: "addressed to the user, about the user's beacons, or naming the user: deleted") { r in
            let u = r.user.rawValue
            var n = try await r.db.rows("DELETE FROM events WHERE recipient = $1 RETURNING seq", [u]).count
            if !r.owned.isEmpty {
                n += try await r.db.rows("DELETE FROM events WHERE \(r.db.dialect.contains("beacon_id", "$1")) RETURNING seq",
                                         [r.owned.map(\.id.rawValue)]).count
            }
            n += try await r.db.rows("DELETE FROM events WHERE \(r.db.dialect.containsText("data", "$1")) RETURNING seq", [u]).count
            r.report.count("events", n)
        },
        Rule(table: "followers", summary: "the user's follows: deleted (the beacons' follower counts go down)") { r in
            let rows = try await r.db.rows("DELETE FROM followers WHERE user_id = $1 RETURNING beacon_id", [r.user.rawValue])
            for row in rows {
                let beacon = try row.string("beacon_id")
                try await r.db.rows("UPDATE beacons SET followers_count = followers_count - 1 WHERE id = $1", [beacon])
                r.log.touch(BeaconID(uncheckedRawValue: beacon))
            }
            r.report.count("followers", rows.count)
        },
        Rule(table: "meeting_attendees", summary: "the user's attendance: deleted") { r in
            try await r.deleteRows("meeting_attendees", "user_id")
        },
        Rule(table: "group_members", summary: "the user's memberships: deleted (the groups get group.member_left without the member)") { r in
            try await r.deleteRows("group_members", "user_id")
        },
        Rule(table: "tracked_groups", summary: "groups the user leads go with their beacon; others' allowed lists lose the user") { r in
            let rows = try await r.db.rows("""
                SELECT id, allowed FROM tracked_groups WHERE allowed IS NOT NULL AND \(r.db.dialect.containsText("allowed", "$1"))
                """, [r.user.rawValue])
            for row in rows {
                guard let allowed = try JSONParser.parse(try row.string("allowed")).arrayValue else { continue }
                let kept = allowed.filter { $0.stringValue != r.user.rawValue }
                try await r.db.rows("UPDATE tracked_groups SET allowed = $1 WHERE id = $2",
                                    [JSONValue.array(kept).jsonString, try row.string("id")])
                r.report.count("tracked_groups", 1)
            }
        },
        Rule(table: "beacon_members", summary: "the user leaves others' visibility members (a new version of each beacon)") { r in
            let rows = try await r.db.rows("""
                DELETE FROM beacon_members WHERE user_id = $1 AND beacon_id IN (SELECT id FROM beacons WHERE owner <> $1)
                RETURNING beacon_id
                """, [r.user.rawValue])
            for row in rows { r.redacted.insert(BeaconID(uncheckedRawValue: try row.string("beacon_id"))) }
            r.report.count("beacon_members", rows.count)
        },
        Rule(table: "beacons", summary: "the user's beacons: deleted with their children; others' lose the content the user added") { r in
            // Content the user added to others' beacons.
            let rows = try await r.db.rows("""
                SELECT id, content FROM beacons WHERE owner <> $1 AND \(r.db.dialect.containsText("content", "$1"))
                """, [r.user.rawValue])
            for row in rows {
                let content = StoredBeacon.content(fromColumn: try row.string("content"))
                let kept = content.filter { $0.addedBy != r.user }
                guard kept.count != content.count else { continue }
                let id = try row.string("id")
                try await r.db.rows("UPDATE beacons SET content = $1 WHERE id = $2", [StoredBeacon.contentColumn(kept), id])
                r.redacted.insert(BeaconID(uncheckedRawValue: id))
            }
            // A new version of each beacon the user left (members, content), once.
            if !r.redacted.isEmpty {
                let ids = r.redacted.sorted().map(\.rawValue)
                try await r.db.rows("UPDATE beacons SET version = version + 1, updated_at = $1 WHERE \(r.db.dialect.contains("id", "$2"))",
                                    [r.at.millis, ids])
                for id in r.redacted.sorted() { r.log.touch(id) }
                r.report.redactedBeacons = r.redacted.sorted()
                r.report.count("beacons", r.redacted.count)
            }
            // The user's own beacons. Beacons linking to them lose those relationships (cascade).
            guard !r.owned.isEmpty else { return }
            let ids = r.owned.map(\.id.rawValue)
            let linking = try await r.db.rows("""
                SELECT DISTINCT source_id FROM relationships
                WHERE \(r.db.dialect.contains("target_id", "$1")) AND NOT \(r.db.dialect.contains("source_id", "$1"))
                """, [ids])
            try await r.db.rows("DELETE FROM beacons WHERE owner = $1", [r.user.rawValue])
            for b in r.owned { r.log.changes.append(.delete(b.id)) }
            for row in linking { r.log.touch(BeaconID(uncheckedRawValue: try row.string("source_id"))) }
            r.report.beacons = r.owned.map(\.id)
            r.report.count("beacons", r.owned.count)
        },
        Rule(table: "user_locations", summary: "deleted") { r in try await r.deleteRows("user_locations", "user_id") },
        Rule(table: "fence_states", summary: "deleted") { r in try await r.deleteRows("fence_states", "user_id") },
        Rule(table: "sighting_batches", summary: "deleted") { r in try await r.deleteRows("sighting_batches", "user_id") },
        Rule(table: "tag_follows", summary: "deleted") { r in try await r.deleteRows("tag_follows", "user_id") },
        Rule(table: "user_interests", summary: "deleted") { r in try await r.deleteRows("user_interests", "user_id") },
        Rule(table: "promotion_interactions", summary: "deleted (others' promotion statistics count them no more)") { r in
            try await r.deleteRows("promotion_interactions", "user_id")
        },
        Rule(table: "promotion_saves", summary: "deleted") { r in try await r.deleteRows("promotion_saves", "user_id") },
        Rule(table: "promotion_ratings", summary: "deleted") { r in try await r.deleteRows("promotion_ratings", "user_id") },
        Rule(table: "promotion_feedback", summary: "deleted") { r in try await r.deleteRows("promotion_feedback", "user_id") },
        Rule(table: "place_media", summary: "media the user shared at places: deleted") { r in try await r.deleteRows("place_media", "user_id") },
        Rule(table: "tour_followers", summary: "deleted") { r in try await r.deleteRows("tour_followers", "user_id") },
        Rule(table: "webhooks", summary: "the user's endpoints: deleted with their outbox rows and delivery attempts") { r in
            try await r.deleteRows("webhooks", "owner")
        },
        Rule(table: "users", summary: "the row: deleted; a SHA-256 of the id goes to retired_users") { r in
            try await r.deleteRows("users", "id")
            try await r.db.rows("INSERT INTO retired_users(id_hash) VALUES ($1) ON CONFLICT (id_hash) DO NOTHING",
                                [SQLBlob(RetiredIDs.hash(r.user))])
        },
    ]

    /// Tables whose rows of the user go by a foreign key's `ON DELETE CASCADE` when a rule
    /// deletes what they refer to (a rule of their own would change nothing: the erasure
    /// suite's mutants must each be caught, and the sweep checks these rows are gone).
    package static let cascades: [String: String] = [
        "devices": "with the user's row (their tokens stop at once)",
        "phone_states": "with the user's row",
        "tour_visits": "with the user's tour_followers rows",
        "registry_entries": "with the user's beacons (an entry's owner is its beacon's owner)",
    ]

    /// Tables that hold nothing of a user once the rules ran, and why.
    package static let exempt: [String: String] = [
        "settings": "server settings only",
        "retired_users": "SHA-256 hashes of erased ids, so an id is never issued again",
        "beacon_tags": "rows of beacons, gone with the user's beacons",
        "relationships": "links between beacons, gone with the user's beacons",
        "outbox": "deliveries of events and webhooks, gone with them",
        "delivery_attempts": "attempts of deliveries, gone with them",
        "beacon_changes": "ids of changed beacons (never users) for ten minutes, so other processes drop deleted ones; then pruned",
    ]
}

/// One erasure in progress, inside its transaction.
final class ErasureRun: @unchecked Sendable {
    let db: any SQLSession
    let user: UserID
    let at: Timestamp
    /// The user's beacons, as they were when the erasure began.
    var owned: [(id: BeaconID, name: String, service: String?)] = []
    /// Others' beacons the user left (members, content): each gets a new version.
    var redacted = Set<BeaconID>()
    var log: SQLWriteLog
    var report = ErasureReport()

    init(db: any SQLSession, user: UserID, at: Timestamp, log: SQLWriteLog) {
        self.db = db
        self.user = user
        self.at = at
        self.log = log
    }

    /// Deletes the user's rows of `table` (by `column`), counted.
    func deleteRows(_ table: String, _ column: String) async throws {
        let n = try await db.rows("DELETE FROM \(table) WHERE \(column) = $1 RETURNING 1 AS one", [user.rawValue]).count
        report.count(table, n)
    }
}

extension SQLStore {
    package func eraseUser(_ id: UserID, at: Timestamp, skipping: Set<String>) async throws -> ErasureReport? {
        try await write { db, log in
            // SQLite overwrites what it frees in this transaction (no erased row lingers in a
            // free page of the file); set back for the writes that follow.
            if db.dialect == .sqlite { try await db.rows("PRAGMA secure_delete = ON") }
            do {
                let report = try await Self.erase(id, at: at, skipping: skipping, db: db, log: &log)
                if db.dialect == .sqlite { try await db.rows("PRAGMA secure_delete = OFF") }
                return report
            } catch {
                if db.dialect == .sqlite { _ = try? await db.rows("PRAGMA secure_delete = OFF") }
                throw error
            }
        }
    }

    private static func erase(_ id: UserID, at: Timestamp, skipping: Set<String>, db: any SQLSession,
                              log: inout SQLWriteLog) async throws -> ErasureReport? {
        // The user's row first (locked on PostgreSQL), then their fence lock: a fix decided on
        // another node waits, and then finds no such user (`FenceDecisionBatcher`).
        guard try await db.row("SELECT id FROM users WHERE id = $1\(db.dialect.forUpdate)", [id.rawValue]) != nil else { return nil }
        try await lockFenceUsers(db, [id])
        let run = ErasureRun(db: db, user: id, at: at, log: log)
        run.owned = try await db.rows("SELECT id, name, service FROM beacons WHERE owner = $1 ORDER BY seq", [id.rawValue]).map {
            (BeaconID(uncheckedRawValue: try $0.string("id")), try $0.string("name"), try $0.optionalString("service"))
        }
        // Who must be told, read before the rows that say so go.
        let groupsLeft = try await db.rows("""
            SELECT g.id, g.beacon_id, g.name FROM group_members m JOIN tracked_groups g ON g.id = m.group_id
            WHERE m.user_id = $1 AND m.status = 'active' AND g.leader <> $1 ORDER BY g.id
            """, [id.rawValue]).map { (GroupID(uncheckedRawValue: try $0.string("id")), BeaconID(uncheckedRawValue: try $0.string("beacon_id")),
                                        try $0.string("name")) }
        var groupNotices: [Event] = []
        for (group, beacon, name) in groupsLeft {
            let others = try await db.rows("""
                SELECT leader AS user_id FROM tracked_groups WHERE id = $1
                UNION SELECT user_id FROM group_members WHERE group_id = $1 AND status = 'active' AND user_id <> $2
                """, [group.rawValue, id.rawValue]).map { UserID(uncheckedRawValue: try $0.string("user_id")) }.sorted()
            // The member is not named: the notice says that someone left, and why.
            let data = GroupMemberEventData(group: group, beacon: beacon, name: name, member: nil, memberName: nil,
                                            extra: ["reason": .string("account_deleted"), "at": .string(at.rfc3339)]).json
            groupNotices += others.map { Event(type: .memberLeft, createdAt: at, recipient: $0, beacon: beacon, data: data) }
        }
        for rule in ErasurePlan.rules where !skipping.contains(rule.table) {
            try await rule.run(run)
            if rule.table == "events" {
                // The notices, after the events about the user's beacons are gone (followers hear
                // of each deletion as of any; the groups, that a member left).
                for b in run.owned {
                    let type: EventType = b.service == ServiceKind.meeting ? .meetingCancelled : .deleted
                    let fanOut = FollowerFanOut(type: type, data: ["beacon": .string(b.id.rawValue), "name": .string(b.name)],
                                                at: at, requireAlive: false)
                    run.report.notices += try await fanOutToFollowers(db, beacon: b.id, fanOut, excluding: id)
                }
                try await insertEvents(db, groupNotices)
                run.report.notices += groupNotices.count
            }
        }
        run.log.fencesChanged = true
        run.log.accountsChanged.append(id)
        log = run.log
        return run.report
    }
}
