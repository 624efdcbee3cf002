import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A tour with its stops (those the caller can see), in order.
package struct TourView: Sendable {
    package var tour: VisibleBeacon
    package var stops: [TourStop]
    package var progress: TourProgress?
}
