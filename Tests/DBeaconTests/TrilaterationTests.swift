import DBeaconCore
import DBeaconGeo
import Foundation
import Testing

/// Log-distance ranging and weighted least-squares trilateration on simulated RSSI.
@Suite(.bounded) struct TrilaterationTests {
    /// A 30 m × 20 m hall near Stuttgart's Schlossplatz with a beacon in each corner.
    static let origin = Position(lon: 9.1800, lat: 48.7784)
    static func at(_ east: Double, _ north: Double) -> Position { LocalFrame.offset(origin, east: east, north: north) }
    static let corners = [at(0, 0), at(30, 0), at(30, 20), at(0, 20)]

    /// Ranges as a device at `truth` would compute them from RSSI with Gaussian noise of `sigma` dB.
    static func ranges(to anchors: [Position], from truth: Position, sigma: Double, model: PathLoss,
                       rng: inout SeededGenerator) -> [RangeMeasurement] {
        anchors.map { a in
            let d = Geodesy.distance(a, truth)
            let rssi = (model.rssi(atDistance: d, measuredPower: -59) + sigma * gaussian(&rng)).rounded()
            return RangeMeasurement(anchor: a, distanceM: model.distance(rssi: Int(min(rssi, -1)), measuredPower: -59) ?? d)
        }
    }

    static func gaussian(_ rng: inout SeededGenerator) -> Double {
        let u1 = Double.random(in: Double.ulpOfOne..<1, using: &rng), u2 = Double.random(in: 0..<1, using: &rng)
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }

    @Test func pathLossDistancesAndProximity() {
        let model = PathLoss(exponent: 2)
        #expect(model.distance(rssi: -59, measuredPower: -59) == 1)
        #expect(abs(model.distance(rssi: -79, measuredPower: -59)! - 10) < 1e-9)
        #expect(abs(PathLoss(exponent: 3).distance(rssi: -89, measuredPower: -59)! - 10) < 1e-9)
        #expect(model.distance(rssi: 0, measuredPower: -59) == nil)
        #expect(model.proximity(distanceM: 0.3) == .immediate)
        #expect(model.proximity(distanceM: 2) == .near)
        #expect(model.proximity(distanceM: 8) == .far)
        #expect(model.proximity(distanceM: nil) == .unknown)
        // The model is its own inverse.
        #expect(abs(model.distance(rssi: Int(model.rssi(atDistance: 100, measuredPower: -59)), measuredPower: -59)! - 100) < 1e-6)
    }

    @Test func exactRangesGiveTheExactPosition() throws {
        for truth in [Self.at(12, 7), Self.at(1, 1), Self.at(29, 19), Self.at(15, 10), Self.at(40, -5)] {
            let ranges = Self.corners.prefix(3).map { RangeMeasurement(anchor: $0, distanceM: Geodesy.distance($0, truth)) }
            let e = try #require(Trilateration().estimate(Array(ranges)))
            #expect(e.method == .trilateration)
            #expect(Geodesy.distance(e.position, truth) < 0.01, "truth \(truth) → \(e.position)")
            #expect(e.anchors == 3)
        }
    }

    /// 300 random positions in the hall, four corner beacons, RSSI with `sigma` dB of Gaussian
    /// noise rounded to whole dB as radios report it. Errors grow linearly with the noise
    /// (about ±11.5 % of range per dB); the weighted centroid is biased (about 2 m here even
    /// without noise) but bounded, so least squares wins while the noise is moderate.
    @Test(arguments: [1.0, 2.0])
    func noisyRSSIStaysWithinAFewMetresAndTheAccuracyIsHonest(sigma: Double) throws {
        var rng = SeededGenerator(seed: 42)
        let model = PathLoss(exponent: 2)
        let solver = Trilateration(relativeRangeError: model.relativeRangeError(sigmaDB: sigma))
        var errors: [Double] = [], centroidErrors: [Double] = [], within = 0
        let trials = 300
        for _ in 0..<trials {
            let truth = Self.at(Double.random(in: 1...29, using: &rng), Double.random(in: 1...19, using: &rng))
            let ranges = Self.ranges(to: Self.corners, from: truth, sigma: sigma, model: model, rng: &rng)
            let e = try #require(solver.estimate(ranges))
            let error = Geodesy.distance(e.position, truth)
            errors.append(error)
            if error <= 2 * e.accuracyM { within += 1 }
            let w = ranges.map { 1 / ($0.distanceM * $0.distanceM) }
            let lat = zip(ranges, w).reduce(0) { $0 + $1.0.anchor.lat * $1.1 } / w.reduce(0, +)
            let lon = zip(ranges, w).reduce(0) { $0 + $1.0.anchor.lon * $1.1 } / w.reduce(0, +)
            centroidErrors.append(Geodesy.distance(Position(lon: lon, lat: lat), truth))
        }
        errors.sort()
        centroidErrors.sort()
        let median = errors[trials / 2], p90 = errors[trials * 9 / 10]
        print("trilateration, 4 anchors, \(sigma) dB noise: median \(median) m, p90 \(p90) m, "
              + "centroid median \(centroidErrors[trials / 2]) m, \(within)/\(trials) within 2× accuracy")
        #expect(median < 2.2 * sigma, "median error \(median) m")
        #expect(p90 < 4.5 * sigma, "90th percentile \(p90) m")
        if sigma <= 1 {
            #expect(median < centroidErrors[trials / 2], "least squares \(median) m vs centroid \(centroidErrors[trials / 2]) m")
        }
        // The accuracy estimate is a 1-sigma DRMS: nearly all errors lie within twice it.
        #expect(Double(within) / Double(trials) > 0.85, "\(within) of \(trials) within 2× accuracy")
    }

    @Test func collinearAnchorsFallBackToTheWeightedCentroid() throws {
        let line = [Self.at(0, 0), Self.at(10, 0), Self.at(20, 0)]
        let truth = Self.at(10, 5)
        let e = try #require(Trilateration().estimate(line.map { RangeMeasurement(anchor: $0, distanceM: Geodesy.distance($0, truth)) }))
        #expect(e.method == .centroid)
        #expect(Geodesy.distance(e.position, Self.at(10, 0)) < 1)
        #expect(e.accuracyM >= 5)
    }

    @Test func fewerThanThreeRangesGiveNothingAndFloorsAreKeptApart() throws {
        #expect(Trilateration().estimate([RangeMeasurement(anchor: Self.at(0, 0), distanceM: 3),
                                          RangeMeasurement(anchor: Self.at(9, 0), distanceM: 6)]) == nil)
        // Three beacons on floor 1 around the device, two on floor 0 heard faintly through the ceiling.
        let truth = Self.at(10, 10)
        var ranges = [Self.at(0, 0), Self.at(20, 0), Self.at(10, 20)].map {
            RangeMeasurement(anchor: $0, level: 1, distanceM: Geodesy.distance($0, truth))
        }
        ranges += [Self.at(30, 30), Self.at(-20, 15)].map { RangeMeasurement(anchor: $0, level: 0, distanceM: 25) }
        let e = try #require(Trilateration().estimate(ranges))
        #expect(e.level == 1 && e.anchors == 3)
        #expect(Geodesy.distance(e.position, truth) < 0.01)
    }
}
