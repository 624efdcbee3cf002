package import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Foundation

/// What a batch of fixes did.
package struct FixReport: Sendable {
    /// Beacons the user is inside after the batch.
    package var inside: [BeaconID]
    /// Events addressed to the user that the batch produced.
    package var events: [Event]
    package var accepted: Int
    /// Fixes not newer than the newest already seen: they change nothing.
    package var ignored: Int
    /// The beacons the coverage lookup found covering the user at the batch's last fix: each
    /// passed the index's `.cover` for them when the batch began, so they may see it
    /// (`VisibilityGate.visible(_:to:coveringNow:)`).
    package var coveringNow: [BeaconID] = []
    /// Where `coveringNow` was looked up: the batch's last fix (nil: no fix).
    package var coveringNowAt: Position?
}
