package import DBeaconCore
import Foundation

/// The one tangent plane of the code base: east/north metres around an origin, with the
/// ellipsoid's radii of curvature there (meridional for north, prime vertical for east).
/// Accurate to a few centimetres within a few kilometres (`PerimeterDistance.planeError`);
/// longitudes wrap at the antimeridian. Used by perimeter distances, enclosing circles,
/// regions and trilateration.
package struct LocalFrame: Sendable {
    package let origin: Position
    package let metresPerDegreeLon: Double
    package let metresPerDegreeLat: Double

    package init(origin: Position) {
        self.origin = origin
        let phi = origin.lat * .pi / 180
        let s = sin(phi)
        let w2 = 1 - Geodesy.e2 * s * s
        let n = Geodesy.a / w2.squareRoot()
        let m = Geodesy.a * (1 - Geodesy.e2) / (w2 * w2.squareRoot())
        metresPerDegreeLon = n * cos(phi) * .pi / 180
        metresPerDegreeLat = m * .pi / 180
    }

    package func project(_ p: Position) -> (Double, Double) {
        var dLon = p.lon - origin.lon
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        return (dLon * metresPerDegreeLon, (p.lat - origin.lat) * metresPerDegreeLat)
    }

    /// The plane's distance from the origin to the nearest point of `box` (0 inside it), or 0 for
    /// a box the plane cannot place: a quarter of the globe wide or more, or straddling the
    /// origin's antimeridian.
    package func planeDistance(to box: BoundingBox) -> Double {
        guard box.east - box.west < 90 else { return 0 }
        let (x0, y0) = project(Position(lon: box.west, lat: box.south))
        let (x1, y1) = project(Position(lon: box.east, lat: box.north))
        guard x0 <= x1 else { return 0 }
        let dx = max(0, x0, -x1), dy = max(0, y0, -y1)
        return (dx * dx + dy * dy).squareRoot()
    }

    package func unproject(_ x: Double, _ y: Double) -> Position {
        var lon = origin.lon + x / metresPerDegreeLon
        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return Position(lon: lon, lat: origin.lat + y / metresPerDegreeLat)
    }

    /// `project` as a vector (the trilateration's arithmetic).
    func vector(_ p: Position) -> Vec2 {
        let (x, y) = project(p)
        return Vec2(x, y)
    }

    /// `unproject` of a vector.
    func position(_ v: Vec2) -> Position { unproject(v.x, v.y) }

    /// The position `east`, `north` metres from `p` (simulations, test geometry).
    package static func offset(_ p: Position, east: Double, north: Double) -> Position {
        LocalFrame(origin: p).unproject(east, north)
    }
}
