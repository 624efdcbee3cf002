import CPrefetch
package import DBeaconCore

/// A multi-level uniform grid over longitude/latitude boxes: the spatial index of the
/// in-memory engine.
///
/// Level `L` has square cells of `baseCell · 2^L` degrees. A box goes to the finest level
/// whose cells are at least as large as its extent, so it touches at most 2×2 cells there; a
/// point query looks up one cell per occupied level (three or four for city data: perimeters
/// up to about 300 m live on level 0, up to about 2.5 km on level 3). Inserts and removals are O(1) and the cost
/// of a query does not depend on how large the indexed boxes are — a 50 km region and a
/// 20 m circle are both found with one hash lookup each.
///
/// A cell keeps its boxes (`Float`, four to a cache line) apart from its entries, in step: a
/// query scans the boxes alone and reads the entry only of a box that holds the point. Each
/// entry carries a copy of its slot's `Record` (what a query filters and tests on), so most
/// candidates reach no memory beyond their entry.
package struct HierarchicalGrid<Record> {
    package static var baseCell: Double { 1.0 / 256 } // ≈ 434 m of latitude
    package static var levels: Int { 18 } // the coarsest level's cells (512°) hold any box

    /// A box rounded outwards to `Float` (most candidates are rejected on it).
    package struct Box {
        package var west: Float, south: Float, east: Float, north: Float

        init(_ box: BoundingBox) {
            let r = HierarchicalGrid.roundedOut(box)
            west = Float(r.west)
            south = Float(r.south)
            east = Float(r.east)
            north = Float(r.north)
        }

        /// The box (`roundedOut` of the box it was made from), exactly.
        @inline(__always)
        package var bounds: BoundingBox { BoundingBox(west: Double(west), south: Double(south), east: Double(east), north: Double(north)) }

        @inline(__always)
        func mayContain(lon: Float, lat: Float) -> Bool {
            lon >= west && lon <= east && lat >= south && lat <= north
        }
    }

    /// What a cell keeps for one box besides the box: the slot and the slot's record.
    package struct Entry {
        package var slot: Int32
        package var record: Record
    }

    /// A cell's boxes and entries, in step: the boxes alone are scanned (four to a cache line),
    /// the entries are read only for boxes that hold the point (one in seven in a city).
    struct CellList {
        var boxes: [Box] = []
        var entries: [Entry] = []

        var count: Int { boxes.count }

        mutating func reserveCapacity(_ n: Int) {
            boxes.reserveCapacity(n)
            entries.reserveCapacity(n)
        }

        mutating func append(_ box: Box, _ entry: Entry) {
            boxes.append(box)
            entries.append(entry)
        }

        /// Removes `slot`'s first entry; the last takes its place.
        mutating func remove(_ slot: Int32) {
            guard let i = entries.firstIndex(where: { $0.slot == slot }) else { return }
            boxes.swapAt(i, count - 1)
            entries.swapAt(i, count - 1)
            boxes.removeLast()
            entries.removeLast()
        }
    }

    /// A box of a cell that holds the point, as a query sees it.
    package struct Candidate {
        let boxPointer: UnsafePointer<Box>
        let entryPointer: UnsafePointer<Entry>

        @inline(__always) package var slot: Int32 { entryPointer.pointee.slot }
        @inline(__always) package var record: Record { entryPointer.pointee.record }
        /// The entry's box (`roundedOut` of the box it was inserted with), exactly.
        @inline(__always) package var box: BoundingBox { boxPointer.pointee.bounds }
    }

    /// Per level: cell key → boxes and entries.
    private var cells: [[UInt64: CellList]]
    /// Per level: cell key → where that cell's boxes and entries are (kept in step with `cells`
    /// by every change of a list). A query reads a list through it: copying the arrays out of
    /// `cells` retains them, an atomic write to each one's cold first line, and atomics do not
    /// let the levels' misses overlap.
    private var views: [CellTable<CellView>]

    /// A cell list's storage, valid until the list changes.
    struct CellView {
        let boxes: UnsafePointer<Box>
        let entries: UnsafePointer<Entry>
        let count: Int

        /// Fills the free places of `views` (an empty list: its addresses are never read).
        static var none: CellView {
            CellView(boxes: UnsafePointer(bitPattern: 16)!, entries: UnsafePointer(bitPattern: 16)!, count: 0)
        }
    }

    /// Makes `views` show the list of `key` at `level` as it is now.
    private mutating func updateView(_ level: Int, _ key: UInt64) {
        views[level].set(key, cells[level][key].flatMap { list in
            list.boxes.withUnsafeBufferPointer { boxes in
                list.entries.withUnsafeBufferPointer { entries in
                    guard let b = boxes.baseAddress, let e = entries.baseAddress else { return nil }
                    return CellView(boxes: b, entries: e, count: list.count)
                }
            }
        })
    }

    /// Number of boxes per level, so empty levels are skipped by queries.
    private var population: [Int]
    /// Levels with at least one box, finest first (kept in sync with `population`).
    private(set) var occupied: [Int] = []

    package init() {
        cells = Array(repeating: [:], count: Self.levels)
        views = Array(repeating: CellTable(filler: .none), count: Self.levels)
        population = Array(repeating: 0, count: Self.levels)
    }

    /// The record of `slot`'s entry for `box` (as inserted), or nil.
    package mutating func record(of slot: Int32, box: BoundingBox) -> Record? {
        if staged != nil { // a change during a load: rare; its entry may be staged still
            endStaging()
            beginStaging()
        }
        return peekRecord(of: slot, box: box)
    }

    /// `record(of:box:)` without changing anything: nil while entries are staged.
    package func peekRecord(of slot: Int32, box: BoundingBox) -> Record? {
        guard staged == nil else { return nil }
        let (level, keys) = Self.cells(for: box)
        guard let k = keys.first, let list = cells[level][k] else { return nil }
        return list.entries.first { $0.slot == slot }?.record
    }

    /// Entries in all cells (a box in several cells counts once per cell).
    package var entryCount: Int { cells.reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count } } }

    /// The box an entry keeps for `box`: rounded outwards to `Float` (it contains `box`).
    package static func roundedOut(_ box: BoundingBox) -> BoundingBox {
        BoundingBox(west: Double(Float(box.west).nextDown), south: Double(Float(box.south).nextDown),
                    east: Double(Float(box.east).nextUp), north: Double(Float(box.north).nextUp))
    }

    @inline(__always)
    static func size(_ level: Int) -> Double { baseCell * Double(1 << level) }

    @inline(__always)
    static func key(_ ix: Int, _ iy: Int) -> UInt64 { UInt64(UInt32(truncatingIfNeeded: ix)) << 32 | UInt64(UInt32(truncatingIfNeeded: iy)) }

    @inline(__always)
    static func index(_ v: Double, offset: Double, size: Double) -> Int { Int(((v + offset) / size).rounded(.down)) }

    static func level(for box: BoundingBox) -> Int {
        let extent = max(box.east - box.west, box.north - box.south)
        var level = 0
        while level < levels - 1 && size(level) < extent { level += 1 }
        return level
    }

    /// The cells a box occupies: (level, keys).
    package static func cells(for box: BoundingBox) -> (level: Int, keys: [UInt64]) {
        let level = level(for: box)
        let s = size(level)
        let x0 = index(box.west, offset: 180, size: s), x1 = index(box.east, offset: 180, size: s)
        let y0 = index(box.south, offset: 90, size: s), y1 = index(box.north, offset: 90, size: s)
        var keys: [UInt64] = []
        keys.reserveCapacity((x1 - x0 + 1) * (y1 - y0 + 1))
        for x in x0...x1 { for y in y0...y1 { keys.append(key(x, y)) } }
        return (level, keys)
    }

    package mutating func insert(_ slot: Int32, box: BoundingBox, level: Int, keys: [UInt64], record: Record) {
        let entry = Entry(slot: slot, record: record), b = Box(box)
        if staged != nil {
            for k in keys { staged?[level].append((k, b, entry)) }
        } else {
            for k in keys {
                cells[level][k, default: CellList()].append(b, entry)
                updateView(level, k)
            }
        }
        population[level] += 1
        if population[level] == 1 { occupied = (0..<Self.levels).filter { population[$0] > 0 } }
    }

    /// Entries inserted while staging, per level, with their cell: queries do not see them until
    /// `endStaging`. A bulk load appending to each cell's list as it comes reaches a random list
    /// per entry (half of installing 1M beacons); staged entries are sorted by cell and each
    /// list is built in one allocation of the size it needs.
    private var staged: [[(key: UInt64, box: Box, entry: Entry)]]?

    /// Starts staging inserts (see `staged`): for a load nothing queries until it ends.
    package mutating func beginStaging() {
        if staged == nil { staged = Array(repeating: [], count: Self.levels) }
    }

    /// Puts the staged entries in their cells; queries see them from now on.
    package mutating func endStaging() {
        guard let staged else { return }
        self.staged = nil
        for level in staged.indices where !staged[level].isEmpty {
            let entries = staged[level]
            var order = entries.indices.map { (key: entries[$0].key, index: Int32($0)) }
            order.sort { $0.key < $1.key }
            var start = 0
            while start < order.count {
                let key = order[start].key
                var end = start + 1
                while end < order.count && order[end].key == key { end += 1 }
                var list = cells[level].removeValue(forKey: key) ?? CellList()
                list.reserveCapacity(list.count + end - start)
                for i in start..<end {
                    let e = entries[Int(order[i].index)]
                    list.append(e.box, e.entry)
                }
                cells[level][key] = list
                updateView(level, key)
                start = end
            }
        }
    }

    package mutating func remove(_ slot: Int32, level: Int, keys: [UInt64]) {
        if staged != nil { // a change during a load: rare; its entries may be staged still
            endStaging()
            beginStaging()
        }
        for k in keys {
            // In place: a list taken out of the table and put back is copied whole on its first change.
            cells[level][k]?.remove(slot)
            if cells[level][k]?.count == 0 { cells[level][k] = nil }
            updateView(level, k)
        }
        population[level] -= 1
        if population[level] == 0 { occupied = (0..<Self.levels).filter { population[$0] > 0 } }
    }

    /// Calls `body` with every box (in the cells containing the point) whose rounded-out box
    /// contains the point: a superset of the boxes containing it. A slot may repeat only when
    /// its beacon has several boxes.
    ///
    /// The scan reads boxes only and requests each hit's entry; `prepare` then sees every such
    /// candidate before `body` sees any: it can request the memory the test will read
    /// (prefetch), so the candidates' misses overlap instead of coming one by one.
    @inline(__always)
    package func forEachCandidate(lon: Double, lat: Double, prepare: (Candidate) -> Void = { _ in },
                                  _ body: (Candidate) -> Void) {
        let flon = Float(lon), flat = Float(lat)
        // Every level's cell is looked up and all its boxes requested first, then scanned: the
        // lookups and the lists' lines are independent, so their misses overlap instead of
        // coming one after another (the lists are a few cache lines each: ~70 lines in all).
        withUnsafeTemporaryAllocation(of: CellView.self, capacity: Self.levels) { lists in
            var n = 0
            for level in occupied {
                let s = Self.size(level)
                let k = Self.key(Self.index(lon, offset: 180, size: s), Self.index(lat, offset: 90, size: s))
                if let view = views[level][k] {
                    dbeacon_prefetch_range(view.boxes, view.count * MemoryLayout<Box>.stride)
                    lists[n] = view
                    n += 1
                }
            }
            withUnsafeTemporaryAllocation(of: Candidate.self, capacity: Self.batch) { batch in
                var m = 0
                func flush() {
                    for i in 0..<m { prepare(batch[i]) }
                    for i in 0..<m { body(batch[i]) }
                    m = 0
                }
                for j in 0..<n {
                    let boxes = lists[j].boxes, entries = lists[j].entries
                    for i in 0..<lists[j].count where boxes[i].mayContain(lon: flon, lat: flat) {
                        let entry = entries + i
                        dbeacon_prefetch(entry)
                        dbeacon_prefetch(UnsafeRawPointer(entry) + MemoryLayout<Entry>.size - 1)
                        batch[m] = Candidate(boxPointer: boxes + i, entryPointer: entry)
                        m += 1
                        if m == Self.batch { flush() }
                    }
                }
                flush()
            }
        }
    }

    /// Calls `body` with every entry whose rounded-out box meets `box` (a superset of the boxes
    /// meeting it); an entry in several cells comes once per cell. Every occupied level's cells
    /// over the box are looked up (or all of a level's cells, when there are fewer).
    package func forEachMeeting(_ box: BoundingBox, _ body: (Candidate) -> Void) {
        let q = Self.roundedOut(box)
        let west = Float(q.west), south = Float(q.south), east = Float(q.east), north = Float(q.north)
        // `q`'s sides are `Float`s already: comparing `Float`s is exact.
        func scan(_ view: CellView) {
            for i in 0..<view.count {
                let b = view.boxes[i]
                guard b.west <= east && west <= b.east && b.south <= north && south <= b.north else { continue }
                body(Candidate(boxPointer: view.boxes + i, entryPointer: view.entries + i))
            }
        }
        for level in occupied {
            let s = Self.size(level)
            let x0 = Self.index(q.west, offset: 180, size: s), x1 = Self.index(q.east, offset: 180, size: s)
            let y0 = Self.index(q.south, offset: 90, size: s), y1 = Self.index(q.north, offset: 90, size: s)
            if (x1 - x0 + 1) * (y1 - y0 + 1) > cells[level].count {
                for key in cells[level].keys { if let view = views[level][key] { scan(view) } }
            } else {
                for x in x0...x1 {
                    for y in y0...y1 {
                        if let view = views[level][Self.key(x, y)] { scan(view) }
                    }
                }
            }
        }
    }

    /// Candidates prepared before they are tested (a city point has a few dozen).
    static var batch: Int { 64 }
}
