import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A stop after `from`, with distance and direction from the origin (the caller's point,
/// else the `from` stop).
package struct TourLeg: Sendable {
    package var stop: TourStop
    package var distanceM: Double?
    package var bearingDeg: Double?
}
