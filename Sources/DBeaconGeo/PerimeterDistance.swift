package import DBeaconCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How far a point lies outside a perimeter, in metres: the fence engine's exit cushion
/// (a user leaves only once farther out than the cushion, so a position jittering on the
/// boundary does not flap between enter and exit).
package enum PerimeterDistance {
    /// Distance from `point` to the perimeter of a beacon located at `center`; 0 when covered.
    /// Polygon distances use a local tangent plane at the point (exact enough for cushions of
    /// metres to kilometres).
    package static func outside(_ point: Position, perimeter: Perimeter, center: Position, covered: Bool) -> Double {
        if covered { return 0 }
        switch perimeter {
        case .circle(let r):
            return max(0, Geodesy.distance(center, point) - r)
        case .polygon, .multiPolygon:
            return edgeDistance(point, perimeter)
        }
    }

    /// Whether `point` lies less than `limit` metres outside the perimeter: `outside(…) < limit`
    /// (the exit cushion test), without the whole scan: a polygon's edges whose box is at least
    /// `limit` away are skipped, and the scan stops at the first edge closer than `limit`.
    package static func isWithin(_ limit: Double, of perimeter: Perimeter, center: Position, point: Position) -> Bool {
        switch perimeter {
        case .circle(let r):
            return max(0, Geodesy.distance(center, point) - r) < limit
        case .polygon, .multiPolygon:
            return limit > 0 && edgeDistance(point, perimeter, stopBelow: limit) < limit
        }
    }

    /// The distance from `point` to the nearest edge of a polygonal perimeter, in the local
    /// plane at the point. Edges whose box is no nearer than the best so far are skipped (the
    /// box is a lower bound of the edge's distance); with `stopBelow`, the scan also skips
    /// edges no nearer than it and returns the first distance below it.
    private static func edgeDistance(_ point: Position, _ perimeter: Perimeter, stopBelow: Double? = nil) -> Double {
        var best = Double.infinity
        let frame = LocalFrame(origin: point)
        for polygon in perimeter.polygons {
            for ring in polygon.rings {
                var previous = frame.project(ring[0])
                for p in ring.dropFirst() {
                    let current = frame.project(p)
                    defer { previous = current }
                    let bound = min(best, stopBelow ?? best)
                    let (x0, x1) = (min(previous.0, current.0), max(previous.0, current.0))
                    let (y0, y1) = (min(previous.1, current.1), max(previous.1, current.1))
                    if x0 >= bound || -x1 >= bound || y0 >= bound || -y1 >= bound { continue }
                    let d = distanceToSegment(previous, current)
                    if let stopBelow, d < stopBelow { return d }
                    best = min(best, d)
                }
            }
        }
        return best
    }

    /// Distance from the origin to the segment a–b in the plane.
    private static func distanceToSegment(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let dx = b.0 - a.0, dy = b.1 - a.1
        let lengthSquared = dx * dx + dy * dy
        var t = lengthSquared > 0 ? -(a.0 * dx + a.1 * dy) / lengthSquared : 0
        t = max(0, min(1, t))
        let x = a.0 + t * dx, y = a.1 + t * dy
        return (x * x + y * y).squareRoot()
    }
}

/// An east/north plane in metres tangent to the ellipsoid at `origin`.
package struct LocalFrame {
    let origin: Position
    let metresPerDegreeLon: Double
    let metresPerDegreeLat: Double

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

    package func unproject(_ x: Double, _ y: Double) -> Position {
        var lon = origin.lon + x / metresPerDegreeLon
        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return Position(lon: lon, lat: origin.lat + y / metresPerDegreeLat)
    }
}

/// Point-in-perimeter for one beacon, outside any index (fence re-evaluation of a single
/// beacon): circles by geodesic distance, polygons through a GEOS prepared geometry.
package struct PerimeterTester: Sendable {
    let center: Position
    let radius: Double?
    let prepared: PreparedPerimeter?

    package init(location: Position, perimeter: Perimeter) {
        center = location
        radius = perimeter.radiusM
        prepared = perimeter.isCircle ? nil : PreparedPerimeter(perimeter.polygons)
    }

    package func covers(_ p: Position) -> Bool {
        if let radius { return Geodesy.circleContains(center: center, radiusM: radius, point: p) }
        return prepared?.covers(p) ?? false
    }
}
