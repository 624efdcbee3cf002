package import DBeaconCore

/// A 64×64 raster over a large polygonal perimeter's box that settles most point tests with
/// one memory access: a cell that no edge's box touches lies wholly inside or wholly outside
/// the perimeter; only points in cells an edge touches need the edge test. Cells no edge
/// touches that are connected (side by side) share one answer, so the raster is built with
/// one exact test per connected region (the outside, the interior, each hole), not per cell.
/// Plain data (1 KiB of cells inline), so it sits in a dense array next to the index.
package struct PolygonRaster: Sendable {
    package static let side = 64
    private let west: Double, south: Double, east: Double, north: Double, invWidth: Double, invHeight: Double
    /// Two bits per cell, row by row: 0 outside, 1 inside, 2 an edge passes (test exactly).
    private var words: InlineArray<128, UInt64>

    package static let outside: UInt8 = 0, inside: UInt8 = 1, unknown: UInt8 = 2

    /// `covers` is the exact test of the whole perimeter (all polygons).
    package init(polygons: [Polygon], box: BoundingBox, covers: (Double, Double) -> Bool) {
        let n = Self.side
        let width = max(box.east - box.west, 1e-12), height = max(box.north - box.south, 1e-12)
        west = box.west
        south = box.south
        east = box.east
        north = box.north
        invWidth = Double(n) / width
        invHeight = Double(n) / height
        let free: UInt8 = 255, queued: UInt8 = 254
        var cells = [UInt8](repeating: free, count: n * n)
        let (w, s, iw, ih) = (west, south, invWidth, invHeight)
        func column(_ x: Double) -> Int { min(n - 1, max(0, Int(((x - w) * iw).rounded(.down)))) }
        func row(_ y: Double) -> Int { min(n - 1, max(0, Int(((y - s) * ih).rounded(.down)))) }
        let eps = 1e-9
        for polygon in polygons {
            for ring in polygon.rings where ring.count > 1 {
                for i in 0..<(ring.count - 1) {
                    let a = ring[i], b = ring[i + 1]
                    for r in row(min(a.lat, b.lat) - eps)...row(max(a.lat, b.lat) + eps) {
                        for c in column(min(a.lon, b.lon) - eps)...column(max(a.lon, b.lon) + eps) {
                            cells[r * n + c] = Self.unknown
                        }
                    }
                }
            }
        }
        // Each connected region of untouched cells: no edge crosses it, so one exact test at a
        // cell centre (one that maps back into its own cell despite rounding) answers for all.
        var region: [Int] = []
        for start in 0..<(n * n) where cells[start] == free {
            region.removeAll(keepingCapacity: true)
            region.append(start)
            cells[start] = queued
            func visit(_ j: Int) {
                if cells[j] == free {
                    cells[j] = queued
                    region.append(j)
                }
            }
            var k = 0
            while k < region.count {
                let i = region[k], r = i / n, c = i % n
                k += 1
                if r > 0 { visit(i - n) }
                if r < n - 1 { visit(i + n) }
                if c > 0 { visit(i - 1) }
                if c < n - 1 { visit(i + 1) }
            }
            var value = Self.unknown
            for i in region {
                let r = i / n, c = i % n
                let x = w + (Double(c) + 0.5) / iw, y = s + (Double(r) + 0.5) / ih
                if column(x) == c && row(y) == r {
                    value = covers(x, y) ? Self.inside : Self.outside
                    break
                }
            }
            for i in region { cells[i] = value }
        }
        words = InlineArray(repeating: 0)
        for (i, v) in cells.enumerated() { words[i / 32] |= UInt64(v) << UInt64((i % 32) * 2) }
    }

    /// `inside`, `outside`, or `unknown` (test exactly); `outside` for a point outside the box.
    @inline(__always)
    package func classify(lon: Double, lat: Double) -> UInt8 {
        guard lon >= west, lon <= east, lat >= south, lat <= north else { return Self.outside }
        let n = Self.side
        let c = min(n - 1, max(0, Int(((lon - west) * invWidth).rounded(.down))))
        let r = min(n - 1, max(0, Int(((lat - south) * invHeight).rounded(.down))))
        let i = r * n + c
        return UInt8((words[i / 32] >> UInt64((i % 32) * 2)) & 3)
    }
}
