import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A stop of a tour: its order and its place beacon.
package struct TourStop: Sendable {
    package var order: Int
    package var place: VisibleBeacon
}
