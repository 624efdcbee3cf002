package import DBeaconCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A range to a beacon at a known position (from RSSI).
package struct RangeMeasurement: Sendable, Hashable {
    package var anchor: Position
    /// The building level of the anchor, if known.
    package var level: Int?
    /// Estimated distance in metres.
    package var distanceM: Double

    package init(anchor: Position, level: Int? = nil, distanceM: Double) {
        self.anchor = anchor
        self.level = level
        self.distanceM = distanceM
    }
}

/// An estimated device position.
package struct PositionEstimate: Sendable, Hashable {
    package enum Method: String, Sendable, Hashable {
        /// Weighted least squares on the ranges.
        case trilateration
        /// Range-weighted centroid of the anchors (collinear anchors, or no convergence).
        case centroid
    }

    package var position: Position
    /// One-sigma horizontal error estimate (distance RMS), metres.
    package var accuracyM: Double
    /// The level of the nearest anchor that has one.
    package var level: Int?
    package var method: Method
    /// How many ranges the estimate used.
    package var anchors: Int
}

/// Position from ranges to three or more beacons at known positions.
///
/// The anchors are projected onto a local tangent plane (east/north metres around their
/// centroid, using the WGS84 radii of curvature there: exact to millimetres over a building).
/// RSSI noise in dB makes range errors proportional to range (σᵢ ≈ k·dᵢ), so the position
/// minimises the weighted sum Σ (ln‖p − aᵢ‖ − ln dᵢ)² / k², which to first order is
/// Σ wᵢ (‖p − aᵢ‖ − dᵢ)² with wᵢ = 1/(k·dᵢ)², by Gauss–Newton from two starts (the linearised
/// closed-form solution and the weighted centroid), keeping the lower cost. When the geometry is degenerate
/// (anchors on a line) or the solver fails, the range-weighted centroid is returned instead.
/// Accuracy is √trace of the covariance (JᵀWJ)⁻¹, scaled up by the a-posteriori variance factor
/// when there are redundant ranges that disagree.
package struct Trilateration: Sendable {
    /// Relative 1-σ range error (see `PathLoss.relativeRangeError`).
    package var relativeRangeError: Double
    /// Ranges below this are treated as this (σ would vanish otherwise).
    package var minRangeM = 0.5

    package init(relativeRangeError: Double = 0.46) {
        self.relativeRangeError = relativeRangeError
    }

    /// The estimate, or nil with fewer than three usable ranges.
    package func estimate(_ input: [RangeMeasurement]) -> PositionEstimate? {
        var ranges = input.filter { $0.distanceM.isFinite && $0.distanceM >= 0 && $0.anchor.isValid }
        guard ranges.count >= 3 else { return nil }
        // Several floors: keep the nearest anchor's floor when it alone still has three anchors.
        let level = ranges.filter { $0.level != nil }.min { $0.distanceM < $1.distanceM }?.level
        if let level {
            let sameFloor = ranges.filter { $0.level == nil || $0.level == level }
            if sameFloor.count >= 3 { ranges = sameFloor }
        }
        let plane = LocalFrame(origin: Self.centroid(ranges.map(\.anchor)))
        let anchors = ranges.map { plane.vector($0.anchor) }
        let d = ranges.map { max($0.distanceM, minRangeM) }
        let w = 1 / (relativeRangeError * relativeRangeError)

        let centroid = Self.weightedCentroid(anchors, weights: d.map { 1 / ($0 * $0) })
        var best: (p: Vec2, cost: Double, normal: Sym2)?
        for start in [Self.linearSolution(anchors, d), centroid].compactMap({ $0 }) {
            guard let solved = gaussNewton(start: start, anchors, d, w) else { continue }
            if best == nil || solved.cost < best!.cost { best = solved }
        }
        let spread = anchors.map { ($0 - centroid).norm }.max() ?? 0
        if let best, let cov = best.normal.inverse, (best.p - centroid).norm <= spread + (d.max() ?? 0) {
            let dof = Double(anchors.count - 2)
            let varianceFactor = anchors.count > 3 ? max(1, best.cost / dof) : 1
            let accuracy = (max(0, cov.a + cov.c) * varianceFactor).squareRoot()
            return PositionEstimate(position: plane.position(best.p), accuracyM: max(accuracy, 0.1), level: level,
                                    method: .trilateration, anchors: anchors.count)
        }
        // Weighted centroid: as good as the ranges say we are close to the anchors.
        let sw = d.reduce(0) { $0 + 1 / ($1 * $1) }
        let rms = (zip(anchors, d).reduce(0) { acc, x in
            let e = (x.0 - centroid).norm
            return acc + (e * e + x.1 * x.1) / (x.1 * x.1)
        } / sw).squareRoot()
        return PositionEstimate(position: plane.position(centroid), accuracyM: max(rms, 0.1), level: level,
                                method: .centroid, anchors: anchors.count)
    }

    // MARK: Solver

    /// Gauss–Newton on log-range residuals rᵢ = ln‖p − aᵢ‖ − ln dᵢ, each of variance k²: the
    /// maximum-likelihood fit for Gaussian RSSI noise (log-normal ranges). Near the solution it
    /// is least squares on the ranges weighted by 1/(k·dᵢ)².
    private func gaussNewton(start: Vec2, _ a: [Vec2], _ d: [Double], _ w: Double) -> (p: Vec2, cost: Double, normal: Sym2)? {
        func cost(_ p: Vec2) -> Double {
            var c = 0.0
            for i in a.indices {
                let r = log(max((p - a[i]).norm, 1e-3)) - log(d[i])
                c += w * r * r
            }
            return c
        }
        func normal(at p: Vec2) -> (Sym2, Vec2) {
            var n = Sym2(a: 0, b: 0, c: 0)
            var g = Vec2(0, 0)
            for i in a.indices {
                let v = p - a[i]
                let len2 = max(v.x * v.x + v.y * v.y, 1e-6)
                let j = Vec2(v.x / len2, v.y / len2)
                let r = 0.5 * log(len2) - log(d[i])
                n.a += w * j.x * j.x
                n.b += w * j.x * j.y
                n.c += w * j.y * j.y
                g.x += w * j.x * r
                g.y += w * j.y * r
            }
            return (n, g)
        }
        var p = start
        var current = cost(p)
        for _ in 0..<100 {
            let (n, g) = normal(at: p)
            guard let inv = n.inverse else { return nil }
            var step = Vec2(-(inv.a * g.x + inv.b * g.y), -(inv.b * g.x + inv.c * g.y))
            // Step halving keeps each iteration downhill.
            var next = p + step
            var nextCost = cost(next)
            var halvings = 0
            while nextCost > current && halvings < 30 {
                step = Vec2(step.x / 2, step.y / 2)
                next = p + step
                nextCost = cost(next)
                halvings += 1
            }
            if nextCost > current { break }
            p = next
            current = nextCost
            if step.norm < 1e-6 { break }
        }
        guard p.x.isFinite, p.y.isFinite else { return nil }
        // The normal matrix at the solution gives the covariance.
        return (p, current, normal(at: p).0)
    }

    /// Subtracting the first range equation from the others gives a linear system in (x, y);
    /// its weighted least-squares solution is exact for exact ranges. Nil when degenerate.
    static func linearSolution(_ a: [Vec2], _ d: [Double]) -> Vec2? {
        // Reference: the nearest anchor; equations weighted by the larger range's 1/d².
        let w = d.map { 1 / ($0 * $0) }
        let r = w.indices.max { w[$0] < w[$1] } ?? 0
        var n = Sym2(a: 0, b: 0, c: 0)
        var rhs = Vec2(0, 0)
        for i in a.indices where i != r {
            let ax = 2 * (a[i].x - a[r].x), ay = 2 * (a[i].y - a[r].y)
            let b = d[r] * d[r] - d[i] * d[i] + a[i].x * a[i].x - a[r].x * a[r].x + a[i].y * a[i].y - a[r].y * a[r].y
            let wi = min(w[i], w[r])
            n.a += wi * ax * ax
            n.b += wi * ax * ay
            n.c += wi * ay * ay
            rhs.x += wi * ax * b
            rhs.y += wi * ay * b
        }
        guard let inv = n.inverse else { return nil }
        return Vec2(inv.a * rhs.x + inv.b * rhs.y, inv.b * rhs.x + inv.c * rhs.y)
    }

    static func weightedCentroid(_ a: [Vec2], weights: [Double]) -> Vec2 {
        let sw = weights.reduce(0, +)
        var c = Vec2(0, 0)
        for (p, wi) in zip(a, weights) {
            c.x += p.x * wi / sw
            c.y += p.y * wi / sw
        }
        return c
    }

    static func centroid(_ points: [Position]) -> Position {
        let n = Double(points.count)
        return Position(lon: points.reduce(0) { $0 + $1.lon } / n, lat: points.reduce(0) { $0 + $1.lat } / n)
    }
}

struct Vec2: Sendable, Hashable {
    var x: Double
    var y: Double
    init(_ x: Double, _ y: Double) {
        self.x = x
        self.y = y
    }
    var norm: Double { (x * x + y * y).squareRoot() }
    static func - (l: Vec2, r: Vec2) -> Vec2 { Vec2(l.x - r.x, l.y - r.y) }
    static func + (l: Vec2, r: Vec2) -> Vec2 { Vec2(l.x + r.x, l.y + r.y) }
}

/// A symmetric 2×2 matrix [[a, b], [b, c]].
struct Sym2: Sendable {
    var a: Double
    var b: Double
    var c: Double

    /// The inverse, or nil when (nearly) singular relative to the matrix's scale.
    var inverse: Sym2? {
        let det = a * c - b * b
        let scale = max(abs(a), abs(c), 1e-300)
        guard det.isFinite, det > 1e-9 * scale * scale else { return nil }
        return Sym2(a: c / det, b: -b / det, c: a / det)
    }
}
