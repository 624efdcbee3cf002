package import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Synchronization

/// A consumer's recorded interaction.
package struct Interaction: Sendable {
    package var promotion: BeaconID
    package var user: UserID
    package var type: InteractionType
    package var createdAt: Timestamp
    /// For `rated`: 1–5.
    package var rating: Int?
    /// For `feedback`: the text.
    package var text: String?
}
