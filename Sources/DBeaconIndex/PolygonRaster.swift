package import DBeaconCore

/// A 64×64 raster over a large polygonal perimeter's box that settles most point tests with
/// one memory access: a cell that no edge's box touches lies wholly inside or wholly outside
/// the perimeter; only points in cells an edge touches need the edge test. Cells no edge
/// touches that are connected (side by side) share one answer, so the raster is built with
/// one exact test per connected region (the outside, the interior, each hole), not per cell.
/// 1 KiB of cells; the engine keeps every raster's words in one dense array.
package struct PolygonRaster: Sendable {
    package static let side = 64
    /// Two bits per cell, row by row from the south-west: 0 outside, 1 inside, 2 an edge passes
    /// (test exactly). The box is not kept here: a query passes it again (the grid entry has it
    /// at hand), so a test reads one cache line of the raster.
    package private(set) var words: [UInt64]
    /// An 8×8 summary (two bits per block of 8×8 cells: `inside` or `outside` when every cell
    /// of the block is, else `unknown`), small enough to sit in the grid entry: most points are
    /// settled there without reading `words` (cells 0–31 of the summary in `coarse.0`).
    package private(set) var coarse: (UInt64, UInt64) = (0, 0)
    /// Number of words of a raster (the engine keeps all rasters' words in one array).
    package static let wordCount = side * side / 32

    package static let outside: UInt8 = 0, inside: UInt8 = 1, unknown: UInt8 = 2

    /// `covers` is the exact test of the whole perimeter (all polygons); `box` any box that holds
    /// them (the grid's rounded-out box of the perimeter, `HierarchicalGrid.roundedOut`).
    package init(polygons: [Polygon], box: BoundingBox, covers: (Double, Double) -> Bool) {
        self.init(box: box, edgeBoxes: Self.edgeBoxes(of: polygons), covers: covers)
    }

    /// Marks the box of every edge of `polygons` (the `edgeBoxes` argument of the builders).
    package static func edgeBoxes(of polygons: [Polygon]) -> ((Double, Double, Double, Double) -> Void) -> Void {
        { mark in
            for polygon in polygons {
                for ring in polygon.rings where ring.count > 1 {
                    for i in 0..<(ring.count - 1) {
                        let a = ring[i], b = ring[i + 1]
                        mark(min(a.lon, b.lon), min(a.lat, b.lat), max(a.lon, b.lon), max(a.lat, b.lat))
                    }
                }
            }
        }
    }

    /// The same over boxes that together hold every edge (`edgeBoxes` calls `mark` with each
    /// box's west, south, east and north): a cell none of them touches is wholly inside or
    /// wholly outside.
    package init(box: BoundingBox, edgeBoxes: ((Double, Double, Double, Double) -> Void) -> Void,
                 covers: (Double, Double) -> Bool) {
        let n = Self.side
        let cells = Self.classifyCells(shift: 0, box: box, edgeBoxes: edgeBoxes, covers: covers)
        words = [UInt64](repeating: 0, count: Self.wordCount)
        for i in 0..<(n * n) { words[i / 32] |= UInt64(cells[i]) << UInt64((i % 32) * 2) }
        coarse = Self.summary(words)
    }

    /// The 8×8 summary alone (the layout of `coarse`), built directly on blocks of 8×8 cells with
    /// the raster's own arithmetic, so `classifyCoarse` settles a point exactly as `classify`
    /// would: a small polygon keeps only this, in its grid entry, and its edges are tested only
    /// for points in blocks an edge touches.
    package static func summary(box: BoundingBox, edgeBoxes: ((Double, Double, Double, Double) -> Void) -> Void,
                                covers: (Double, Double) -> Bool) -> (UInt64, UInt64) {
        pack(classifyCells(shift: 3, box: box, edgeBoxes: edgeBoxes, covers: covers))
    }

    /// 64 block classes in the summary's layout (blocks 0–31 in the first word).
    private static func pack(_ blocks: [UInt8]) -> (UInt64, UInt64) {
        var out: (UInt64, UInt64) = (0, 0)
        for (b, v) in blocks.enumerated() {
            if b < 32 { out.0 |= UInt64(v) << UInt64(b * 2) } else { out.1 |= UInt64(v) << UInt64((b - 32) * 2) }
        }
        return out
    }

    /// A summary that settles nothing (every block `unknown`).
    package static let unsettled: (UInt64, UInt64) = (0xAAAA_AAAA_AAAA_AAAA, 0xAAAA_AAAA_AAAA_AAAA)

    /// The classes of the raster's cells grouped `2^shift` × `2^shift` (shift 0: every cell;
    /// 3: the 8×8 blocks), row by row from the south-west. A group is `unknown` when an edge's
    /// box touches any of its cells; the others are `inside` or `outside` as a whole.
    private static func classifyCells(shift: Int, box: BoundingBox, edgeBoxes: ((Double, Double, Double, Double) -> Void) -> Void,
                                      covers: (Double, Double) -> Bool) -> [UInt8] {
        let n = Self.side, m = n >> shift
        let (invWidth, invHeight) = Self.scale(box)
        let free: UInt8 = 255, queued: UInt8 = 254
        var cells = [UInt8](repeating: free, count: m * m)
        let (w, s, iw, ih) = (box.west, box.south, invWidth, invHeight)
        // The raster's column and row (as `locate` computes them), then the group's.
        func column(_ x: Double) -> Int { min(n - 1, max(0, Int(((x - w) * iw).rounded(.down)))) }
        func row(_ y: Double) -> Int { min(n - 1, max(0, Int(((y - s) * ih).rounded(.down)))) }
        let eps = 1e-9
        edgeBoxes { west, south, east, north in
            for r in (row(south - eps) >> shift)...(row(north + eps) >> shift) {
                for c in (column(west - eps) >> shift)...(column(east + eps) >> shift) {
                    cells[r * m + c] = Self.unknown
                }
            }
        }
        // Each connected region of untouched groups: no edge crosses it, so one exact test at a
        // cell centre (one that maps back into its own cell despite rounding) answers for all.
        let half = (1 << shift) / 2
        var region: [Int] = []
        for start in 0..<(m * m) where cells[start] == free {
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
                let i = region[k], r = i / m, c = i % m
                k += 1
                if r > 0 { visit(i - m) }
                if r < m - 1 { visit(i + m) }
                if c > 0 { visit(i - 1) }
                if c < m - 1 { visit(i + 1) }
            }
            var value = Self.unknown
            for i in region {
                let cr = (i / m) << shift + half, cc = (i % m) << shift + half
                let x = w + (Double(cc) + 0.5) / iw, y = s + (Double(cr) + 0.5) / ih
                if column(x) == cc && row(y) == cr {
                    value = covers(x, y) ? Self.inside : Self.outside
                    break
                }
            }
            for i in region { cells[i] = value }
        }
        return cells
    }

    /// The 8×8 summary of a raster's words.
    static func summary(_ words: [UInt64]) -> (UInt64, UInt64) {
        let n = side, block = side / 8
        var blocks = [UInt8](repeating: 255, count: 64) // 255: no cell seen yet
        for i in 0..<(n * n) {
            let v = UInt8((words[i / 32] >> UInt64((i % 32) * 2)) & 3)
            let b = (i / n / block) * 8 + (i % n) / block
            blocks[b] = blocks[b] == 255 || blocks[b] == v ? v : unknown
        }
        return pack(blocks)
    }

    /// Cells per degree of longitude and of latitude over `box` (the same arithmetic when building and when classifying).
    @inline(__always)
    static func scale(_ box: BoundingBox) -> (Double, Double) {
        (Double(side) / max(box.east - box.west, 1e-12), Double(side) / max(box.north - box.south, 1e-12))
    }

    /// `inside`, `outside`, or `unknown` (test exactly); `outside` for a point outside the box.
    /// `box` must be the one the raster was built over.
    package func classify(box: BoundingBox, lon: Double, lat: Double) -> UInt8 {
        words.withUnsafeBufferPointer { Self.classify(coarse: coarse, $0.baseAddress!, box: box, lon: lon, lat: lat) }
    }

    /// The word of `words` that `classify` will read for the point, or nil when the summary
    /// settles it (for a prefetch).
    @inline(__always)
    package static func unsettledWord(coarse: (UInt64, UInt64), _ words: UnsafePointer<UInt64>, box: BoundingBox,
                                      lon: Double, lat: Double) -> UnsafePointer<UInt64>? {
        guard let (summary, cell) = locate(coarse, box: box, lon: lon, lat: lat), summary == unknown else { return nil }
        return words + cell / 32
    }

    /// The summary's class of the point's block and the point's cell number (`row · side +
    /// column`), or nil for a point outside the box. Building and classifying use the same
    /// arithmetic, so a cell or block settled when built settles every point mapped to it.
    @inline(__always)
    private static func locate(_ coarse: (UInt64, UInt64), box: BoundingBox, lon: Double, lat: Double) -> (UInt8, Int)? {
        guard lon >= box.west, lon <= box.east, lat >= box.south, lat <= box.north else { return nil }
        let n = side
        let (invWidth, invHeight) = scale(box)
        let c = min(n - 1, max(0, Int(((lon - box.west) * invWidth).rounded(.down))))
        let r = min(n - 1, max(0, Int(((lat - box.south) * invHeight).rounded(.down))))
        let b = (r >> 3) * 8 + (c >> 3)
        return (UInt8(((b < 32 ? coarse.0 : coarse.1) >> UInt64((b & 31) * 2)) & 3), r * n + c)
    }

    /// `inside`, `outside` or `unknown` from a summary alone (`summary(box:edgeBoxes:covers:)`);
    /// `outside` for a point outside the box.
    @inline(__always)
    package static func classifyCoarse(_ coarse: (UInt64, UInt64), box: BoundingBox, lon: Double, lat: Double) -> UInt8 {
        locate(coarse, box: box, lon: lon, lat: lat)?.0 ?? outside
    }

    /// The same on a raster's summary and words kept elsewhere (read in place: a 1 KiB value
    /// read through an array or inline storage is copied out first). `words` is read only when
    /// the summary does not settle the point.
    @inline(__always)
    package static func classify(coarse: (UInt64, UInt64), _ words: @autoclosure () -> UnsafePointer<UInt64>,
                                 box: BoundingBox, lon: Double, lat: Double) -> UInt8 {
        guard let (summary, i) = locate(coarse, box: box, lon: lon, lat: lat) else { return outside }
        if summary != unknown { return summary }
        return UInt8((words()[i / 32] >> UInt64((i % 32) * 2)) & 3)
    }
}
