package import DBeaconCore

/// Point-in-polygon for large polygons: the rings' edges bucketed into horizontal strips and
/// sorted by their eastern end, so a test looks only at the edges whose latitude range spans
/// the point's latitude and that reach east of it — a small fraction of a 5,000-vertex region.
///
/// The test itself is GEOS's `RayCrossingCounter` (the algorithm behind `ST_Covers` and
/// prepared-geometry point location), with GEOS's orientation predicate — a floating-point
/// filter and a double-double fallback — so the answer, boundary cases included, is the one
/// GEOS gives. The rings are shared with the beacon (copy-on-write arrays), so the index
/// adds only its strip table and at most about four bytes per edge (eight for polygons whose
/// ring and vertex numbers do not fit in 16 bits together).
package struct IndexedPolygon: Sendable {
    private let rings: [Ring]
    private let south: Double, north: Double, west: Double, east: Double
    private let stripHeight: Double
    private let stripCount: Int
    /// Edges of strip `s` are `edges[stripStart[s] ..< stripStart[s+1]]`; an edge is
    /// `ring << shift | index of its first vertex`, in `edges16` when every such number fits
    /// in 16 bits (the other array is empty), else in `edges32`.
    private let stripStart: [UInt32]
    private let edges16: [UInt16]
    private let edges32: [UInt32]
    private let shift: UInt32

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
        // about E + Σh·S/Y references; S ≤ E·Y/Σh keeps that under 2 per edge, whatever the
        // shape (long zig-zag edges get fewer, taller strips). About eight edges per strip:
        // the raster settles most points before this test.
        var totalHeight = 0.0
        for ring in polygon.rings where ring.count > 1 {
            for i in 0..<(ring.count - 1) { totalHeight += abs(ring[i + 1].lat - ring[i].lat) }
        }
        let extent = box.north - box.south
        var strips = max(1, edgeCount / 8)
        if totalHeight > 0 && extent > 0 {
            strips = min(strips, max(1, Int(Double(edgeCount) * extent / totalHeight)))
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
        // Bits for a vertex index and for a ring number.
        func bits(_ maxValue: Int) -> UInt32 { maxValue <= 0 ? 0 : UInt32(Int.bitWidth - maxValue.leadingZeroBitCount) }
        let vertexBits = bits(polygon.rings.map { $0.count - 2 }.max() ?? 0)
        let narrow = vertexBits + bits(polygon.rings.count - 1) <= 16
        let shift: UInt32 = narrow ? vertexBits : 24
        self.shift = shift
        let rings = polygon.rings
        func build<E: FixedWidthInteger>(_: E.Type) -> [E] {
            var fill = counts
            var edges = [E](repeating: 0, count: Int(counts[n]))
            for (r, ring) in rings.enumerated() where ring.count > 1 {
                for i in 0..<(ring.count - 1) {
                    for s in range(ring[i], ring[i + 1]) {
                        edges[Int(fill[s])] = E(r << Int(shift) | i)
                        fill[s] += 1
                    }
                }
            }
            // Within a strip, edges by decreasing eastern end: a test stops at the first edge
            // that lies wholly west of the point (the ray runs east).
            let mask = 1 << Int(shift) - 1
            func eastEnd(_ ref: E) -> Double {
                let ring = rings[Int(ref) >> Int(shift)], i = Int(ref) & mask
                return max(ring[i].lon, ring[i + 1].lon)
            }
            for s in 0..<n where counts[s + 1] - counts[s] > 1 {
                edges[Int(counts[s])..<Int(counts[s + 1])].sort { eastEnd($0) > eastEnd($1) }
            }
            return edges
        }
        stripStart = counts
        edges16 = narrow ? build(UInt16.self) : []
        edges32 = narrow ? [] : build(UInt32.self)
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
        let range = Int(stripStart[s])..<Int(stripStart[s + 1])
        return edges32.isEmpty ? covers(edges16, range, x: x, y: y) : covers(edges32, range, x: x, y: y)
    }

    @inline(__always)
    private func covers<E: FixedWidthInteger>(_ edges: [E], _ range: Range<Int>, x: Double, y: Double) -> Bool {
        var crossings = 0
        let shift = Int(self.shift), mask = 1 << shift - 1
        return rings.withUnsafeBufferPointer { rings in
            for k in range {
                let ref = Int(edges[k])
                let ring = rings[ref >> shift]
                let i = ref & mask
                let p1 = ring[i], p2 = ring[i + 1]
                // Edges are sorted by decreasing eastern end, so once one lies wholly west, all
                // the rest do.
                if p1.lon < x && p2.lon < x { break }
                if Self.countSegment(p1, p2, x: x, y: y, crossings: &crossings) { return true }
            }
            return crossings & 1 == 1
        }
    }

    /// The same test over every edge, without an index: for a polygon whose index is not
    /// built yet. Same rules, same answers (boundary included), in time linear in its size.
    package static func covers(_ polygon: Polygon, lon x: Double, lat y: Double) -> Bool {
        var crossings = 0
        for ring in polygon.rings where ring.count > 1 {
            for i in 0..<(ring.count - 1) {
                let p1 = ring[i], p2 = ring[i + 1]
                if p1.lon < x && p2.lon < x { continue }
                if countSegment(p1, p2, x: x, y: y, crossings: &crossings) { return true }
            }
        }
        return crossings & 1 == 1
    }

    /// GEOS's `RayCrossingCounter::countSegment` for a ray from (x, y) towards +x: true when
    /// the point lies on the edge p1–p2; otherwise counts the edge if the ray crosses it.
    @inline(__always)
    static func countSegment(_ p1: Position, _ p2: Position, x: Double, y: Double, crossings: inout Int) -> Bool {
        if x == p2.lon && y == p2.lat { return true }
        if p1.lat == y && p2.lat == y { return x >= min(p1.lon, p2.lon) && x <= max(p1.lon, p2.lon) }
        if (p1.lat > y && p2.lat <= y) || (p2.lat > y && p1.lat <= y) {
            var sign = Orientation.index(p1.lon, p1.lat, p2.lon, p2.lat, x, y)
            if sign == 0 { return true }
            if p2.lat < p1.lat { sign = -sign }
            if sign > 0 { crossings += 1 }
        }
        return false
    }

    /// Number of edge references (memory accounting).
    package var edgeReferences: Int { edges16.count + edges32.count }

    /// True when the edge references take 16 bits each.
    package var hasNarrowEdges: Bool { edgeReferences > 0 && edges32.isEmpty }
}
