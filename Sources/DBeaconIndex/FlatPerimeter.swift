package import DBeaconCore

/// A small polygonal perimeter (up to `MemoryCoverageEngine.largePolygonThreshold` vertices)
/// for point tests: its coordinates copied into one block and tested edge by edge with GEOS's
/// `RayCrossingCounter` rules (`RayCrossing.countSegment`), one polygon at a time, so the
/// answer, boundary included, is the one a GEOS prepared geometry gives.
///
/// Replaces a GEOS prepared geometry per polygon: GEOS keeps its own copy of the coordinates
/// plus an interval tree of the edges (kilobytes per polygon, ~1 GiB for the 250,000 small
/// polygons of the 1M benchmark city) and a test needs a GEOS point built per query; here a
/// test reads one contiguous block (16 bytes per vertex plus a few counts) reached by a plain
/// pointer kept in the slot's record.
///
/// Layout, all `Double` (counts are small integers, exact): polygon count; per polygon its
/// ring count; per ring its vertex count, then `lon, lat` per vertex (closed rings).
package final class FlatPerimeter: @unchecked Sendable {
    /// The block (immutable once built; freed with the object unless it is a snapshot's).
    package let base: UnsafeMutablePointer<Double>
    /// Number of `Double`s in the block (memory accounting).
    package let count: Int
    /// What holds a block this object does not own (a snapshot's mapping).
    private let owner: AnyObject?

    /// A block built earlier (in a snapshot's mapping, kept alive by `owner`).
    package init(block: UnsafePointer<Double>, count: Int, owner: AnyObject) {
        base = UnsafeMutablePointer(mutating: block)
        self.count = count
        self.owner = owner
    }

    package init(_ polygons: [Polygon]) {
        var n = 1
        for polygon in polygons {
            n += 1
            for ring in polygon.rings { n += 1 + 2 * ring.count }
        }
        count = n
        owner = nil
        base = .allocate(capacity: n)
        var p = base
        func put(_ v: Double) { p.initialize(to: v); p += 1 }
        put(Double(polygons.count))
        for polygon in polygons {
            put(Double(polygon.rings.count))
            for ring in polygon.rings {
                put(Double(ring.count))
                for v in ring { put(v.lon); put(v.lat) }
            }
        }
    }

    deinit { if owner == nil { base.deallocate() } }

    /// The polygons again.
    package var polygons: [Polygon] {
        var p = UnsafePointer(base)
        let count = Int(p[0])
        p += 1
        var out: [Polygon] = []
        out.reserveCapacity(count)
        for _ in 0..<count {
            let rings = Int(p[0])
            p += 1
            var polygon = Polygon(rings: [])
            for _ in 0..<rings {
                let n = Int(p[0])
                p += 1
                polygon.rings.append((0..<n).map { Position(lon: p[2 * $0], lat: p[2 * $0 + 1]) })
                p += 2 * n
            }
            out.append(polygon)
        }
        return out
    }

    /// True when one of the polygons covers the point (interior or boundary, holes excluded).
    @inline(__always)
    package func covers(lon x: Double, lat y: Double) -> Bool { Self.covers(UnsafePointer(base), lon: x, lat: y) }

    /// The test on a block (`base` of a live `FlatPerimeter`).
    package static func covers(_ block: UnsafePointer<Double>, lon x: Double, lat y: Double) -> Bool {
        var p = block
        let polygons = Int(p[0])
        p += 1
        for _ in 0..<polygons {
            let rings = Int(p[0])
            p += 1
            var crossings = 0
            for _ in 0..<rings {
                let n = Int(p[0])
                p += 1
                if n > 1, RayCrossing.countEdges(p, first: 0, count: n - 1, x: x, y: y, crossings: &crossings) { return true }
                p += 2 * n
            }
            if crossings & 1 == 1 { return true }
        }
        return false
    }
}
