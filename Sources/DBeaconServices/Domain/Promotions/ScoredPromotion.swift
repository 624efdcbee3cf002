package import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Synchronization

/// A promotion with its distance from the consumer and its score for them.
package struct ScoredPromotion: Sendable {
    package var result: NearbyResult
    package var score: Int
    /// For suggestions: the listed promotions that relate to this one.
    package var relatedTo: [BeaconID] = []
}
