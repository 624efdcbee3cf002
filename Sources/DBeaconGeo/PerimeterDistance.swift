package import DBeaconCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How far a point lies outside a perimeter, in metres, on the WGS84 ellipsoid: the distance
/// of `GET /v1/regions` and the fence engine's exit cushion (a user leaves only once farther out
/// than the cushion, so a position jittering on the boundary does not flap between enter and
/// exit).
///
/// A polygon's edges are straight lines in longitude/latitude (RFC 7946), and the distance to
/// one is the geodesic distance to its nearest point (Karney's, see `Geodesy`), to round-off:
/// a tangent plane at the point finds the edges that can be nearest, and the nearest point of
/// each is then found on the ellipsoid.
package enum PerimeterDistance {
    /// Distance from `point` to the perimeter of a beacon located at `center`; 0 when covered.
    /// `runs`: the perimeter's `EdgeRuns` (the same distance, found sooner for a large polygon).
    package static func outside(_ point: Position, perimeter: Perimeter, center: Position, covered: Bool,
                                runs: EdgeRuns? = nil) -> Double {
        if covered { return 0 }
        switch perimeter {
        case .circle(let r):
            return max(0, Geodesy.distance(center, point) - r)
        case .polygon, .multiPolygon:
            return edgeDistance(point, perimeter, runs: runs)
        }
    }

    /// `outside(…)` from the tangent plane alone, and how far it may be from the exact value:
    /// for ranking many candidates before the exact distance of the few that matter. Circles
    /// are exact (bound 0). The bound is `.infinity` beyond where the plane is trusted.
    package static func estimate(_ point: Position, perimeter: Perimeter, center: Position, covered: Bool) -> (distance: Double, error: Double) {
        if covered { return (0, 0) }
        switch perimeter {
        case .circle(let r):
            return (max(0, Geodesy.distance(center, point) - r), 0)
        case .polygon, .multiPolygon:
            let d = planeScan(point, perimeter)
            return (d, planeError(d, latitude: point.lat))
        }
    }

    /// Whether `point` lies less than `limit` metres outside the perimeter: `outside(…) < limit`
    /// (the exit cushion test), without the whole exact computation: a polygon's edges whose
    /// box is clearly beyond `limit` are skipped, an edge clearly within it ends the scan, and
    /// only an answer within the plane's error of `limit` is decided exactly.
    package static func isWithin(_ limit: Double, of perimeter: Perimeter, center: Position, point: Position) -> Bool {
        switch perimeter {
        case .circle(let r):
            return max(0, Geodesy.distance(center, point) - r) < limit
        case .polygon, .multiPolygon:
            guard limit > 0 else { return false }
            let band = planeError(limit, latitude: point.lat)
            if band.isFinite {
                // The first edge nearer than the band's far side, or none (infinity).
                let d = planeScan(point, perimeter, stopBelow: limit + 2 * band)
                if d < limit - 2 * band { return true }
                if d >= limit + 2 * band { return false }
            }
            return edgeDistance(point, perimeter, runs: nil) < limit
        }
    }

    /// How far the tangent plane's distance `d` (metres) at `latitude` may be from the geodesic
    /// one, either way: its first-order term is the change of the parallels' scale across the
    /// distance (tan φ · d / 2R, taken 1.5 times), then second-order terms. Checked against
    /// the exact distances in the tests. Infinite near the poles and beyond 200 km.
    package static func planeError(_ d: Double, latitude: Double) -> Double {
        guard abs(latitude) < 80 else { return .infinity }
        return planeError(d, tangent: tan(abs(latitude) * .pi / 180))
    }

    /// `planeError(d, latitude:)` below 80° of latitude, given the latitude's tangent.
    private static func planeError(_ d: Double, tangent t: Double) -> Double {
        guard d <= 200_000 else { return .infinity }
        let q = d / Geodesy.minRadius
        return d * (0.75 * (t + 1) * q + 3 * q * q + 2e-5) + 0.001
    }

    /// The exact distance to the nearest edge: edges that the plane says may be nearest (all of
    /// them where the plane is not trusted) are followed on the ellipsoid. One pass over the
    /// vertices: an edge is kept while its plane distance is within the reach of the best so
    /// far (`reach` only shrinks as the best does), and the kept edges within the final reach are
    /// measured on the ellipsoid: the edges within reach of the plane's nearest, as if that were
    /// known first. With `runs`, the runs of edges are scanned nearest box first, and those
    /// whose box is beyond the reach are skipped (their edges are farther still).
    private static func edgeDistance(_ point: Position, _ perimeter: Perimeter, runs: EdgeRuns?) -> Double {
        // How far in the plane an edge may be and still be the nearest on the ellipsoid, when the
        // plane's nearest is `b` away (infinite where the plane is not trusted).
        let trusted = abs(point.lat) < 80, tangent = tan(abs(point.lat) * .pi / 180)
        func reach(_ b: Double) -> Double {
            guard trusted else { return .infinity }
            let e1 = planeError(b, tangent: tangent)
            return e1.isFinite ? b + e1 + planeError(b + e1, tangent: tangent) : .infinity
        }
        var threshold = Double.infinity
        var kept: [(from: Position, to: Position, plane: Double)] = []
        let frame = LocalFrame(origin: point)
        var best = Double.infinity
        let polygons = perimeter.polygons
        // The edges from vertex `start` to `end` of a ring.
        func scan(_ ring: Ring, _ start: Int, _ end: Int) {
            var previous = ring[start]
            var pp = frame.project(previous)
            for i in (start + 1)...end {
                let p = ring[i]
                let current = frame.project(p)
                defer { previous = p; pp = current }
                if threshold.isFinite {
                    let (x0, x1) = (min(pp.0, current.0), max(pp.0, current.0))
                    let (y0, y1) = (min(pp.1, current.1), max(pp.1, current.1))
                    if x0 > threshold || -x1 > threshold || y0 > threshold || -y1 > threshold { continue }
                }
                let d = distanceToSegment(pp, current)
                if d > threshold { continue }
                kept.append((previous, p, d))
                if d < best {
                    best = d
                    threshold = reach(d)
                }
            }
        }
        if let runs, runs.matches(perimeter) {
            let order = runs.runs.indices.map { (bound: runs.runs[$0].bound(in: frame), index: $0) }
                .sorted { $0.bound < $1.bound }
            for (bound, index) in order {
                if bound > threshold { break }
                let run = runs.runs[index]
                let ring = polygons[Int(run.polygon)].rings[Int(run.ring)]
                scan(ring, Int(run.start), min(Int(run.start) + EdgeRuns.length, ring.count - 1))
            }
        } else {
            for polygon in polygons {
                for ring in polygon.rings where ring.count > 1 { scan(ring, 0, ring.count - 1) }
            }
        }
        var exact = Double.infinity
        for edge in kept where edge.plane <= threshold {
            exact = min(exact, GeodesicEdge(edge.from, edge.to).distance(from: point))
        }
        return exact
    }

    /// The distance from `point` to the nearest edge of a polygonal perimeter, in the local
    /// plane at the point. Edges whose box is no nearer than the best so far are skipped (the
    /// box is a lower bound of the edge's distance); with `stopBelow`, the scan also skips
    /// edges no nearer than it and returns the first distance below it.
    private static func planeScan(_ point: Position, _ perimeter: Perimeter, stopBelow: Double? = nil) -> Double {
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

/// A polygonal perimeter's edges in runs of `length`, each with a box holding its edges:
/// `PerimeterDistance.outside` scans the runs nearest box first and skips those beyond reach,
/// so a large outline near the point costs a few runs instead of every vertex. Made once per
/// perimeter (`RegionService` keeps them for large polygons).
package struct EdgeRuns: Sendable {
    package static let length = 32
    /// Perimeters with fewer vertices gain nothing from runs.
    package static let worthFrom = 256

    package struct Run: Sendable {
        let polygon: Int32, ring: Int32, start: Int32
        /// The box of the run's vertices, rounded outwards to `Float`.
        let west: Float, south: Float, east: Float, north: Float

        /// A lower bound of the plane's distance from the frame's origin to the run's edges
        /// (0 for a box the frame cannot place: across the antimeridian or a quarter globe wide).
        package func bound(in frame: LocalFrame) -> Double {
            frame.planeDistance(to: BoundingBox(west: Double(west), south: Double(south), east: Double(east), north: Double(north)))
        }
    }

    package let runs: [Run]
    /// Each ring's vertex count, polygon by polygon: runs are used only with the perimeter they
    /// were made from (checked in constant time besides the rings).
    let shape: [Int]

    package init(_ perimeter: Perimeter) {
        var runs: [Run] = []
        var shape: [Int] = []
        for (p, polygon) in perimeter.polygons.enumerated() {
            for (r, ring) in polygon.rings.enumerated() {
                shape.append(ring.count)
                var start = 0
                while start < ring.count - 1 {
                    let end = min(start + Self.length, ring.count - 1)
                    var west = Double.infinity, south = Double.infinity, east = -Double.infinity, north = -Double.infinity
                    for v in ring[start...end] {
                        west = min(west, v.lon); east = max(east, v.lon)
                        south = min(south, v.lat); north = max(north, v.lat)
                    }
                    runs.append(Run(polygon: Int32(p), ring: Int32(r), start: Int32(start),
                                    west: Float(west).nextDown, south: Float(south).nextDown,
                                    east: Float(east).nextUp, north: Float(north).nextUp))
                    start = end
                }
            }
        }
        self.runs = runs
        self.shape = shape
    }

    /// Whether the perimeter has the rings these runs were made for.
    func matches(_ perimeter: Perimeter) -> Bool {
        var i = 0
        for polygon in perimeter.polygons {
            for ring in polygon.rings {
                guard i < shape.count, shape[i] == ring.count else { return false }
                i += 1
            }
        }
        return i == shape.count
    }
}

/// An edge straight in longitude/latitude (RFC 7946; the short way round across ±180°), and
/// the geodesic distance from a point to its nearest point.
package struct GeodesicEdge {
    let start: Position
    let dLon: Double, dLat: Double

    package init(_ a: Position, _ b: Position) {
        start = a
        var d = b.lon - a.lon
        if d > 180 { d -= 360 } else if d < -180 { d += 360 }
        dLon = d
        dLat = b.lat - a.lat
    }

    /// The point a fraction `t` along the edge.
    package func at(_ t: Double) -> Position {
        var lon = start.lon + t * dLon
        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return Position(lon: lon, lat: start.lat + t * dLat)
    }

    /// The distance from `p` to the point at `t`, and its derivative in `t`: the edge's
    /// direction there (metres east and north per unit of `t`) against the geodesic's azimuth
    /// on arrival.
    func slope(_ p: Position, _ t: Double) -> (distance: Double, derivative: Double) {
        let q = at(t)
        let (s, _, azi2) = Geodesy.solve(p, q)
        let phi = q.lat * .pi / 180
        let sinPhi = sin(phi)
        let w2 = 1 - Geodesy.e2 * sinPhi * sinPhi
        let n = Geodesy.a / w2.squareRoot()
        let m = Geodesy.a * (1 - Geodesy.e2) / (w2 * w2.squareRoot())
        let east = dLon * .pi / 180 * n * cos(phi), north = dLat * .pi / 180 * m
        let alpha = azi2 * .pi / 180
        return (s, east * sin(alpha) + north * cos(alpha))
    }

    /// The geodesic distance from `p` to the nearest point of the edge. The distance along a
    /// piece of at most a quarter degree is unimodal: its minimum is found from the sign of the
    /// derivative (false position with the Illinois rule, down to a tenth of a millimetre of
    /// the edge). Longer edges are sampled at such pieces and refined around the nearest.
    package func distance(from p: Position) -> Double {
        let span = max(abs(dLon), abs(dLat))
        let pieces = max(1, Int((span / 0.25).rounded(.up)))
        guard pieces > 1 else { return minimum(p, 0, 1) }
        var bestIndex = 0, bestDistance = Double.infinity
        for i in 0...pieces {
            let d = Geodesy.distance(p, at(Double(i) / Double(pieces)))
            if d < bestDistance { (bestIndex, bestDistance) = (i, d) }
        }
        let lo = Double(max(0, bestIndex - 1)) / Double(pieces), hi = Double(min(pieces, bestIndex + 1)) / Double(pieces)
        return min(bestDistance, minimum(p, lo, hi))
    }

    private func minimum(_ p: Position, _ lo: Double, _ hi: Double) -> Double {
        var (a, fa) = (lo, slope(p, lo)), (b, fb) = (hi, slope(p, hi))
        if fa.derivative >= 0 { return fa.distance }
        if fb.derivative <= 0 { return fb.distance }
        var best = min(fa.distance, fb.distance)
        let metresPerT = Swift.max(1e-9, Swift.max(abs(dLon), abs(dLat)) * 111_320)
        var side = 0
        for _ in 0..<80 where (b - a) * metresPerT > 1e-4 {
            var ga = fa.derivative, gb = fb.derivative
            if side == -1 { gb /= 2 } else if side == 1 { ga /= 2 }
            var t = (a * gb - b * ga) / (gb - ga)
            if !(t > a && t < b) { t = (a + b) / 2 }
            let ft = slope(p, t)
            best = min(best, ft.distance)
            if ft.derivative == 0 { break }
            if ft.derivative < 0 {
                (a, fa) = (t, ft)
                side = -1
            } else {
                (b, fb) = (t, ft)
                side = 1
            }
        }
        return best
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
