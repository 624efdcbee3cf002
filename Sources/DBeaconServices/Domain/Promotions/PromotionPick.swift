import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Synchronization

/// The answer of `GET /v1/promotions/pick`.
package struct PromotionPick: Sendable {
    package var chosen: ScoredPromotion?
    /// Promotions covering the point.
    package var candidates: Int
    /// How many shared the top score (each was chosen with probability 1/tied).
    package var tied: Int
    /// The per-user frequency cap was reached: nothing to notify.
    package var capped: Bool
    /// With `capped`: seconds until a pick is possible again.
    package var retryAfterSeconds: Int?
}
