package import DBeaconCore

/// GEOS's point-in-polygon rule (`RayCrossingCounter`, the algorithm behind `ST_Covers` and
/// prepared-geometry point location), with GEOS's orientation predicate (a floating-point filter
/// and a double-double fallback): the exact tests of `FlatPerimeter` and `CompactPolygon` use it
/// edge by edge, so their answers, boundaries included, are the ones GEOS gives.
package enum RayCrossing {
    /// `RayCrossingCounter::countSegment` for a ray from (x, y) towards +x: true when the point
    /// lies on the edge p1–p2; otherwise counts the edge if the ray crosses it.
    @inline(__always)
    package static func countSegment(_ p1: Position, _ p2: Position, x: Double, y: Double, crossings: inout Int) -> Bool {
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

    /// `countSegment` over the edges `first..<(first + count)` of interleaved coordinates (edge `i`
    /// joins vertex `i` to vertex `i + 1`; lon, lat per vertex), skipping edges left of the point;
    /// true when the point lies on one.
    @inline(__always)
    package static func countEdges(_ coords: UnsafePointer<Double>, first: Int, count: Int, x: Double, y: Double,
                                   crossings: inout Int) -> Bool {
        for i in first..<(first + count) {
            let p1 = Position(lon: coords[2 * i], lat: coords[2 * i + 1])
            let p2 = Position(lon: coords[2 * i + 2], lat: coords[2 * i + 3])
            if p1.lon < x && p2.lon < x { continue }
            if countSegment(p1, p2, x: x, y: y, crossings: &crossings) { return true }
        }
        return false
    }

    /// The rule over every edge of a polygon (no index): interior or boundary, holes excluded.
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
}
