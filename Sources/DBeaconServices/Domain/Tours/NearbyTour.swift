package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
package import Logging

/// A tour found near a point, with the stops whose perimeter covers it.
package struct NearbyTour: Sendable {
    package var result: NearbyResult
    package var matched: [(stop: TourStop, distanceM: Double)]
}
