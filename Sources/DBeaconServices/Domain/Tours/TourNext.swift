package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// The answer of `next?from=`.
package struct TourNext: Sendable {
    package var tour: VisibleBeacon
    package var from: BeaconID?
    package var origin: Position?
    package var following: [TourLeg]
    package var next: TourLeg? { following.first }
}
