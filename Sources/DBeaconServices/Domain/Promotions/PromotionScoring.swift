package import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Synchronization

/// The Noticon ad choice (CUHK report, ch. 5.5.1), as a pure function.
package enum PromotionScoring {
    /// score = 10·interest − shown − 5·clicked − 100·calendar adds (Noticon), extended with the
    /// rest of its interaction set: − 30 while the consumer keeps it saved (they have it; no
    /// need to push it again) and + 5·(rating − 3) once rated (a 5 raises it by 10, a 1 lowers
    /// it by 10). Feedback text does not change the score.
    package static func score(interest: Int, counts: InteractionCounts) -> Int {
        10 * interest - counts.shown - 5 * counts.clicked - 100 * counts.calendarAdds - 30 * counts.saved
            + 5 * ((counts.rating ?? 3) - 3)
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
