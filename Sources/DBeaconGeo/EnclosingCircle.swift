package import DBeaconCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The smallest circle enclosing a set of points (Welzl's algorithm, iteratively, on a local
/// tangent plane at `origin`): apps that can monitor only circles (Apple's region monitoring)
/// watch a polygon perimeter through it.
package enum EnclosingCircle {
    /// Center and radius (metres) of the smallest circle containing every point, with
    /// `marginM` added for the plane approximation. Deterministic: the points are visited in a
    /// fixed pseudo-random order (expected linear time).
    package static func of(_ points: [Position], origin: Position, marginM: Double = 0.5) -> (center: Position, radiusM: Double) {
        let frame = LocalFrame(origin: origin)
        var p = points.map { frame.project($0) }
        guard !p.isEmpty else { return (origin, 0) }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        if p.count > 1 {
            for i in stride(from: p.count - 1, to: 0, by: -1) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                p.swapAt(i, Int((state >> 33) % UInt64(i + 1)))
            }
        }
        // A point is inside when its distance is within the radius (and a hair): compared as
        // squares, so the test of each point, made some ten times per point, takes no square
        // root (`hypot` was most of the time of a large polygon's circle).
        var c = (x: p[0].0, y: p[0].1, r: 0.0)
        var reach = 1e-18 // (r · (1 + 1e-12) + 1e-9)²
        func set(_ circle: (x: Double, y: Double, r: Double)) {
            c = circle
            let r = circle.r * (1 + 1e-12) + 1e-9
            reach = r * r
        }
        func inside(_ q: (Double, Double)) -> Bool {
            let dx = q.0 - c.x, dy = q.1 - c.y
            return dx * dx + dy * dy <= reach
        }
        for i in 1..<p.count where !inside(p[i]) {
            set((p[i].0, p[i].1, 0))
            for j in 0..<i where !inside(p[j]) {
                set(((p[i].0 + p[j].0) / 2, (p[i].1 + p[j].1) / 2, hypot(p[i].0 - p[j].0, p[i].1 - p[j].1) / 2))
                for k in 0..<j where !inside(p[k]) {
                    set(circumcircle(p[i], p[j], p[k]) ?? c)
                }
            }
        }
        return (frame.unproject(c.x, c.y), c.r + marginM)
    }

    private static func circumcircle(_ a: (Double, Double), _ b: (Double, Double), _ c: (Double, Double)) -> (x: Double, y: Double, r: Double)? {
        let d = 2 * (a.0 * (b.1 - c.1) + b.0 * (c.1 - a.1) + c.0 * (a.1 - b.1))
        guard abs(d) > 1e-12 else { return nil }
        let a2 = a.0 * a.0 + a.1 * a.1, b2 = b.0 * b.0 + b.1 * b.1, c2 = c.0 * c.0 + c.1 * c.1
        let x = (a2 * (b.1 - c.1) + b2 * (c.1 - a.1) + c2 * (a.1 - b.1)) / d
        let y = (a2 * (c.0 - b.0) + b2 * (a.0 - c.0) + c2 * (b.0 - a.0)) / d
        return (x, y, hypot(a.0 - x, a.1 - y))
    }

    /// An enclosing circle of the rings (each a closed list of positions whose edges are straight
    /// in longitude/latitude, RFC 7946) whose radius is checked on the ellipsoid: the planar
    /// smallest circle's centre, and the largest geodesic distance from it to every vertex and to
    /// points along every edge at most `step` metres apart, plus 5 cm and 1e-6 of itself. Holds
    /// at any latitude and across ±180° (edges are followed the short way round).
    ///
    /// The largest distance is the exact one, but only points that can be the farthest are
    /// measured exactly: within 20 km of a centre below 80° of latitude, the flat-earth estimate
    /// is within 1e-4 (+1 cm) of the geodesic (`Geodesy.circleContains` relies on the same
    /// bound, tested), so a point whose estimate is clearly below another's cannot be the
    /// farthest. A polygon of 1,000 vertices took 1,000 geodesics; now a few. `allExact`
    /// measures every point (for tests).
    package static func verified(_ rings: [[Position]], origin: Position, step: Double = 100,
                                 allExact: Bool = false) -> (center: Position, radiusM: Double) {
        let (center, _) = of(rings.flatMap { $0 }, origin: origin, marginM: 0)
        var points: [Position] = []
        forEachPoint(of: rings, step: step) { points.append($0) }
        let radius = allExact ? exactlyFarthest(points, from: center) : farthest(points, from: center)
        return (center, radius + 0.05 + radius * 1e-6)
    }

    /// The largest geodesic distance from `center` to `points`, measuring exactly only the
    /// points the flat-earth estimate cannot rule out.
    static func farthest(_ points: [Position], from center: Position) -> Double {
        guard abs(center.lat) < 80, !points.isEmpty else { return exactlyFarthest(points, from: center) }
        let estimates = points.map { Geodesy.approximateDistance(center, $0) }
        let largest = estimates.max()!
        guard largest <= Geodesy.fastPathMaxRadius else { return exactlyFarthest(points, from: center) }
        // Every estimate is within 1e-4 of the distance, plus 1 cm: the farthest point is at
        // least `floor` away, and a point whose estimate is below `cut` is nearer than that.
        let relative = 1e-4, absolute = 0.01
        let floor = (largest - absolute) / (1 + relative)
        let cut = floor * (1 - relative) - absolute
        var radius = 0.0
        for (p, estimate) in zip(points, estimates) where estimate >= cut {
            radius = max(radius, Geodesy.distance(center, p))
        }
        return radius
    }

    package static func exactlyFarthest(_ points: [Position], from center: Position) -> Double {
        points.reduce(0.0) { max($0, Geodesy.distance(center, $1)) }
    }

    /// Every vertex of `rings` and points along every edge at most `step` metres apart (at most
    /// 255 between two vertices), each edge the short way round ±180°.
    package static func forEachPoint(of rings: [[Position]], step: Double, _ body: (Position) -> Void) {
        for ring in rings {
            guard var previous = ring.first else { continue }
            body(previous)
            for p in ring.dropFirst() {
                var dLon = p.lon - previous.lon
                if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
                let length = Geodesy.approximateDistance(previous, p)
                let parts = min(256, Int((length / step).rounded(.up)))
                if parts > 1 {
                    for k in 1..<parts {
                        let t = Double(k) / Double(parts)
                        var lon = previous.lon + t * dLon
                        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
                        body(Position(lon: lon, lat: previous.lat + t * (p.lat - previous.lat)))
                    }
                }
                body(p)
                previous = p
            }
        }
    }
}
