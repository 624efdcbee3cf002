import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A tour found near a point, with the stops whose perimeter covers it.
package struct NearbyTour: Sendable {
    package var result: NearbyResult
    package var matched: [(stop: TourStop, distanceM: Double)]
}
