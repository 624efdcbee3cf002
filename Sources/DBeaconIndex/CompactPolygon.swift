package import DBeaconCore
import DBeaconGeo

/// Point-in-polygon for large polygons in about five bytes per vertex of memory.
///
/// The vertices are kept as 16-bit offsets from the south-west corner of the polygon's box
/// (65,535 steps across it: about 4 cm for a 2.5 km region), and the edges are bucketed into
/// horizontal strips as runs of consecutive edges (a ring crosses a strip a few times, so a
/// strip holds a few runs, not a list of every edge). A test counts the crossings of a ray
/// from the point eastwards with the edges of the point's strip on those compact coordinates.
///
/// The compact polygon differs from the true one by at most half a step per coordinate, so the
/// answer on it is the true answer for every point further than one step from each of its
/// edges; for a point nearer to an edge than that (about one test in ten thousand in a city),
/// the test is made again on the exact coordinates (`exact`, usually in a `CoordinateFile`)
/// with GEOS's `RayCrossingCounter` rules (`RayCrossing.countSegment`), so every answer,
/// boundary included, is the one GEOS gives. Strips take in every edge that comes within one
/// step of them, so both tests find all the edges they need in the point's strip.
///
/// Everything but the exact coordinates sits in one position-independent block (`block`), so
/// a snapshot writes it as it is and maps it back.
package final class CompactPolygon: @unchecked Sendable {
    /// Steps across the box in each direction.
    static let steps = 65_535.0
    /// Within this many steps of an edge the compact answer may differ from the exact one (the
    /// vertices moved at most √0.5 ≈ 0.71 steps; the rest is margin for the arithmetic).
    static let margin = 1.0

    /// The block read in place (what a test needs).
    let view: Block
    package var west: Double { view.west }
    package var south: Double { view.south }
    package var east: Double { view.east }
    package var north: Double { view.north }
    package var vertexCount: Int { view.vertexCount }
    /// `lon, lat` of every vertex, rings one after the other (the same numbering as `q`).
    package let exact: UnsafePointer<Double>
    /// The block (header, ring starts, strip starts, runs, compact vertices).
    package let block: UnsafeRawPointer
    package let blockBytes: Int
    /// Keeps `block` and `exact` alive: the heap copies this object owns, a `CoordinateFile`, a
    /// snapshot's mapping.
    private let owners: [AnyObject]
    private let ownsBlock: Bool

    /// The header's layout: 7 doubles, then 5 words: vertices, rings, strips, runs and flags (1:
    /// wide runs, 2: a provisional strip).
    static let headerBytes = 7 * 8 + 5 * 4
    /// A run is one word, `first edge << 12 | edge count`, when every edge number fits in 20
    /// bits (polygons up to a million vertices); else two words (first, count): `wideRuns`.
    static let runCountBits: UInt32 = 12
    static let narrowRunLimit: UInt32 = 1 << 12 - 1

    /// Builds the compact form of `polygon`; its exact coordinates go to `file` (or, when it is
    /// nil or the write fails, to a heap copy this object owns), and with `text` its rings'
    /// GeoJSON (as the file keeps it, `CoordinateFile.hintedText`) right after them (else
    /// `finished` adds it later). `provisional`: one strip holding every edge (the same answers,
    /// each test over all the edges), built in a fraction of the time; `finished` builds the
    /// strips later (a load's large polygons, finished by the warm-up once the server answers).
    package convenience init(_ polygon: Polygon, file: CoordinateFile?, text: Bool = true, provisional: Bool = false,
                             wideRuns: Bool? = nil) {
        let rings = polygon.rings
        let n = polygon.vertexCount
        if !text, let file, Position.isPairOfDoubles, rings.count <= Self.directRingLimit {
            // Without the text (a load's): the rings go to the file and into the block straight
            // from their arrays, without a contiguous copy of every coordinate first.
            let direct: (UnsafePointer<Double>, (pointer: UnsafeMutableRawPointer, bytes: Int))? = Self.withRingPointers(rings) { pointers in
                let parts = zip(pointers, rings).map { UnsafeRawBufferPointer(start: $0, count: $1.count * 16) }
                guard let written = file.append(parts) else { return nil }
                return (written.pointer, Self.build(rings: rings.map(\.count), ringCoordinates: pointers, wideRuns: wideRuns,
                                                    provisional: provisional))
            }
            if let (exact, block) = direct {
                self.init(block: UnsafeRawPointer(block.pointer), bytes: block.bytes, ownsBlock: true, exact: exact,
                          text: nil, owners: [file])
                return
            }
        }
        let exact = HeapDoubles(count: 2 * n)
        var k = 0
        for ring in rings {
            for v in ring {
                exact.base[k] = v.lon
                exact.base[k + 1] = v.lat
                k += 2
            }
        }
        var exactPointer = UnsafePointer(exact.base)
        var owner: AnyObject = exact
        var placed: Text?
        if let file {
            let form = text ? Self.text(lonLat: exact.base, rings: rings.map(\.count), hinted: file.hintedText) : nil
            if let written = file.append(UnsafeBufferPointer(start: exact.base, count: 2 * n), text: form?.bytes ?? []) {
                exactPointer = written.pointer
                owner = file
                if let form { placed = Text(offset: written.offset + 16 * n, length: form.length, hinted: form.hinted) }
            }
        }
        let block = Self.build(rings: rings.map(\.count), exact: UnsafePointer(exact.base), wideRuns: wideRuns,
                               provisional: provisional)
        self.init(block: UnsafeRawPointer(block.pointer), bytes: block.bytes, ownsBlock: true, exact: exactPointer,
                  text: placed, owners: [owner])
    }

    /// Where a polygon's rings' GeoJSON is in its coordinate file: at `offset`, either the text
    /// itself (`length` bytes) or, `hinted`, one `FixedDecimal` hint per coordinate (2 per
    /// vertex) from which the `length` bytes of text are written.
    package struct Text: Sendable, Equatable {
        package var offset: Int
        package var length: Int
        package var hinted: Bool
        package init(offset: Int, length: Int, hinted: Bool) {
            self.offset = offset
            self.length = length
            self.hinted = hinted
        }
    }

    /// A compact polygon over a block built earlier (a snapshot's), with its exact coordinates
    /// and, when `text` is set, its rings' GeoJSON there in their `CoordinateFile`.
    package init(block: UnsafeRawPointer, bytes: Int, ownsBlock: Bool, exact: UnsafePointer<Double>,
                 text: Text? = nil, owners: [AnyObject]) {
        self.block = block
        blockBytes = bytes
        self.ownsBlock = ownsBlock
        self.exact = exact
        self.owners = owners
        view = Block(block)
        let inFile = owners.contains { $0 is CoordinateFile }
        textOffset = inFile ? text?.offset ?? -1 : -1
        textLength = textOffset >= 0 ? text?.length ?? 0 : 0
        textHinted = textLength > 0 && text?.hinted == true
    }

    /// The bytes that keep the rings' GeoJSON in a coordinate file (the text, or its hints when
    /// `hinted` and every number's hint reproduces the text) and the text's length.
    static func text(lonLat: UnsafePointer<Double>, rings: [Int], hinted: Bool) -> (bytes: [UInt8], length: Int, hinted: Bool) {
        let json = ringsJSON(lonLat: lonLat, rings: rings)
        let count = 2 * rings.reduce(0, +)
        guard hinted, let hints = FixedDecimal.hints(ofRingsJSON: json, lonLat: lonLat, count: count) else {
            return (json, json.count, false)
        }
        return (hints, json.count, true)
    }

    /// The same polygon finished: its strips built when it has a provisional one, and its rings'
    /// GeoJSON appended to its coordinate file when it was made without it (`text: false`); nil
    /// when there is nothing to add or nothing could be (the text not written, a full disk).
    package func finished() -> CompactPolygon? {
        let strips = view.provisional, text = needsText
        guard strips || text else { return nil }
        let copy = exactCopy
        var placed = self.text
        if text, let file {
            let form = withExtendedLifetime(copy) { Self.text(lonLat: copy.base, rings: ringCounts, hinted: file.hintedText) }
            if let written = file.append(UnsafeBufferPointer(start: nil, count: 0), text: form.bytes) {
                placed = Text(offset: written.offset, length: form.length, hinted: form.hinted)
            }
        }
        if strips {
            let built = withExtendedLifetime(copy) { Self.build(rings: ringCounts, exact: copy.base, wideRuns: view.wideRuns) }
            return CompactPolygon(block: built.pointer, bytes: built.bytes, ownsBlock: true, exact: exact, text: placed,
                                  owners: owners)
        }
        guard placed != nil else { return nil }
        return CompactPolygon(block: block, bytes: blockBytes, ownsBlock: false, exact: exact, text: placed, owners: owners + [self])
    }

    /// Where the rings' GeoJSON (`[[[lon,lat],…],…]`, what `GeoJSONCodec.writePerimeter` writes
    /// for them), or its hints, is in the coordinate file, or -1: none (coordinates on the heap,
    /// or loaded without it), the answer formats them.
    package let textOffset: Int
    /// The text's bytes (0: none).
    package let textLength: Int
    /// Whether the file holds the text's hints (2 bytes per vertex) rather than the text.
    package let textHinted: Bool
    /// Where the text is, as a snapshot records it (nil: none).
    package var text: Text? { textLength > 0 ? Text(offset: textOffset, length: textLength, hinted: textHinted) : nil }

    /// Whether the rings' GeoJSON is still to be written (`finished`).
    var needsText: Bool { textLength == 0 && (file?.writable ?? false) }
    /// Whether `finished` has work to do: strips to build or text to write.
    var needsFinishing: Bool { view.provisional || needsText }
    /// Whether the polygon has one provisional strip (`init(provisional:)`).
    package var isProvisional: Bool { view.provisional }
    /// The horizontal strips its edges are bucketed in.
    package var stripCount: Int { view.stripCount }

    /// The GeoJSON of rings of `rings` vertices over `lon, lat` pairs.
    static func ringsJSON(lonLat: UnsafePointer<Double>, rings: [Int]) -> [UInt8] {
        var w = JSONWriter(capacity: 40 * rings.reduce(0, +) + 16)
        var starts = [0]
        for count in rings { starts.append(starts.last! + count) }
        GeoJSONCodec.writeRings(lonLat: lonLat, ringStarts: starts, into: &w)
        return w.bytes
    }

    /// Writes the rings' GeoJSON into `out` (`textLength` bytes): read from the coordinate file,
    /// or formatted from the coordinates and their hints read from it; false when there is none
    /// or it cannot be read.
    package func readRingsJSON(into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard textLength > 0, out.count == textLength, let file else { return false }
        guard textHinted else { return file.read(at: textOffset, into: out) }
        let n = 2 * vertexCount
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 8 * n + n, alignment: 8)
        defer { scratch.deallocate() }
        let lonLat = scratch.assumingMemoryBound(to: Double.self)
        guard file.copy(exact, count: n, into: lonLat),
              file.read(at: textOffset, into: UnsafeMutableRawBufferPointer(start: scratch + 8 * n, count: n)) else { return false }
        return FixedDecimal.writeRings(lonLat: lonLat, hints: (scratch + 8 * n).assumingMemoryBound(to: UInt8.self),
                                       ringStarts: ringStarts, to: out)
    }

    /// The bytes keeping the text in the coordinate file (the text, or its hints), read from it;
    /// nil when there are none or they cannot be read.
    var storedText: [UInt8]? {
        guard textLength > 0, let file else { return nil }
        let count = textHinted ? 2 * vertexCount : textLength
        var ok = false
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, done in
            ok = file.read(at: textOffset, into: UnsafeMutableRawBufferPointer(buffer))
            done = ok ? count : 0
        }
        return ok ? bytes : nil
    }

    /// The first vertex of each ring, then the vertex count.
    var ringStarts: [Int] { (0...view.ringCount).map { Int(view.ringStart[$0]) } }
    /// The vertices of each ring.
    var ringCounts: [Int] { (0..<view.ringCount).map { Int(view.ringStart[$0 + 1] - view.ringStart[$0]) } }

    /// A heap copy of the exact coordinates (read with `pread` from their file: formatting every
    /// region must not map them all).
    var exactCopy: HeapDoubles {
        let copy = HeapDoubles(count: 2 * vertexCount)
        if !(file?.copy(exact, count: 2 * vertexCount, into: copy.base) ?? false) {
            copy.base.update(from: exact, count: 2 * vertexCount)
        }
        return copy
    }

    /// The rings' GeoJSON: read or written from the file (`readRingsJSON`), else formatted from
    /// the exact coordinates.
    package var ringsJSON: [UInt8] {
        var read = false
        let text = [UInt8](unsafeUninitializedCapacity: textLength) { buffer, count in
            read = readRingsJSON(into: UnsafeMutableRawBufferPointer(buffer))
            count = read ? textLength : 0
        }
        if read { return text }
        let copy = exactCopy
        return withExtendedLifetime(copy) { Self.ringsJSON(lonLat: copy.base, rings: ringCounts) }
    }

    /// Bytes this polygon takes in its coordinate file (coordinates and text or hints).
    package var fileBytes: Int { 16 * vertexCount + CoordinateFile.padded(textHinted ? 2 * vertexCount : textLength) }

    deinit {
        if ownsBlock { UnsafeMutableRawPointer(mutating: block).deallocate() }
    }

    /// The bytes of a block for `rings` (vertex counts) with `strips` strips and `runs` runs.
    static func blockBytes(rings: Int, vertices: Int, strips: Int, runWords: Int) -> Int {
        let bytes = headerBytes + 4 * (rings + 1 + strips + 1 + runWords) + 2 * 2 * vertices
        return (bytes + 7) & ~7
    }

    /// The most rings `withRingPointers` takes (it nests one call per ring: a polygon of
    /// thousands of holes is copied instead, not nested that deep on a worker's stack).
    package static let directRingLimit = 32

    /// Calls `body` with a pointer to each ring's doubles (`lon, lat` per vertex), valid during
    /// the call (`rings.count` nested calls).
    static func withRingPointers<R>(_ rings: [Ring], _ body: ([UnsafePointer<Double>]) -> R) -> R {
        var pointers: [UnsafePointer<Double>] = []
        pointers.reserveCapacity(rings.count)
        func nest(_ r: Int) -> R {
            guard r < rings.count else { return body(pointers) }
            return rings[r].withUnsafeBytes { bytes in
                // (An empty ring has no storage; no vertex of it is ever read.)
                pointers.append((bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 8)!).assumingMemoryBound(to: Double.self))
                return nest(r + 1)
            }
        }
        return nest(0)
    }

    /// Builds a block over the exact coordinates (`lon, lat` per vertex, rings of `rings` vertices).
    /// `wideRuns` nil: two-word runs only when edge numbers need them.
    /// `provisional`: one strip (every edge in it), marked so in the header.
    static func build(rings: [Int], exact: UnsafePointer<Double>, wideRuns: Bool? = nil,
                      provisional: Bool = false) -> (pointer: UnsafeMutableRawPointer, bytes: Int) {
        var pointers: [UnsafePointer<Double>] = []
        var start = 0
        for count in rings {
            pointers.append(exact + 2 * start)
            start += count
        }
        return build(rings: rings, ringCoordinates: pointers, wideRuns: wideRuns, provisional: provisional)
    }

    /// The same over each ring's own coordinates (`ringCoordinates[r]`: ring r's doubles).
    static func build(rings: [Int], ringCoordinates: [UnsafePointer<Double>], wideRuns: Bool? = nil,
                      provisional: Bool = false) -> (pointer: UnsafeMutableRawPointer, bytes: Int) {
        let n = rings.reduce(0, +)
        // The exterior ring's box (holes lie inside it).
        var west = Double.infinity, south = Double.infinity, east = -Double.infinity, north = -Double.infinity
        if let first = ringCoordinates.first {
            for i in 0..<rings[0] {
                let x = first[2 * i], y = first[2 * i + 1]
                west = min(west, x); east = max(east, x); south = min(south, y); north = max(north, y)
            }
        }
        let sx = steps / max(east - west, 1e-300), sy = steps / max(north - south, 1e-300)
        let qv = UnsafeMutablePointer<UInt16>.allocate(capacity: max(1, 2 * n))
        defer { qv.deallocate() }
        // Edges are numbered by their first vertex; `edgeEnd[r]` is one past ring r's last edge.
        var starts = [Int](repeating: 0, count: rings.count + 1)
        for (r, count) in rings.enumerated() { starts[r + 1] = starts[r] + count }
        // Rounded to the nearest step as `Int(v + 0.5)` of the clamped value (v ≥ 0): baseline
        // x86-64 has no rounding instruction, and `rounded()` is a call into libm per coordinate.
        for (r, count) in rings.enumerated() {
            let exact = ringCoordinates[r], q = qv + 2 * starts[r]
            for i in 0..<count {
                q[2 * i] = UInt16(min(steps, max(0, (exact[2 * i] - west) * sx)) + 0.5)
                q[2 * i + 1] = UInt16(min(steps, max(0, (exact[2 * i + 1] - south) * sy)) + 0.5)
            }
        }
        let edgeCount = rings.reduce(0) { $0 + max(0, $1 - 1) }
        // About 24 edges per strip, but no more strips than keep each edge in about two (tall
        // zig-zag edges: a strip costs a run for every edge passing through it).
        var totalHeight = 0.0
        for (r, count) in rings.enumerated() where count > 1 && !provisional {
            for i in starts[r]..<(starts[r] + count - 1) {
                totalHeight += abs(Double(qv[2 * i + 3]) - Double(qv[2 * i + 1])) + 2 * margin
            }
        }
        var strips = provisional ? 1 : max(1, edgeCount / 24)
        if totalHeight > 0 { strips = min(strips, max(1, Int(Double(edgeCount) * (steps + 1) / totalHeight))) }
        strips = min(strips, 1 << 16)
        let height = (steps + 1) / Double(strips)
        let inverse = 1 / height
        // The strips an edge's latitude range (grown by the margin) touches: lo...hi (unused with
        // one provisional strip).
        let edgeSlots = provisional ? 1 : max(1, n)
        let lo = UnsafeMutablePointer<Int32>.allocate(capacity: edgeSlots), hi = UnsafeMutablePointer<Int32>.allocate(capacity: edgeSlots)
        defer { lo.deallocate(); hi.deallocate() }
        let top = strips - 1
        for (r, count) in rings.enumerated() where count > 1 && !provisional {
            for i in starts[r]..<(starts[r] + count - 1) {
                let a = Double(qv[2 * i + 1]), b = Double(qv[2 * i + 3])
                // Truncation, not `rounded(.down)` (libm): the same strip once clamped to 0...top.
                let s0 = Int((min(a, b) - margin) * inverse), s1 = Int((max(a, b) + margin) * inverse)
                lo[i] = Int32(s0 < 0 ? 0 : (s0 > top ? top : s0))
                hi[i] = Int32(s1 < 0 ? 0 : (s1 > top ? top : s1))
            }
        }
        // Two passes over the edges in order (`forEachRunStep`): count each strip's runs, then fill them.
        let runStart = UnsafeMutablePointer<UInt32>.allocate(capacity: strips + 1)
        runStart.initialize(repeating: 0, count: strips + 1)
        let last = UnsafeMutablePointer<Int>.allocate(capacity: strips)
        let length = UnsafeMutablePointer<UInt32>.allocate(capacity: strips)
        defer { runStart.deallocate(); last.deallocate(); length.deallocate() }
        let wide = wideRuns ?? (n > 1 << (32 - Int(runCountBits)))
        let maxRun = wide ? UInt32.max : narrowRunLimit
        last.initialize(repeating: -2, count: strips)
        length.initialize(repeating: 0, count: strips)
        // Calls `body(strip, edge, starts a run)` for every edge in every strip it touches, in
        // edge order: an edge extends the strip's last run when it follows that run's last edge
        // in its ring and the run has room.
        func forEachRunStep(_ body: (Int, Int, Bool) -> Void) {
            last.update(repeating: -2, count: strips)
            length.update(repeating: 0, count: strips)
            for (r, count) in rings.enumerated() where count > 1 {
                let first = starts[r]
                for i in first..<(first + count - 1) {
                    for s in Int(lo[i])...Int(hi[i]) {
                        let starting = last[s] != i - 1 || i == first || length[s] == maxRun
                        if starting { length[s] = 0 }
                        body(s, i, starting)
                        length[s] += 1
                        last[s] = i
                    }
                }
            }
        }
        // One provisional strip: each ring's edges, in runs of at most `maxRun` (what the passes
        // would make, without them).
        func forEachProvisionalRun(_ body: (_ first: Int, _ count: Int) -> Void) {
            for (r, count) in rings.enumerated() where count > 1 {
                var first = starts[r]
                let end = first + count - 1
                while first < end {
                    let length = min(Int(maxRun), end - first)
                    body(first, length)
                    first += length
                }
            }
        }
        if provisional {
            forEachProvisionalRun { _, _ in runStart[1] += 1 }
        } else {
            forEachRunStep { s, _, starting in if starting { runStart[s + 1] += 1 } }
            for s in 0..<strips { runStart[s + 1] += runStart[s] }
        }
        let runCount = Int(runStart[strips])
        let bytes = blockBytes(rings: rings.count, vertices: n, strips: strips, runWords: (wide ? 2 : 1) * runCount)
        let block = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 8)
        block.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        let d = block.assumingMemoryBound(to: Double.self)
        d[0] = west; d[1] = south; d[2] = east; d[3] = north; d[4] = sx; d[5] = sy; d[6] = height
        let c = (block + 56).assumingMemoryBound(to: UInt32.self)
        c[0] = UInt32(n); c[1] = UInt32(rings.count); c[2] = UInt32(strips); c[3] = UInt32(runCount)
        c[4] = (wide ? 1 : 0) | (provisional ? 2 : 0)
        let ringStart = (block + headerBytes).assumingMemoryBound(to: UInt32.self)
        for (r, s) in starts.enumerated() { ringStart[r] = UInt32(s) }
        let stripStart = ringStart + (rings.count + 1)
        stripStart.update(from: runStart, count: strips + 1)
        let runs = stripStart + (strips + 1)
        if provisional {
            var k = 0
            forEachProvisionalRun { first, count in
                if wide {
                    runs[2 * k] = UInt32(first)
                    runs[2 * k + 1] = UInt32(count)
                } else {
                    runs[k] = UInt32(first) << runCountBits | UInt32(count)
                }
                k += 1
            }
        } else {
            // Fill: `runStart[s]` becomes the next free run of strip s.
            forEachRunStep { s, i, starting in
                if starting {
                    let k = Int(runStart[s])
                    if wide {
                        runs[2 * k] = UInt32(i)
                        runs[2 * k + 1] = 1
                    } else {
                        runs[k] = UInt32(i) << runCountBits | 1
                    }
                    runStart[s] += 1
                } else {
                    let k = Int(runStart[s]) - 1
                    if wide { runs[2 * k + 1] += 1 } else { runs[k] += 1 }
                }
            }
        }
        let qp = UnsafeMutableRawPointer(runs + (wide ? 2 : 1) * runCount).assumingMemoryBound(to: UInt16.self)
        qp.update(from: qv, count: 2 * n)
        return (block, bytes)
    }

    /// True when the polygon covers the point (interior or boundary, holes excluded).
    @inline(__always)
    package func covers(lon x: Double, lat y: Double) -> Bool {
        guard let (px, py, lo, hi) = view.strip(lon: x, lat: y) else { return false }
        if let answer = view.compactCovers(px, py, lo, hi) { return answer }
        return exactCovers(x, y, lo, hi)
    }

    /// A compact polygon's block read in place, without its object: the header's fields and
    /// where its parts start. A lookup tests a large polygon on it straight from the block's
    /// address (kept beside the polygon's raster), so the test's misses are the block's own.
    package struct Block {
        let west: Double, south: Double, east: Double, north: Double
        let sx: Double, sy: Double
        let stripHeight: Double
        let stripCount: Int
        let vertexCount: Int
        let ringCount: Int
        let runCount: Int
        /// Runs take two words each (see `runCountBits`).
        let wideRuns: Bool
        /// One strip holding every edge, until `CompactPolygon.finished` builds the strips.
        let provisional: Bool
        let ringStart: UnsafePointer<UInt32>
        let stripStart: UnsafePointer<UInt32>
        let runs: UnsafePointer<UInt32>
        let q: UnsafePointer<UInt16>

        @inline(__always)
        package init(_ block: UnsafeRawPointer) {
            let d = block.assumingMemoryBound(to: Double.self)
            west = d[0]
            south = d[1]
            east = d[2]
            north = d[3]
            sx = d[4]
            sy = d[5]
            stripHeight = d[6]
            let c = (block + 56).assumingMemoryBound(to: UInt32.self)
            vertexCount = Int(c[0])
            ringCount = Int(c[1])
            stripCount = Int(c[2])
            runCount = Int(c[3])
            wideRuns = c[4] & 1 != 0
            provisional = c[4] & 2 != 0
            ringStart = (block + CompactPolygon.headerBytes).assumingMemoryBound(to: UInt32.self)
            stripStart = ringStart + (ringCount + 1)
            runs = stripStart + (stripCount + 1)
            q = UnsafeRawPointer(runs + (wideRuns ? 2 : 1) * runCount).assumingMemoryBound(to: UInt16.self)
        }

        /// Run `r`: its first edge and number of edges.
        @inline(__always)
        func run(_ r: Int) -> (Int, Int) {
            if wideRuns { return (Int(runs[2 * r]), Int(runs[2 * r + 1])) }
            let v = runs[r]
            return (Int(v >> CompactPolygon.runCountBits), Int(v & CompactPolygon.narrowRunLimit))
        }

        /// The point in steps from the box's corner and its strip's runs, or nil outside the box.
        @inline(__always)
        func strip(lon x: Double, lat y: Double) -> (px: Double, py: Double, lo: Int, hi: Int)? {
            guard y >= south, y <= north, x >= west, x <= east else { return nil }
            let px = (x - west) * sx, py = (y - south) * sy
            // py ≥ 0 here: truncation is `rounded(.down)` without a call into libm.
            let s = min(stripCount - 1, Int(py / stripHeight))
            return (px, py, Int(stripStart[s]), Int(stripStart[s + 1]))
        }

        /// The compact test alone: false outside the box, nil when the exact coordinates
        /// decide (the point is within a step of an edge).
        @inline(__always)
        package func compactAnswer(lon x: Double, lat y: Double) -> Bool? {
            guard let (px, py, lo, hi) = strip(lon: x, lat: y) else { return false }
            return compactCovers(px, py, lo, hi)
        }

        /// The test on the compact coordinates: nil when the point is within `margin` steps of an
        /// edge (the exact test decides).
        @inline(__always)
        func compactCovers(_ px: Double, _ py: Double, _ lo: Int, _ hi: Int) -> Bool? {
            var inside = false
            let m = CompactPolygon.margin
            for r in lo..<hi {
                let (first, count) = run(r)
                var a = q + 2 * first
                var ax = Double(a[0]), ay = Double(a[1])
                for _ in 0..<count {
                    let bx = Double(a[2]), by = Double(a[3])
                    a += 2
                    defer { ax = bx; ay = by }
                    // Wholly west of the point: neither near it nor crossed by the eastward ray.
                    if ax < px - m && bx < px - m { continue }
                    if (ay < py - m && by < py - m) || (ay > py + m && by > py + m) { continue }
                    let dx = bx - ax, dy = by - ay
                    let cross = dx * (py - ay) - dy * (px - ax)
                    if !(ax > px + m && bx > px + m) && cross * cross <= (dx * dx + dy * dy) * (m * m) { return nil }
                    // The point is more than a step from the edge: the crossing is certain.
                    if (ay > py) != (by > py) && (by > ay) == (cross > 0) { inside.toggle() }
                }
            }
            return inside
        }
    }

    /// GEOS's rules on the exact coordinates of the strip's edges.
    func exactCovers(_ x: Double, _ y: Double, _ lo: Int, _ hi: Int) -> Bool {
        var crossings = 0
        for r in lo..<hi {
            let (first, count) = view.run(r)
            if RayCrossing.countEdges(exact, first: first, count: count, x: x, y: y, crossings: &crossings) { return true }
        }
        return crossings & 1 == 1
    }

    /// Calls `body` with a box (west, south, east, north) around each edge that holds the exact
    /// edge too: the compact edge's box grown by a step (a vertex moved at most half a step),
    /// so a raster can be built without reading the exact coordinates.
    package func forEachEdgeBox(_ body: (Double, Double, Double, Double) -> Void) {
        let v = view, gx = 1 / v.sx, gy = 1 / v.sy
        for r in 0..<v.ringCount {
            let a = Int(v.ringStart[r]), b = Int(v.ringStart[r + 1])
            guard b - a > 1 else { continue }
            for i in a..<(b - 1) {
                let x0 = Double(v.q[2 * i]), y0 = Double(v.q[2 * i + 1]), x1 = Double(v.q[2 * i + 2]), y1 = Double(v.q[2 * i + 3])
                body(v.west + (min(x0, x1) - Self.margin) * gx, v.south + (min(y0, y1) - Self.margin) * gy,
                     v.west + (max(x0, x1) + Self.margin) * gx, v.south + (max(y0, y1) + Self.margin) * gy)
            }
        }
    }

    /// Whether the point at `frame`'s origin lies nearer than a distance to an edge, in the
    /// tangent plane (metres), told from the compact vertices: true when an edge is surely
    /// nearer than `lower`, false when every edge is surely `upper` or farther, nil between (the
    /// exact vertices decide). Surely: a vertex moved at most half a step each way, so every
    /// point of an exact edge lies within `margin` steps of its compact edge. Only the strips
    /// within reach of the point's latitude are read, and the scan stops at the first edge
    /// surely nearer than `lower`. An exit cushion is judged on this without reading the exact
    /// vertices from their file (`MemoryCoverageEngine.isWithin`). Nil for a box the plane
    /// cannot place (a quarter globe wide).
    func isNearerThan(_ lower: Double, notBeyond upper: Double, from frame: LocalFrame) -> Bool? {
        let v = view
        guard v.east - v.west < 90, v.north - v.south < 90 else { return nil }
        let mx = frame.metresPerDegreeLon / v.sx, my = frame.metresPerDegreeLat / v.sy
        let error = Self.margin * (mx * mx + my * my).squareRoot()
        // Edges at `reach` or farther are surely beyond `upper`; one nearer than `stop` is surely within `lower`.
        let reach = upper + error, stop = lower - error
        var dLon = frame.origin.lon - v.west
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        let px = dLon * v.sx, py = (frame.origin.lat - v.south) * v.sy
        // The reach in steps, with the margin: the strips took in every edge within a step of them.
        let rx = reach / mx + Self.margin, ry = reach / my + Self.margin
        guard px + rx >= 0, px - rx <= Self.steps, py + ry >= 0, py - ry <= Self.steps else { return false }
        let top = Double(v.stripCount - 1)
        let s0 = Int(min(top, max(0, (py - ry) / v.stripHeight))), s1 = Int(min(top, max(0, (py + ry) / v.stripHeight)))
        var best = reach
        for r in Int(v.stripStart[s0])..<Int(v.stripStart[s1 + 1]) {
            let (first, count) = v.run(r)
            var a = v.q + 2 * first
            var ax = (Double(a[0]) - px) * mx, ay = (Double(a[1]) - py) * my
            for _ in 0..<count {
                let bx = (Double(a[2]) - px) * mx, by = (Double(a[3]) - py) * my
                a += 2
                defer { ax = bx; ay = by }
                // Wholly `best` or farther on one side: not nearer than the best so far.
                if (ax >= best && bx >= best) || (ax <= -best && bx <= -best)
                    || (ay >= best && by >= best) || (ay <= -best && by <= -best) { continue }
                let dx = bx - ax, dy = by - ay
                let lengthSquared = dx * dx + dy * dy
                let t = lengthSquared > 0 ? max(0, min(1, -(ax * dx + ay * dy) / lengthSquared)) : 0
                let x = ax + t * dx, y = ay + t * dy
                let d = (x * x + y * y).squareRoot()
                if d < stop { return true }
                best = min(best, d)
            }
        }
        return best < reach ? nil : false
    }

    /// The compact test alone (tests): nil when the exact coordinates would decide.
    package func compactAnswer(lon x: Double, lat y: Double) -> Bool? { view.compactAnswer(lon: x, lat: y) }

    /// The polygon again, from its exact coordinates (read from their file without mapping
    /// them: answers read every large polygon in time, and mapped pages would stay resident).
    package var polygon: Polygon {
        Polygon(rings: (0..<view.ringCount).map(ring))
    }

    /// The outline (ring 0) alone, read as `polygon` reads its rings.
    package var exterior: Ring { ring(0) }

    /// Ring `r` from its exact coordinates.
    private func ring(_ r: Int) -> Ring {
        let a = Int(view.ringStart[r]), b = Int(view.ringStart[r + 1])
        var ring = Ring(repeating: Position(lon: 0, lat: 0), count: b - a)
        let copied = ring.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: Double.self, capacity: 2 * (b - a)) { out in
                file?.copy(exact + 2 * a, count: 2 * (b - a), into: out) ?? false
            }
        }
        if !copied {
            for i in a..<b { ring[i - a] = Position(lon: exact[2 * i], lat: exact[2 * i + 1]) }
        }
        return ring
    }

    /// The file the exact coordinates are in, if any.
    private var file: CoordinateFile? { owners.lazy.compactMap { $0 as? CoordinateFile }.first }
}

/// Doubles on the heap, freed with the object.
final class HeapDoubles: @unchecked Sendable {
    let base: UnsafeMutablePointer<Double>
    let count: Int
    init(count: Int) {
        self.count = count
        base = .allocate(capacity: max(1, count))
    }
    deinit { base.deallocate() }
}

/// A large polygon perimeter (`MemoryCoverageEngine.Cold`'s compact polygons) written from the
/// GeoJSON text of its rings kept in the coordinate file.
struct CompactPerimeter: FormattedPerimeter {
    let polygons: [CompactPolygon]
    /// A MultiPolygon (else one polygon is a Polygon), as `Cold.isMulti`.
    let isMulti: Bool

    private var single: Bool { !isMulti && polygons.count == 1 }
    private static let polygonPrefix = Array("{\"type\":\"Polygon\",\"coordinates\":".utf8)
    private static let multiPrefix = Array("{\"type\":\"MultiPolygon\",\"coordinates\":[".utf8)
    private static let comma = [UInt8(ascii: ",")], polygonEnd = Array("}".utf8), multiEnd = Array("]}".utf8)

    var jsonByteCount: Int {
        (single ? Self.polygonPrefix.count + 1 : Self.multiPrefix.count + 2)
            + polygons.reduce(0) { $0 + $1.textLength } + polygons.count - 1
    }

    func writeJSON(to out: UnsafeMutableRawBufferPointer) -> Bool {
        guard out.count == jsonByteCount else { return false }
        var at = 0
        func put(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + $0.count)]).copyMemory(from: $0) }
            at += bytes.count
        }
        put(single ? Self.polygonPrefix : Self.multiPrefix)
        for (i, p) in polygons.enumerated() {
            if i > 0 { put(Self.comma) }
            guard p.readRingsJSON(into: UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + p.textLength)])) else { return false }
            at += p.textLength
        }
        put(single ? Self.polygonEnd : Self.multiEnd)
        return at == out.count
    }

    var perimeter: Perimeter {
        let rebuilt = polygons.map(PolygonCache.shared.polygon(of:))
        return isMulti || rebuilt.count != 1 ? .multiPolygon(rebuilt) : .polygon(rebuilt[0])
    }
}
