import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// Directions from a point to a beacon's location.
package struct Directions: Sendable {
    package var beacon: VisibleBeacon
    package var distanceM: Double
    package var bearingDeg: Double

    /// At an average walking speed of 1.4 m/s.
    package var walkingETASeconds: Int { Geodesy.walkingETA(meters: distanceM) }
    /// RFC 5870 `geo:` URI of the destination.
    package var geoURI: String { "geo:\(beacon.location.lat),\(beacon.location.lon)" }
}
