package import DBeaconCore

/// Point-in-polygon for large polygons: the rings' edges bucketed into horizontal strips and
/// sorted by their eastern end, so a test looks only at the edges whose latitude range spans
/// the point's latitude and that reach east of it — a small fraction of a 5,000-vertex region.
///
/// The test itself is GEOS's `RayCrossingCounter` (the algorithm behind `ST_Covers` and
/// prepared-geometry point location), with GEOS's orientation predicate — a floating-point
/// filter and a double-double fallback — so the answer, boundary cases included, is the one
/// GEOS gives. The rings are shared with the beacon (copy-on-write arrays), so the index
/// adds only its strip table and at most about twelve bytes per edge.
package struct IndexedPolygon: Sendable {
    private let rings: [Ring]
    private let south: Double, north: Double, west: Double, east: Double
    private let stripHeight: Double
    private let stripCount: Int
    /// Edges of strip `s` are `edges[stripStart[s] ..< stripStart[s+1]]`; an edge is
    /// `ring << 24 | index of its first vertex`.
    private let stripStart: [UInt32]
    private let edges: [UInt32]

    package init(_ polygon: Polygon) {
        rings = polygon.rings
        let box = BoundingBox(of: polygon.exterior)
        south = box.south
        north = box.north
        west = box.west
        east = box.east
        let edgeCount = polygon.rings.reduce(0) { $0 + max(0, $1.count - 1) }
        // As many strips as keep the index small: an edge is listed in every strip its latitude
        // range touches, so with total edge height Σh and S strips over the height Y there are
        // about E + Σh·S/Y references; S ≤ 2·E·Y/Σh keeps that under 3 per edge, whatever the
        // shape (long zig-zag edges get fewer, taller strips).
        var totalHeight = 0.0
        for ring in polygon.rings where ring.count > 1 {
            for i in 0..<(ring.count - 1) { totalHeight += abs(ring[i + 1].lat - ring[i].lat) }
        }
        let extent = box.north - box.south
        var strips = max(1, edgeCount / 4)
        if totalHeight > 0 && extent > 0 {
            strips = min(strips, max(1, Int(2 * Double(edgeCount) * extent / totalHeight)))
        }
        stripCount = min(strips, 1 << 16)
        let height = extent / Double(stripCount)
        let h = height > 0 ? height : 1
        stripHeight = h
        let n = stripCount, s0 = box.south
        // Two passes (count, then fill) into compressed-row arrays.
        var counts = [UInt32](repeating: 0, count: n + 1)
        func range(_ a: Position, _ b: Position) -> ClosedRange<Int> {
            Self.strip(min(a.lat, b.lat), south: s0, height: h, count: n)...Self.strip(max(a.lat, b.lat), south: s0, height: h, count: n)
        }
        for ring in polygon.rings where ring.count > 1 {
            for i in 0..<(ring.count - 1) { for s in range(ring[i], ring[i + 1]) { counts[s + 1] += 1 } }
        }
        for s in 0..<n { counts[s + 1] += counts[s] }
        var fill = counts
        var edges = [UInt32](repeating: 0, count: Int(counts[n]))
        for (r, ring) in polygon.rings.enumerated() where ring.count > 1 {
            for i in 0..<(ring.count - 1) {
                for s in range(ring[i], ring[i + 1]) {
                    edges[Int(fill[s])] = UInt32(r) << 24 | UInt32(i)
                    fill[s] += 1
                }
            }
        }
        // Within a strip, edges by decreasing eastern end: a test stops at the first edge that
        // lies wholly west of the point (the ray runs east).
        let rings = polygon.rings
        func eastEnd(_ ref: UInt32) -> Double {
            let ring = rings[Int(ref >> 24)], i = Int(ref & 0xFF_FFFF)
            return max(ring[i].lon, ring[i + 1].lon)
        }
        for s in 0..<n where counts[s + 1] - counts[s] > 1 {
            edges[Int(counts[s])..<Int(counts[s + 1])].sort { eastEnd($0) > eastEnd($1) }
        }
        stripStart = counts
        self.edges = edges
    }

    @inline(__always)
    private static func strip(_ lat: Double, south: Double, height: Double, count: Int) -> Int {
        let s = Int(((lat - south) / height).rounded(.down))
        return s < 0 ? 0 : (s >= count ? count - 1 : s)
    }

    /// True when the polygon covers the point (interior or boundary, holes excluded).
    package func covers(lon x: Double, lat y: Double) -> Bool {
        guard y >= south, y <= north, x >= west, x <= east else { return false }
        let s = Self.strip(y, south: south, height: stripHeight, count: stripCount)
        var crossings = 0
        return rings.withUnsafeBufferPointer { rings in
            for k in Int(stripStart[s])..<Int(stripStart[s + 1]) {
                let ref = edges[k]
                let ring = rings[Int(ref >> 24)]
                let i = Int(ref & 0xFF_FFFF)
                let p1 = ring[i], p2 = ring[i + 1]
                // GEOS RayCrossingCounter::countSegment, ray towards +x. Edges are sorted by
                // decreasing eastern end, so once one lies wholly west, all the rest do.
                if p1.lon < x && p2.lon < x { break }
                if x == p2.lon && y == p2.lat { return true }
                if p1.lat == y && p2.lat == y {
                    let lo = min(p1.lon, p2.lon), hi = max(p1.lon, p2.lon)
                    if x >= lo && x <= hi { return true }
                    continue
                }
                if (p1.lat > y && p2.lat <= y) || (p2.lat > y && p1.lat <= y) {
                    var sign = Orientation.index(p1.lon, p1.lat, p2.lon, p2.lat, x, y)
                    if sign == 0 { return true }
                    if p2.lat < p1.lat { sign = -sign }
                    if sign > 0 { crossings += 1 }
                }
            }
            return crossings & 1 == 1
        }
    }

    /// Number of edge references (memory accounting).
    package var edgeReferences: Int { edges.count }
}

/// GEOS's `Orientation::index` (`CGAlgorithmsDD::orientationIndex`): the side of `q` relative
/// to the directed line p1→p2 (1 left, −1 right, 0 collinear), with a floating-point filter
/// and a double-double fallback near zero.
package enum Orientation {
    @inline(__always)
    package static func index(_ p1x: Double, _ p1y: Double, _ p2x: Double, _ p2y: Double, _ qx: Double, _ qy: Double) -> Int {
        let filtered = filter(p1x, p1y, p2x, p2y, qx, qy)
        if filtered <= 1 { return filtered }
        let dx1 = DD(p2x) + DD(-p1x)
        let dy1 = DD(p2y) + DD(-p1y)
        let dx2 = DD(qx) + DD(-p2x)
        let dy2 = DD(qy) + DD(-p2y)
        return (dx1 * dy2 - dy1 * dx2).signum
    }

    @inline(__always)
    static func sign(_ x: Double) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

    /// `orientationIndexFilter`: the sign when it is certain, 2 otherwise.
    @inline(__always)
    static func filter(_ pax: Double, _ pay: Double, _ pbx: Double, _ pby: Double, _ pcx: Double, _ pcy: Double) -> Int {
        let detleft = (pax - pcx) * (pby - pcy)
        let detright = (pay - pcy) * (pbx - pcx)
        let det = detleft - detright
        let detsum: Double
        if detleft > 0 {
            if detright <= 0 { return sign(det) }
            detsum = detleft + detright
        } else if detleft < 0 {
            if detright >= 0 { return sign(det) }
            detsum = -detleft - detright
        } else {
            return sign(det)
        }
        let errbound = 1e-15 * detsum
        if det >= errbound || -det >= errbound { return sign(det) }
        return 2
    }

    /// GEOS's double-double number (`geos::math::DD`), with the operations the predicate uses.
    struct DD {
        var hi: Double
        var lo: Double

        init(_ x: Double) { hi = x; lo = 0 }
        init(_ hi: Double, _ lo: Double) { self.hi = hi; self.lo = lo }

        static func + (x: DD, y: DD) -> DD {
            let S = x.hi + y.hi
            let T = x.lo + y.lo
            var e = S - x.hi
            let f = T - x.lo
            var s = S - e
            var t = T - f
            s = (y.hi - e) + (x.hi - s)
            t = (y.lo - f) + (x.lo - t)
            e = s + T
            let H = S + e
            let h = e + (S - H)
            e = t + h
            let zhi = H + e
            return DD(zhi, e + (H - zhi))
        }

        static func - (x: DD, y: DD) -> DD { x + DD(-y.hi, -y.lo) }

        static func * (x: DD, y: DD) -> DD {
            let split = 134_217_729.0
            var C = split * x.hi
            var hx = C - x.hi
            var c = split * y.hi
            hx = C - hx
            let tx = x.hi - hx
            var hy = c - y.hi
            C = x.hi * y.hi
            hy = c - hy
            let ty = y.hi - hy
            c = ((((hx * hy - C) + hx * ty) + tx * hy) + tx * ty) + (x.hi * y.lo + x.lo * y.hi)
            let zhi = C + c
            hx = C - zhi
            return DD(zhi, c + hx)
        }

        var signum: Int {
            if hi > 0 { return 1 }
            if hi < 0 { return -1 }
            if lo > 0 { return 1 }
            if lo < 0 { return -1 }
            return 0
        }
    }
}

/// A 16×16 raster over a large polygonal perimeter's box that settles most point tests with
/// one memory access: a cell that no edge's box touches lies wholly inside or wholly outside
/// the perimeter (decided once, exactly, at its centre); only points in cells an edge touches
/// need the edge test. Plain data (96 bytes), so it sits in a dense array next to the index.
package struct PolygonRaster: Sendable {
    package static let side = 16
    private let west: Double, south: Double, invWidth: Double, invHeight: Double
    /// Two bits per cell: 0 outside, 1 inside, 2 an edge passes (test exactly).
    private let bits: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    package static let outside: UInt8 = 0, inside: UInt8 = 1, unknown: UInt8 = 2

    /// `covers` is the exact test of the whole perimeter (all polygons).
    package init(polygons: [Polygon], box: BoundingBox, covers: (Double, Double) -> Bool) {
        let n = Self.side
        let width = max(box.east - box.west, 1e-12), height = max(box.north - box.south, 1e-12)
        west = box.west
        south = box.south
        invWidth = Double(n) / width
        invHeight = Double(n) / height
        var cells = [UInt8](repeating: 255, count: n * n)
        let (w, s, iw, ih) = (west, south, invWidth, invHeight)
        func column(_ x: Double) -> Int { min(n - 1, max(0, Int(((x - w) * iw).rounded(.down)))) }
        func row(_ y: Double) -> Int { min(n - 1, max(0, Int(((y - s) * ih).rounded(.down)))) }
        for polygon in polygons {
            for ring in polygon.rings where ring.count > 1 {
                for i in 0..<(ring.count - 1) {
                    let a = ring[i], b = ring[i + 1]
                    let eps = 1e-9
                    for r in row(min(a.lat, b.lat) - eps)...row(max(a.lat, b.lat) + eps) {
                        for c in column(min(a.lon, b.lon) - eps)...column(max(a.lon, b.lon) + eps) {
                            cells[r * n + c] = Self.unknown
                        }
                    }
                }
            }
        }
        for r in 0..<n {
            for c in 0..<n where cells[r * n + c] == 255 {
                let x = w + (Double(c) + 0.5) / iw, y = s + (Double(r) + 0.5) / ih
                // A centre that does not map back into its own cell (rounding) is left to the exact test.
                guard column(x) == c, row(y) == r else { cells[r * n + c] = Self.unknown; continue }
                cells[r * n + c] = covers(x, y) ? Self.inside : Self.outside
            }
        }
        var words = [UInt64](repeating: 0, count: 8)
        for (i, v) in cells.enumerated() { words[i / 32] |= UInt64(v) << UInt64((i % 32) * 2) }
        bits = (words[0], words[1], words[2], words[3], words[4], words[5], words[6], words[7])
    }

    /// `inside`, `outside`, or `unknown` (test exactly) for a point within the box.
    @inline(__always)
    package func classify(lon: Double, lat: Double) -> UInt8 {
        let n = Self.side
        let c = min(n - 1, max(0, Int(((lon - west) * invWidth).rounded(.down))))
        let r = min(n - 1, max(0, Int(((lat - south) * invHeight).rounded(.down))))
        let i = r * n + c
        let word: UInt64
        switch i / 32 {
        case 0: word = bits.0
        case 1: word = bits.1
        case 2: word = bits.2
        case 3: word = bits.3
        case 4: word = bits.4
        case 5: word = bits.5
        case 6: word = bits.6
        default: word = bits.7
        }
        return UInt8((word >> UInt64((i % 32) * 2)) & 3)
    }
}
