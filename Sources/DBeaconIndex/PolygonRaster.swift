package import DBeaconCore

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
