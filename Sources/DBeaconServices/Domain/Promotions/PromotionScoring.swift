package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import Synchronization

/// The Noticon ad choice (CUHK report, ch. 5.5.1), as a pure function.
package enum PromotionScoring {
    /// score = 10·interest − shown − 5·clicked − 100·calendar adds.
    package static func score(interest: Int, counts: InteractionCounts) -> Int {
        10 * interest - counts.shown - 5 * counts.clicked - 100 * counts.calendarAdds
    }

    /// The interest score of a promotion's category for a consumer: the best score among its
    /// category tags (all tags but `promotion`) that the consumer rated, 0 when none.
    package static func interest(of tags: [String], in interests: [String: Int]) -> Int {
        tags.filter { $0 != ServiceKind.promotion }.compactMap { interests[$0] }.max() ?? 0
    }

    /// One pass over `items`, choosing among those with the highest score each with equal
    /// probability (reservoir sampling of size one: the k-th tie replaces the choice with
    /// probability 1/k). Noticon's listing draws `arc4random() % (samescore + 1)` after the
    /// increment, i.e. 1/(k+1), which is not uniform; this is the corrected rule.
    package static func chooseBest<T, G: RandomNumberGenerator>(_ items: [T], score: (T) -> Int,
                                                                using rng: inout G) -> (chosen: T?, best: Int?, tied: Int) {
        var chosen: T?
        var best: Int?
        var tied = 0
        for item in items {
            let s = score(item)
            if best == nil || s > best! {
                best = s
                chosen = item
                tied = 1
            } else if s == best! {
                tied += 1
                if Int.random(in: 0..<tied, using: &rng) == 0 { chosen = item }
            }
        }
        return (chosen, best, tied)
    }
}
