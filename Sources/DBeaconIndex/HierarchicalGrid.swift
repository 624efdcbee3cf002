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
/// Each entry carries a copy of its slot's `Record` (what a query filters and tests on), so a
/// query scans a cell's contiguous list and reaches no other memory for most candidates.
package struct HierarchicalGrid<Record> {
    package static var baseCell: Double { 1.0 / 256 } // ≈ 434 m of latitude
    package static var levels: Int { 18 } // the coarsest level's cells (512°) hold any box

    /// One box in a cell: the slot, its box rounded outwards to `Float` (most candidates are
    /// rejected on it) and the slot's record.
    package struct Entry {
        package var slot: Int32
        package var west: Float, south: Float, east: Float, north: Float
        package var record: Record

        init(slot: Int32, box: BoundingBox, record: Record) {
            self.slot = slot
            self.record = record
            let r = HierarchicalGrid.roundedOut(box)
            west = Float(r.west)
            south = Float(r.south)
            east = Float(r.east)
            north = Float(r.north)
        }

        /// The entry's box (`roundedOut` of the box it was inserted with), exactly.
        @inline(__always)
        package var box: BoundingBox { BoundingBox(west: Double(west), south: Double(south), east: Double(east), north: Double(north)) }

        @inline(__always)
        func mayContain(lon: Float, lat: Float) -> Bool {
            lon >= west && lon <= east && lat >= south && lat <= north
        }
    }

    /// Per level: cell key → entries.
    private var cells: [[UInt64: [Entry]]]
    /// Per level: cell key → where that cell's entries are (kept in step with `cells` by every
    /// change of a list). A query reads a list through it: copying the array out of `cells`
    /// retains it, an atomic write to the list's cold first line, and atomics do not let the
    /// levels' misses overlap.
    private var views: [[UInt64: CellView]]

    /// A cell list's storage, valid until the list changes.
    struct CellView {
        let base: UnsafePointer<Entry>
        let count: Int
    }

    /// Makes `views` show the list of `key` at `level` as it is now.
    private mutating func updateView(_ level: Int, _ key: UInt64) {
        views[level][key] = cells[level][key]?.withUnsafeBufferPointer { list in
            list.baseAddress.map { CellView(base: $0, count: list.count) }
        }
    }
    /// Number of boxes per level, so empty levels are skipped by queries.
    private var population: [Int]
    /// Levels with at least one box, finest first (kept in sync with `population`).
    private(set) var occupied: [Int] = []

    package init() {
        cells = Array(repeating: [:], count: Self.levels)
        views = Array(repeating: [:], count: Self.levels)
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
        return list.first { $0.slot == slot }?.record
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
        let entry = Entry(slot: slot, box: box, record: record)
        if staged != nil {
            for k in keys { staged?[level].append((k, entry)) }
        } else {
            for k in keys {
                cells[level][k, default: []].append(entry)
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
    private var staged: [[(key: UInt64, entry: Entry)]]?

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
                var list = cells[level].removeValue(forKey: key) ?? []
                list.reserveCapacity(list.count + end - start)
                for i in start..<end { list.append(entries[Int(order[i].index)].entry) }
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
            cells[level][k]?.removeFirstSwapped { $0.slot == slot }
            if cells[level][k]?.isEmpty == true { cells[level][k] = nil }
            updateView(level, k)
        }
        population[level] -= 1
        if population[level] == 0 { occupied = (0..<Self.levels).filter { population[$0] > 0 } }
    }

    /// Calls `body` with the slot and record of every box (in the cells containing the point)
    /// whose rounded-out box contains the point: a superset of the boxes containing it. A slot
    /// may repeat only when its beacon has several boxes.
    ///
    /// `prepare` sees every such entry before `body` sees any: it can request the memory the
    /// test will read (prefetch), so the candidates' misses overlap instead of coming one by one.
    @inline(__always)
    package func forEachCandidate(lon: Double, lat: Double, prepare: (borrowing Entry) -> Void = { _ in },
                                  _ body: (borrowing Entry) -> Void) {
        let flon = Float(lon), flat = Float(lat)
        // Every level's cell is looked up first, then scanned: the lookups are independent, so
        // their cache misses overlap instead of coming one after another.
        withUnsafeTemporaryAllocation(of: CellView.self, capacity: Self.levels) { lists in
            var n = 0
            for level in occupied {
                let s = Self.size(level)
                let k = Self.key(Self.index(lon, offset: 180, size: s), Self.index(lat, offset: 90, size: s))
                if let view = views[level][k] {
                    lists[n] = view
                    n += 1
                }
            }
            withUnsafeTemporaryAllocation(of: UnsafePointer<Entry>.self, capacity: Self.batch) { batch in
                var m = 0
                func flush() {
                    for i in 0..<m { body(batch[i].pointee) }
                    m = 0
                }
                for j in 0..<n {
                    let entries = lists[j].base
                    for i in 0..<lists[j].count where entries[i].mayContain(lon: flon, lat: flat) {
                        prepare(entries[i])
                        batch[m] = entries + i
                        m += 1
                        if m == Self.batch { flush() }
                    }
                }
                flush()
            }
        }
    }

    /// Candidates prepared before they are tested (a city point has a few dozen).
    static var batch: Int { 64 }
}

extension Array {
    /// Removes the first element matching `predicate`; the last element takes its place.
    mutating func removeFirstSwapped(where predicate: (Element) -> Bool) {
        guard let i = firstIndex(where: predicate) else { return }
        swapAt(i, count - 1)
        removeLast()
    }
}
