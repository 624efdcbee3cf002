package import DBeaconCore
import Foundation

/// Location-based advertising: interests, interactions, picks and totals (migration v4), on either database.
extension SQLStore {
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
}

/// Promotions saved, rated and commented on.
extension SQLStore {
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
