package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A beacon found by nearby, as its viewer may see it, with the geodesic distance and initial
/// bearing from the query point to its location.
package struct NearbyResult: Sendable {
    package var beacon: VisibleBeacon
    package var distanceM: Double
    package var bearingDeg: Double
    /// The perimeter as the index keeps it formatted (`beacon.perimeter` is then empty), from
    /// `BeaconService.nearby(formattedPerimeters: true)`.
    package var formattedPerimeter: (any FormattedPerimeter)?

    package init(beacon: VisibleBeacon, distanceM: Double, bearingDeg: Double, formattedPerimeter: (any FormattedPerimeter)? = nil) {
        self.beacon = beacon
        self.distanceM = distanceM
        self.bearingDeg = bearingDeg
        self.formattedPerimeter = formattedPerimeter
    }
}

/// A beacon ranked by distance from a point, before it passed the visibility gate
/// (`BeaconService.present` turns these into `NearbyResult`s).
package struct RankedBeacon: Sendable {
    package var beacon: Beacon
    /// The point distances are measured from.
    package var from: Position
    package var distanceM: Double
    package var bearingDeg: Double
}
