/// One consumer's interaction counts with one promotion (the inputs of the Noticon score).
package struct InteractionCounts: Sendable, Hashable {
    package var shown = 0
    package var clicked = 0
    package var calendarAdds = 0

    package init(shown: Int = 0, clicked: Int = 0, calendarAdds: Int = 0) {
        self.shown = shown
        self.clicked = clicked
        self.calendarAdds = calendarAdds
    }
}

/// Totals of a promotion over all consumers.
package struct PromotionTotals: Sendable, Hashable {
    package var counts: InteractionCounts
    package var uniqueUsers: Int

    package init(counts: InteractionCounts, uniqueUsers: Int) {
        self.counts = counts
        self.uniqueUsers = uniqueUsers
    }
}
