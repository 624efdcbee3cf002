import DBeaconCore
import DBeaconIndex
import Testing

/// The grid must find exactly the boxes containing a point, whether they were inserted one
/// at a time or staged by a bulk load (and removed or inserted again while staging).
@Suite(.bounded) struct HierarchicalGridTests {
    struct Rng: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Boxes from a few metres to tens of kilometres, so several levels are occupied.
    static func box(_ rng: inout Rng) -> BoundingBox {
        let lon = Double.random(in: 2.2...2.5, using: &rng), lat = Double.random(in: 48.8...49.0, using: &rng)
        let size = [0.0002, 0.003, 0.02, 0.3].randomElement(using: &rng)! * Double.random(in: 0.2...1, using: &rng)
        return BoundingBox(west: lon, south: lat, east: lon + size, north: lat + size * 0.7)
    }

    func candidates(_ grid: HierarchicalGrid<Int32>, _ lon: Double, _ lat: Double) -> [Int32] {
        var found: [Int32] = []
        grid.forEachCandidate(lon: lon, lat: lat) { entry in
            #expect(entry.record == entry.slot)
            found.append(entry.slot)
        }
        return found.sorted()
    }

    @Test func stagedLoadFindsWhatSingleInsertsFind() {
        var rng = Rng(state: 7)
        let boxes = (0..<3_000).map { _ in Self.box(&rng) }
        var live = Set<Int32>()
        var single = HierarchicalGrid<Int32>()
        var staged = HierarchicalGrid<Int32>()
        staged.beginStaging()
        func insert(_ slot: Int32) {
            let c = HierarchicalGrid<Int32>.cells(for: boxes[Int(slot)])
            single.insert(slot, box: boxes[Int(slot)], level: c.level, keys: c.keys, record: slot)
            staged.insert(slot, box: boxes[Int(slot)], level: c.level, keys: c.keys, record: slot)
            live.insert(slot)
        }
        func remove(_ slot: Int32) {
            let c = HierarchicalGrid<Int32>.cells(for: boxes[Int(slot)])
            single.remove(slot, level: c.level, keys: c.keys)
            staged.remove(slot, level: c.level, keys: c.keys)
            live.remove(slot)
        }
        for slot in 0..<2_000 { insert(Int32(slot)) }
        // Staged entries are invisible until the load ends (or a removal puts them in place).
        let probe = boxes[1_999]
        #expect(candidates(staged, probe.west, probe.south).isEmpty && !candidates(single, probe.west, probe.south).isEmpty)
        // Changes applied during a load: removals of staged entries, then more inserts.
        for slot in stride(from: 0, to: 2_000, by: 7) { remove(Int32(slot)) }
        for slot in 2_000..<3_000 { insert(Int32(slot)) }
        for slot in stride(from: 1, to: 3_000, by: 11) where live.contains(Int32(slot)) { remove(Int32(slot)) }
        staged.endStaging()

        var nonEmpty = 0
        for i in 0..<4_000 {
            // Random points, and points on box corners (the boundary is inside).
            let (lon, lat): (Double, Double)
            if i % 2 == 0 {
                lon = Double.random(in: 2.2...2.8, using: &rng); lat = Double.random(in: 48.8...49.2, using: &rng)
            } else {
                let b = boxes[Int.random(in: 0..<boxes.count, using: &rng)]
                (lon, lat) = i % 4 == 1 ? (b.west, b.south) : (b.east, b.north)
            }
            // Candidates are the boxes containing the point rounded to `Float` (a superset of
            // those containing it: entries keep `Float` boxes rounded outwards).
            let (x, y) = (Float(lon), Float(lat))
            let expected = live.filter {
                let r = HierarchicalGrid<Int32>.roundedOut(boxes[Int($0)])
                return x >= Float(r.west) && x <= Float(r.east) && y >= Float(r.south) && y <= Float(r.north)
            }.sorted()
            if !expected.isEmpty { nonEmpty += 1 }
            #expect(candidates(single, lon, lat) == expected)
            #expect(candidates(staged, lon, lat) == expected)
        }
        #expect(nonEmpty > 1_000)
    }

    /// The grid's cell table against `Dictionary` through random inserts, updates and removals:
    /// keys from a small range so probe runs collide, wrap around the end and shift back on
    /// removal.
    @Test func cellTableKeepsWhatADictionaryKeeps() {
        var rng = Rng(state: 11)
        var table = CellTable<Int>(filler: -1)
        var reference: [UInt64: Int] = [:]
        for step in 0..<60_000 {
            // Grows to ~1,000 keys, then shrinks: removals dominate the last third.
            let key = UInt64.random(in: 0..<1_500, using: &rng) << (step % 2 == 0 ? 32 : 0)
            let remove = Int.random(in: 0..<3, using: &rng) == 0 || (step > 40_000 && Bool.random(using: &rng))
            let value: Int? = remove ? nil : step
            table.set(key, value)
            reference[key] = value
            if step % 997 == 0 {
                #expect(table.count == reference.count)
                for k in 0..<1_500 {
                    for key in [UInt64(k), UInt64(k) << 32] { #expect(table[key] == reference[key]) }
                }
            }
        }
        #expect(table.count == reference.count)
        for (key, value) in reference { #expect(table[key] == value) }
    }
}
