import DBeaconCore
import DBeaconGeo
import Foundation
import Testing

@Suite struct GeodesyTests {
    /// Distances and bearings agree with GeographicLib within 0.01% (in practice to micrometres).
    @Test func agreesWithGeographicLib() throws {
        var rng = SeededGenerator(seed: 42)
        var pairs: [(Position, Position)] = []
        // City scale around Stuttgart, continental scale, and global (not nearly antipodal).
        for _ in 0..<400 {
            let a = Position(lon: 9.18 + .random(in: -0.1...0.1, using: &rng), lat: 48.78 + .random(in: -0.1...0.1, using: &rng))
            let b = Position(lon: a.lon + .random(in: -0.02...0.02, using: &rng), lat: a.lat + .random(in: -0.02...0.02, using: &rng))
            pairs.append((a, b))
        }
        for _ in 0..<400 {
            let a = Position(lon: .random(in: -180...180, using: &rng), lat: .random(in: -85...85, using: &rng))
            let b = Position(lon: .random(in: -180...180, using: &rng), lat: .random(in: -85...85, using: &rng))
            if abs(abs(a.lon - b.lon) - 180) < 5 && abs(a.lat + b.lat) < 5 { continue }  // nearly antipodal
            pairs.append((a, b))
        }
        let input: JSONValue = .object(["pairs": .array(pairs.map { [.number($0.0.lat), .number($0.0.lon), .number($0.1.lat), .number($0.1.lon)] })])
        let reference = try runReference("geodesic_reference.py", input: input)["results"]!.arrayValue!
        for (i, (a, b)) in pairs.enumerated() {
            let expected = reference[i].arrayValue!.compactMap(\.numberValue)
            let (d, bearing) = Geodesy.inverse(from: a, to: b)
            #expect(abs(d - expected[0]) <= max(expected[0] * 1e-4, 1e-6), "distance \(a) → \(b)")
            var bearingError = abs(bearing - expected[1])
            bearingError = min(bearingError, 360 - bearingError)
            #expect(bearingError < 1e-5 || expected[0] < 1e-3, "bearing \(a) → \(b)")
        }
    }

    /// The fast circle test decides only where its error bound allows, so it always agrees with Vincenty.
    @Test func fastCircleTestAgreesWithVincenty() {
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
