package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
package import Logging

/// A stop of a tour: its order and its place beacon.
package struct TourStop: Sendable {
    package var order: Int
    package var place: Beacon
}
