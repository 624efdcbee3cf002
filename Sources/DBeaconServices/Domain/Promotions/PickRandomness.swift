import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Synchronization

/// The random source of picks; tests substitute a seeded one.
package final class PickRandomness: Sendable {
    private let generator: Mutex<(any RandomNumberGenerator & Sendable)?>

    /// The system generator (nil) or a given one.
    package init(_ generator: (any RandomNumberGenerator & Sendable)? = nil) {
        self.generator = Mutex(generator)
    }

    /// Index of the chosen item among `count`, the best score and how many shared it.
    func choose(count: Int, score: (Int) -> Int) -> (chosen: Int?, best: Int?, tied: Int) {
        generator.withLock { g in
            guard var rng = g else {
                var system = SystemRandomNumberGenerator()
                return PromotionScoring.chooseBest(Array(0..<count), score: score, using: &system)
            }
            let result = PromotionScoring.chooseBest(Array(0..<count), score: score, using: &rng)
            g = rng
            return result
        }
    }
}
