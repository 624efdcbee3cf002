/// One consumer's interaction counts with one promotion (the inputs of the Noticon score).
package struct InteractionCounts: Sendable, Hashable {
    package var shown = 0
    package var clicked = 0
    package var calendarAdds = 0
    /// 1 while the consumer keeps the promotion saved, else 0.
    package var saved = 0
    /// The consumer's rating (1–5), if they rated it.
    package var rating: Int?

    package init(shown: Int = 0, clicked: Int = 0, calendarAdds: Int = 0, saved: Int = 0, rating: Int? = nil) {
        self.shown = shown
        self.clicked = clicked
        self.calendarAdds = calendarAdds
        self.saved = saved
        self.rating = rating
    }
}

/// Totals of a promotion over all consumers.
package struct PromotionTotals: Sendable, Hashable {
    package var counts: InteractionCounts
    package var uniqueUsers: Int
    /// Consumers who keep it saved now.
    package var saves = 0
    package var ratings = 0
    package var ratingSum = 0
    package var feedback = 0

    package init(counts: InteractionCounts, uniqueUsers: Int, saves: Int = 0, ratings: Int = 0, ratingSum: Int = 0, feedback: Int = 0) {
        self.counts = counts
        self.uniqueUsers = uniqueUsers
        self.saves = saves
        self.ratings = ratings
        self.ratingSum = ratingSum
        self.feedback = feedback
    }

    /// The mean rating, nil when nobody rated.
    package var averageRating: Double? { ratings > 0 ? Double(ratingSum) / Double(ratings) : nil }
}

/// A consumer's feedback on a promotion, as the advertiser reads it (without who wrote it).
package struct PromotionFeedback: Sendable, Hashable {
    package var text: String
    package var createdAt: Timestamp

    package init(text: String, createdAt: Timestamp) {
        self.text = text
        self.createdAt = createdAt
    }
}
