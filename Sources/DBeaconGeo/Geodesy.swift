import CGeodesic
package import DBeaconCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Geodesic computations on the WGS84 ellipsoid.
///
/// Distances and azimuths are Karney's (GeographicLib's algorithms, through the C
/// implementation PROJ ships): accurate to round-off, about 15 nm, for every pair of points,
/// nearly antipodal ones included (checked against GeographicLib's Python implementation in
/// the tests). Clear cases of the many circle tests a lookup makes are decided by a local
/// estimate first (`circleContains`).
package enum Geodesy {
    package static let a = 6_378_137.0
    package static let f = 1 / 298.257_223_563
    package static let b = a * (1 - f)
    package static let e2 = f * (2 - f)
    /// Smallest radius of curvature on the ellipsoid (meridional, at the equator); dividing by it
    /// over-estimates angles, which keeps bounding boxes conservative.
    package static let minRadius = a * (1 - e2)
    private static let degToRad = Double.pi / 180
    private static let radToDeg = 180 / Double.pi

    /// The WGS84 ellipsoid's series coefficients (`geod_init` once; read-only afterwards, so
    /// any thread may use it).
    private static let wgs84 = WGS84()

    private final class WGS84: @unchecked Sendable {
        let g: UnsafeMutablePointer<geod_geodesic>
        init() {
            g = .allocate(capacity: 1)
            geod_init(g, Geodesy.a, Geodesy.f)
        }
    }

    /// Geodesic distance in metres and initial bearing in degrees clockwise from north, [0, 360).
    package static func inverse(from p1: Position, to p2: Position) -> (distance: Double, bearing: Double) {
        let solved = solve(p1, p2)
        return (solved.distance, normalizedBearing(solved.azimuth1))
    }

    /// Distance (metres), and the azimuths (degrees, −180…180) at both ends: at `p2`, the
    /// direction of travel arriving there.
    package static func solve(_ p1: Position, _ p2: Position) -> (distance: Double, azimuth1: Double, azimuth2: Double) {
        var s12 = 0.0, azi1 = 0.0, azi2 = 0.0
        geod_inverse(wgs84.g, p1.lat, p1.lon, p2.lat, p2.lon, &s12, &azi1, &azi2)
        return (s12, azi1, azi2)
    }

    /// Geodesic distance in metres.
    package static func distance(_ p1: Position, _ p2: Position) -> Double {
        var s12 = 0.0
        geod_inverse(wgs84.g, p1.lat, p1.lon, p2.lat, p2.lon, &s12, nil, nil)
        return s12
    }

    private static func normalizedBearing(_ deg: Double) -> Double {
        var b = deg.truncatingRemainder(dividingBy: 360)
        if b < 0 { b += 360 }
        if b >= 360 { b = 0 }
        return b
    }

    // MARK: Circle helpers

    /// Conservative longitude/latitude boxes around a geodesic circle; two boxes when the circle
    /// crosses the antimeridian, a full band of longitudes when it reaches a pole.
    package static func boundingBoxes(center: Position, radiusM: Double) -> [BoundingBox] {
        let angular = radiusM / minRadius * 1.001 + 1e-9
        let dLat = angular * radToDeg
        let south = max(-90, center.lat - dLat), north = min(90, center.lat + dLat)
        let farLat = max(abs(south), abs(north))
        if farLat >= 89.999 {
            return [BoundingBox(west: -180, south: south, east: 180, north: north)]
        }
        let ratio = sin(min(angular, .pi / 2)) / cos(farLat * degToRad)
        if ratio >= 1 {
            return [BoundingBox(west: -180, south: south, east: 180, north: north)]
        }
        let dLon = asin(ratio) * radToDeg * 1.001 + 1e-9
        if dLon >= 180 { return [BoundingBox(west: -180, south: south, east: 180, north: north)] }
        let west = center.lon - dLon, east = center.lon + dLon
        if west < -180 {
            return [BoundingBox(west: west + 360, south: south, east: 180, north: north),
                    BoundingBox(west: -180, south: south, east: east, north: north)]
        }
        if east > 180 {
            return [BoundingBox(west: west, south: south, east: 180, north: north),
                    BoundingBox(west: -180, south: south, east: east - 360, north: north)]
        }
        return [BoundingBox(west: west, south: south, east: east, north: north)]
    }

    /// Largest radius for which `fastCircleContains` may decide without the full formula.
    package static let fastPathMaxRadius = 20_000.0

    /// Whether `point` is within `radiusM` (geodesic, boundary included) of `center`.
    ///
    /// A local ellipsoidal flat-earth estimate decides all clear cases; points within
    /// 0.01% (+1 cm) of the circle's edge get the exact distance, so the answer is always the
    /// exact one. The estimate's error below 20 km and 80° of latitude is under 2e-5,
    /// five times inside that band (tested).
    @inline(__always)
    package static func circleContains(center: Position, radiusM: Double, point: Position) -> Bool {
        if radiusM <= fastPathMaxRadius && abs(center.lat) < 80,
           let answer = clearly(approximateDistance(center, point), within: radiusM) {
            return answer
        }
        return inverse(from: center, to: point).distance <= radiusM
    }

    /// The flat-earth estimate's answer when it is clear: the distance is outside the 0.01%
    /// (+1 cm) band around the radius; nil within it (the exact distance decides).
    @inline(__always)
    private static func clearly(_ approx: Double, within radiusM: Double) -> Bool? {
        let band = radiusM * 1e-4 + 0.01
        if approx < radiusM - band { return true }
        if approx > radiusM + band { return false }
        return nil
    }

    /// The sine and cosine of a query point's latitude, computed once for the many circles a
    /// lookup tests (`circleContains(center:radiusM:point:pointLatitude:)`).
    package struct LatitudeTrig: Sendable {
        package let sine: Double, cosine: Double
        package init(_ lat: Double) {
            sine = sin(lat * degToRad)
            cosine = cos(lat * degToRad)
        }
    }

    /// `circleContains(center:radiusM:point:)` with the point's latitude's sine and cosine
    /// given: the mean latitude's are derived from them by the angle-sum formulas with the
    /// half-difference's series (its terms beyond the fourth power are under 1e-15 within
    /// 20 km), instead of a sine and a cosine per circle. The same answers (tested).
    @inline(__always)
    package static func circleContains(center: Position, radiusM: Double, point: Position, pointLatitude t: LatitudeTrig) -> Bool {
        let d = (center.lat - point.lat) * 0.5 * degToRad
        guard radiusM <= fastPathMaxRadius && abs(center.lat) < 80 && abs(d) < 2e-3 else {
            return circleContains(center: center, radiusM: radiusM, point: point)
        }
        let d2 = d * d
        let sd = d * (1 - d2 / 6), cd = 1 - d2 / 2 + d2 * d2 / 24
        let approx = flatDistance(center, point, sine: t.sine * cd + t.cosine * sd, cosine: t.cosine * cd - t.sine * sd)
        if let answer = clearly(approx, within: radiusM) { return answer }
        return inverse(from: center, to: point).distance <= radiusM
    }

    /// Flat-earth distance with the ellipsoid's radii of curvature at the mean latitude.
    /// Accurate to about 2e-5 relative for short distances away from the poles.
    @inline(__always)
    package static func approximateDistance(_ p1: Position, _ p2: Position) -> Double {
        let phi = (p1.lat + p2.lat) * 0.5 * degToRad
        return flatDistance(p1, p2, sine: sin(phi), cosine: cos(phi))
    }

    /// `approximateDistance` with the sine and cosine of the mean latitude given.
    @inline(__always)
    private static func flatDistance(_ p1: Position, _ p2: Position, sine s: Double, cosine c: Double) -> Double {
        var dLon = p2.lon - p1.lon
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        let w2 = 1 - e2 * s * s
        let w = w2.squareRoot()
        let n = a / w
        let m = a * (1 - e2) / (w2 * w)
        let dx = dLon * degToRad * n * c
        let dy = (p2.lat - p1.lat) * degToRad * m
        return (dx * dx + dy * dy).squareRoot()
    }

    /// Walking time at 1.4 m/s (5 km/h), in whole seconds.
    package static func walkingETA(meters: Double) -> Int {
        Int((meters / 1.4).rounded())
    }
}
