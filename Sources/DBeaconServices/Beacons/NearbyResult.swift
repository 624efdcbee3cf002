package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A beacon found by nearby, with the geodesic distance and initial bearing from the query
/// point to its location.
package struct NearbyResult: Sendable {
    package var beacon: Beacon
    package var distanceM: Double
    package var bearingDeg: Double
    /// The perimeter as the index keeps it formatted (`beacon.perimeter` is then empty), from
    /// `BeaconService.nearby(formattedPerimeters: true)`.
    package var formattedPerimeter: (any FormattedPerimeter)?

    package init(beacon: Beacon, distanceM: Double, bearingDeg: Double, formattedPerimeter: (any FormattedPerimeter)? = nil) {
        self.beacon = beacon
        self.distanceM = distanceM
        self.bearingDeg = bearingDeg
        self.formattedPerimeter = formattedPerimeter
    }
}
