import DBeaconCore
import DBeaconGeo
import Foundation
import Testing

@Suite(.bounded) struct GeodesyTests {
    /// Distances and bearings agree with GeographicLib (Python) to a micrometre, nearly
    /// antipodal pairs included (Karney's algorithms have no failure case).
    @Test func agreesWithGeographicLib() async throws {
        var rng = SeededGenerator(seed: 42)
        var pairs: [(Position, Position)] = []
        // City scale around Stuttgart, continental scale, global, and nearly antipodal.
        for _ in 0..<400 {
            let a = Position(lon: 9.18 + .random(in: -0.1...0.1, using: &rng), lat: 48.78 + .random(in: -0.1...0.1, using: &rng))
            let b = Position(lon: a.lon + .random(in: -0.02...0.02, using: &rng), lat: a.lat + .random(in: -0.02...0.02, using: &rng))
            pairs.append((a, b))
        }
        for _ in 0..<400 {
            let a = Position(lon: .random(in: -180...180, using: &rng), lat: .random(in: -90...90, using: &rng))
            let b = Position(lon: .random(in: -180...180, using: &rng), lat: .random(in: -90...90, using: &rng))
            pairs.append((a, b))
        }
        for _ in 0..<200 {
            let a = Position(lon: .random(in: -180...180, using: &rng), lat: .random(in: -3...3, using: &rng))
            var lon = a.lon + 180 + .random(in: -0.7...0.7, using: &rng)
            if lon > 180 { lon -= 360 }
            pairs.append((a, Position(lon: lon, lat: -a.lat + .random(in: -0.3...0.3, using: &rng))))
        }
        pairs.append((Position(lon: 0, lat: 0), Position(lon: 180, lat: 0)))
        pairs.append((Position(lon: 0, lat: 0.5), Position(lon: 179.5, lat: -0.5)))
        let input: JSONValue = .object(["pairs": .array(pairs.map { [.number($0.0.lat), .number($0.0.lon), .number($0.1.lat), .number($0.1.lon)] })])
        let reference = try await runReference("geodesic_reference.py", input: input)["results"]!.arrayValue!
        var worst = 0.0
        for (i, (a, b)) in pairs.enumerated() {
            let expected = reference[i].arrayValue!.compactMap(\.numberValue)
            let (d, bearing) = Geodesy.inverse(from: a, to: b)
            worst = max(worst, abs(d - expected[0]))
            #expect(abs(d - expected[0]) <= 1e-6, "distance \(a) → \(b): \(d) against \(expected[0])")
            var bearingError = abs(bearing - expected[1])
            bearingError = min(bearingError, 360 - bearingError)
            // The azimuth between exactly antipodal points is not unique.
            #expect(bearingError < 1e-6 || expected[0] < 1e-3 || expected[0] > 20_003_000, "bearing \(a) → \(b)")
        }
        #expect(worst < 1e-6)
    }

    /// Perimeter distances (`GET /v1/regions`' `distance_m`, the exit cushion) are geodesic to
    /// the nearest point of an edge straight in longitude/latitude: within 0.1 m of GeographicLib
    /// (Python, by its own search along the edge), at 0°, 48°N, 60°S and 69°N, next to ±180° and
    /// from a few metres to 30 km out; and the plane's estimate is within its stated error.
    @Test func perimeterDistancesAgreeWithGeographicLib() async throws {
        var g = SeededGenerator(seed: 2829)
        var cases: [(perimeter: Perimeter, center: Position, point: Position)] = []
        let places = [Position(lon: 9.18, lat: 48.78), Position(lon: 18.95, lat: 69.65), Position(lon: -47.9, lat: 0.1),
                      Position(lon: 20, lat: -60), Position(lon: 179.9, lat: -16.5), Position(lon: -179.9, lat: 65.5)]
        for place in places {
            for round in 0..<6 {
                let frame = LocalFrame(origin: place)
                let size = [200.0, 1_500, 8_000, 15_000][round % 4]
                let vertices = 5 + round * 7
                var ring: Ring = (0..<vertices).map { i in
                    let a = Double(i) / Double(vertices) * 2 * .pi
                    let r = size * Double.random(in: 0.5...1.0, using: &g)
                    return frame.unproject(r * cos(a), r * sin(a))
                }
                // Next to ±180°: the polygon stays on its side (an edge never jumps across).
                if place.lon > 179 { ring = ring.map { Position(lon: min($0.lon, 180), lat: $0.lat) } }
                if place.lon < -179 { ring = ring.map { Position(lon: max($0.lon, -180), lat: $0.lat) } }
                ring.append(ring[0])
                let perimeter = Perimeter.polygon(Polygon(rings: [ring]))
                for _ in 0..<12 {
                    let d = size * Double.random(in: 0.5...3, using: &g) + Double.random(in: 0...20_000, using: &g) * Double(round % 2)
                    let a = Double.random(in: 0..<(2 * .pi), using: &g)
                    cases.append((perimeter, place, frame.unproject(d * cos(a), d * sin(a))))
                }
            }
        }
        var beacons: [JSONValue] = [], queries: [JSONValue] = []
        for (i, c) in cases.enumerated() {
            beacons.append(.object(["polygons": .array(c.perimeter.polygons.map { p in
                .array(p.rings.map { ring in .array(ring.map { [.number($0.lon), .number($0.lat)] }) }) })]))
            queries.append([.number(Double(i)), .number(c.point.lon), .number(c.point.lat)])
        }
        let reference = try await runReference("perimeter_reference.py", input: .object(["beacons": .array(beacons), "distances": .array(queries)]))
        let expected = reference["distances"]!.arrayValue!.compactMap(\.numberValue)
        var worst = 0.0, outside = 0
        for (i, c) in cases.enumerated() {
            let covered = PerimeterTester(location: c.center, perimeter: c.perimeter).covers(c.point)
            let exact = PerimeterDistance.outside(c.point, perimeter: c.perimeter, center: c.center, covered: covered)
            #expect(PerimeterDistance.outside(c.point, perimeter: c.perimeter, center: c.center, covered: covered,
                                              runs: EdgeRuns(c.perimeter)) == exact)
            worst = max(worst, abs(exact - expected[i]))
            if expected[i] > 0 { outside += 1 }
            #expect(abs(exact - expected[i]) <= 0.1, "\(c.point): \(exact) m against GeographicLib's \(expected[i]) m")
            let (estimate, error) = PerimeterDistance.estimate(c.point, perimeter: c.perimeter, center: c.center, covered: covered)
            #expect(abs(estimate - exact) <= error, "\(c.point): the plane's \(estimate) m is \(abs(estimate - exact)) m off, more than \(error) m")
            for limit in [exact * 0.999, exact * 1.001 + 0.01] where exact > 0 {
                #expect(PerimeterDistance.isWithin(limit, of: c.perimeter, center: c.center, point: c.point) == (exact < limit))
            }
        }
        #expect(outside > cases.count * 3 / 4)
        #expect(worst <= 0.1)
        print("perimeter distances: \(cases.count) cases, worst \(worst) m from GeographicLib")
    }

    /// A large polygon's distance through its runs of edges (`EdgeRuns`, nearest box first,
    /// runs beyond reach skipped) is the distance over every edge, to the bit: outlines of 300 to
    /// 4,000 vertices with a hole, and multipolygons, at 48°N, 69°N and next to ±180°, from inside
    /// to 20 km out. Runs made for another perimeter are not used.
    @Test func edgeRunsGiveTheSameDistances() {
        var g = SeededGenerator(seed: 4606)
        let places = [Position(lon: 9.18, lat: 48.78), Position(lon: 18.95, lat: 69.65), Position(lon: 179.95, lat: -16.5)]
        var compared = 0, skipping = 0
        for place in places {
            let frame = LocalFrame(origin: place)
            func ring(_ n: Int, _ size: Double, _ around: (Double, Double), clockwise: Bool) -> Ring {
                var ring: Ring = (0..<n).map { i in
                    let a = Double(clockwise ? n - i : i) / Double(n) * 2 * .pi
                    let r = size * (0.8 + 0.15 * sin(5 * a) + 0.05 * Double.random(in: 0...1, using: &g))
                    return frame.unproject(around.0 + r * cos(a), around.1 + r * sin(a))
                }
                if place.lon > 179 { ring = ring.map { Position(lon: min($0.lon, 180), lat: $0.lat) } }
                ring.append(ring[0])
                return ring
            }
            for round in 0..<4 {
                let n = [300, 1_200, 4_000, 700][round]
                let size = [400.0, 1_000, 3_000, 800][round]
                let outline = Polygon(rings: [ring(n, size, (0, 0), clockwise: false), ring(n / 10, size / 4, (size / 3, 0), clockwise: true)])
                let perimeter: Perimeter = round == 3
                    ? .multiPolygon([outline, Polygon(rings: [ring(n, size / 2, (size * 3, size), clockwise: false)])])
                    : .polygon(outline)
                let runs = EdgeRuns(perimeter)
                for _ in 0..<40 {
                    let d = Double.random(in: 0...(3 * size), using: &g) + Double.random(in: 0...20_000, using: &g) * Double(round % 2)
                    let a = Double.random(in: 0..<(2 * .pi), using: &g)
                    let point = frame.unproject(d * cos(a), d * sin(a))
                    let plain = PerimeterDistance.outside(point, perimeter: perimeter, center: place, covered: false)
                    let viaRuns = PerimeterDistance.outside(point, perimeter: perimeter, center: place, covered: false, runs: runs)
                    #expect(viaRuns == plain, "\(point): \(viaRuns) m through runs, \(plain) m over every edge")
                    compared += 1
                    if runs.runs.contains(where: { $0.bound(in: LocalFrame(origin: point)) > plain + 1 }) { skipping += 1 }
                }
            }
        }
        #expect(skipping > compared / 2)  // most points have runs the scan can skip
        // Runs made for another perimeter (other rings) are not used: the distance is the plain one.
        let small = Perimeter.polygon(Polygon(rings: [[Position(lon: 9, lat: 48), Position(lon: 9.01, lat: 48), Position(lon: 9.01, lat: 48.01),
                                                     Position(lon: 9, lat: 48)]]))
        let other = EdgeRuns(.polygon(Polygon(rings: [[Position(lon: 9.5, lat: 48), Position(lon: 9.51, lat: 48), Position(lon: 9.5, lat: 48.01),
                                                      Position(lon: 9.49, lat: 48.01), Position(lon: 9.5, lat: 48)]])))
        let point = Position(lon: 9.02, lat: 48.005)
        #expect(PerimeterDistance.outside(point, perimeter: small, center: point, covered: false, runs: other)
                == PerimeterDistance.outside(point, perimeter: small, center: point, covered: false))
    }

    /// The fast circle test decides only where its error bound allows, so it always agrees with
    /// the exact distance.
    @Test func fastCircleTestAgreesWithTheExactDistance() {
        var rng = SeededGenerator(seed: 3)
        var maxRelativeError = 0.0
        for _ in 0..<20_000 {
            let center = Position(lon: .random(in: -179...179, using: &rng), lat: .random(in: -79...79, using: &rng))
            let radius = Double.random(in: 1...20_000, using: &rng)
            let angle = Double.random(in: 0...(2 * .pi), using: &rng)
            let scale = Double.random(in: 0.9...1.1, using: &rng) * radius / 111_000
            let point = Position(lon: center.lon + scale * cos(angle) / cos(center.lat * .pi / 180), lat: center.lat + scale * sin(angle))
            let exact = Geodesy.inverse(from: center, to: point).distance
            maxRelativeError = max(maxRelativeError, abs(Geodesy.approximateDistance(center, point) - exact) / max(exact, 1))
            #expect(Geodesy.circleContains(center: center, radiusM: radius, point: point) == (exact <= radius))
            // With the point's latitude's sine and cosine computed once per lookup.
            #expect(Geodesy.circleContains(center: center, radiusM: radius, point: point, pointLatitude: .init(point.lat))
                    == (exact <= radius), "\(center) \(radius) \(point)")
        }
        // Points far from the circle (beyond the series' range) and near its edge, to a centimetre.
        for _ in 0..<5_000 {
            let center = Position(lon: .random(in: -179...179, using: &rng), lat: .random(in: -79...79, using: &rng))
            let radius = Double.random(in: 1...20_000, using: &rng)
            let angle = Double.random(in: 0...(2 * .pi), using: &rng)
            let far = Bool.random(using: &rng)
            let scale = (far ? Double.random(in: 1...40, using: &rng) : 1 + .random(in: -1e-6...1e-6, using: &rng)) * radius / 111_000
            let point = Position(lon: center.lon + scale * cos(angle) / cos(center.lat * .pi / 180),
                                 lat: min(89, max(-89, center.lat + scale * sin(angle))))
            let exact = Geodesy.inverse(from: center, to: point).distance
            #expect(Geodesy.circleContains(center: center, radiusM: radius, point: point, pointLatitude: .init(point.lat))
                    == (exact <= radius), "\(center) \(radius) \(point)")
        }
        // The fast path assumes an error below 2e-5 (five times inside its 1e-4 band).
        #expect(maxRelativeError < 2e-5)
    }

    /// A polygon's verified circle measures exactly only the points that can be the farthest,
    /// and gets the same radius as measuring every point. Nearly round rings are the hard case:
    /// many vertices at almost the same distance, where the flat-earth estimate's farthest is
    /// often not the geodesic's.
    @Test func verifiedCircleMeasuresOnlyWhatCanBeFarthest() {
        var rng = SeededGenerator(seed: 11)
        var differentFarthest = 0
        for n in 0..<600 {
            let origin = Position(lon: .random(in: -180...180, using: &rng),
                                  lat: n % 10 == 0 ? .random(in: -89...89, using: &rng) : .random(in: -79.9...79.9, using: &rng))
            // Up to 30 km across: some beyond the estimate's 20 km, which are measured exactly.
            let radius = n % 3 == 0 ? Double.random(in: 1...200, using: &rng) : .random(in: 200...30_000, using: &rng)
            let count = Int.random(in: 3...400, using: &rng)
            let jitter = n % 2 == 0 ? 0 : Double.random(in: 0...0.01, using: &rng)
            var ring = (0..<count).map { i -> Position in
                let angle = Double(i) / Double(count) * 2 * .pi
                let r = radius * (1 + .random(in: -jitter...jitter, using: &rng)) / 111_320
                var lon = origin.lon + r * sin(angle) / max(0.01, cos(origin.lat * .pi / 180))
                if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
                return Position(lon: lon, lat: min(90, max(-90, origin.lat + r * cos(angle))))
            }
            ring.append(ring[0])
            let fast = EnclosingCircle.verified([ring], origin: origin)
            let exact = EnclosingCircle.verified([ring], origin: origin, allExact: true)
            #expect(fast.radiusM == exact.radiusM && fast.center == exact.center, "\(origin) \(radius) m, \(count) vertices")
            // How often the estimate alone would have picked another point than the farthest.
            var points: [Position] = []
            EnclosingCircle.forEachPoint(of: [ring], step: 100) { points.append($0) }
            let byEstimate = points.max { Geodesy.approximateDistance(exact.center, $0) < Geodesy.approximateDistance(exact.center, $1) }!
            if Geodesy.distance(exact.center, byEstimate) != EnclosingCircle.exactlyFarthest(points, from: exact.center) {
                differentFarthest += 1
            }
        }
        // The cases exercise the band: taking the estimate's farthest point alone would be wrong
        // in some of them (5 of these 600).
        #expect(differentFarthest > 0, "\(differentFarthest)")
    }

    /// Welzl's circle is the smallest: on the tangent plane it uses, no circle through two or
    /// three of the points (which is where the smallest one lies) that holds them all is smaller,
    /// checked by trying them all on 400 random sets of up to 14 points, some collinear.
    @Test func theEnclosingCircleIsTheSmallest() {
        typealias Point = (x: Double, y: Double)
        func distance(_ a: Point, _ b: Point) -> Double {
            let dx: Double = a.x - b.x, dy: Double = a.y - b.y
            return (dx * dx + dy * dy).squareRoot()
        }
        /// The circle through three points, nil for (nearly) collinear ones.
        func through(_ a: Point, _ b: Point, _ c: Point) -> (center: Point, r: Double)? {
            let d: Double = 2 * (a.x * (b.y - c.y) + b.x * (c.y - a.y) + c.x * (a.y - b.y))
            guard abs(d) > 1e-9 else { return nil }
            let a2: Double = a.x * a.x + a.y * a.y, b2: Double = b.x * b.x + b.y * b.y, c2: Double = c.x * c.x + c.y * c.y
            let x: Double = (a2 * (b.y - c.y) + b2 * (c.y - a.y) + c2 * (a.y - b.y)) / d
            let y: Double = (a2 * (c.x - b.x) + b2 * (a.x - c.x) + c2 * (b.x - a.x)) / d
            return ((x, y), distance(a, (x, y)))
        }
        var rng = SeededGenerator(seed: 7)
        for n in 0..<400 {
            let origin = Position(lon: .random(in: -170...170, using: &rng), lat: .random(in: -70...70, using: &rng))
            let count = Int.random(in: 1...14, using: &rng)
            let frame = LocalFrame(origin: origin)
            var points: [Position] = []
            for i in 0..<count {
                if n % 5 == 0 { // on one line
                    let t = Double(i) / 14
                    points.append(Position(lon: origin.lon + 0.01 * t, lat: origin.lat + 0.005 * t))
                } else {
                    let dLon = Double.random(in: -0.02...0.02, using: &rng), dLat = Double.random(in: -0.02...0.02, using: &rng)
                    points.append(Position(lon: origin.lon + dLon, lat: origin.lat + dLat))
                }
            }
            let found = EnclosingCircle.of(points, origin: origin, marginM: 0)
            let p: [Point] = points.map { let q = frame.project($0); return (q.0, q.1) }
            func holdsAll(_ center: Point, _ r: Double) -> Bool { p.allSatisfy { distance($0, center) <= r + 1e-6 } }
            var best = count == 1 ? 0.0 : Double.infinity
            for i in p.indices {
                for j in p.indices where j > i {
                    let half = distance(p[i], p[j]) / 2
                    if half < best, holdsAll(((p[i].x + p[j].x) / 2, (p[i].y + p[j].y) / 2), half) { best = half }
                    for k in p.indices where k > j {
                        if let c = through(p[i], p[j], p[k]), c.r < best, holdsAll(c.center, c.r) { best = c.r }
                    }
                }
            }
            let projected = frame.project(found.center)
            #expect(holdsAll((projected.0, projected.1), found.radiusM), "set \(n): the circle must hold every point")
            #expect(abs(found.radiusM - best) <= 1e-6 * max(1, best), "set \(n): \(found.radiusM) against the smallest \(best)")
        }
    }

    @Test func circleBoxesContainTheCircle() {
        var rng = SeededGenerator(seed: 9)
        for _ in 0..<2000 {
            let center = Position(lon: .random(in: -180...180, using: &rng), lat: .random(in: -89.9...89.9, using: &rng))
            let radius = Double.random(in: 1...100_000, using: &rng)
            let boxes = Geodesy.boundingBoxes(center: center, radiusM: radius)
            for k in 0..<16 {
                // Points on the circle, found by bisection along a direction.
                let angle = Double(k) / 16 * 2 * .pi
                var lo = 0.0, hi = radius / 50_000
                for _ in 0..<50 {
                    let mid = (lo + hi) / 2
                    var lon = center.lon + mid * sin(angle) / max(cos(center.lat * .pi / 180), 1e-6)
                    if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
                    let p = Position(lon: lon, lat: max(-90, min(90, center.lat + mid * cos(angle))))
                    if Geodesy.distance(center, p) <= radius { lo = mid } else { hi = mid }
                }
                var lon = center.lon + lo * sin(angle) / max(cos(center.lat * .pi / 180), 1e-6)
                if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
                let p = Position(lon: lon, lat: max(-90, min(90, center.lat + lo * cos(angle))))
                #expect(boxes.contains { $0.contains(p) }, "center \(center) r \(radius) point \(p)")
            }
        }
    }

    @Test func splitsBoxesAtTheAntimeridian() {
        let boxes = Geodesy.boundingBoxes(center: Position(lon: 179.999, lat: 0), radiusM: 1000)
        #expect(boxes.count == 2)
        #expect(boxes.contains { $0.contains(Position(lon: -179.995, lat: 0)) })
        #expect(Geodesy.circleContains(center: Position(lon: 179.999, lat: 0), radiusM: 1000, point: Position(lon: -179.995, lat: 0)))
    }
}
