/// A hash table from a grid cell's key to a small value, for the grid's per-query lookups: open
/// addressing with linear probing, key and value side by side (one cache line per lookup where
/// `Dictionary` reads its bitmap, keys and values in three places) and a multiplicative hash
/// (cell keys are not chosen by callers, so no seeded hash is needed).
///
/// `UInt64.max` marks a free place: it is no cell's key (`HierarchicalGrid.key` of a longitude
/// and latitude index that are never -1 both).
package struct CellTable<Value> {
    private struct Place {
        var key: UInt64
        var value: Value
    }

    private static var free: UInt64 { .max }

    private var places: [Place]
    private var shift: UInt64
    /// Stored in free places (any value of the type).
    private let filler: Value
    package private(set) var count = 0

    /// An empty table; `filler` is any value (it fills the free places).
    package init(filler: Value) {
        self.filler = filler
        places = Array(repeating: Place(key: Self.free, value: filler), count: 16)
        shift = 64 - 4
    }

    @inline(__always)
    private var mask: Int { places.count - 1 }

    @inline(__always)
    private func home(_ key: UInt64) -> Int { Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift) }

    /// The value of `key`, or nil.
    @inline(__always)
    package subscript(key: UInt64) -> Value? {
        places.withUnsafeBufferPointer { p in
            let mask = p.count - 1
            var i = home(key)
            while true {
                let k = p[i].key
                if k == key { return p[i].value }
                if k == Self.free { return nil }
                i = (i + 1) & mask
            }
        }
    }

    /// Sets the value of `key` (nil: removes it).
    package mutating func set(_ key: UInt64, _ value: Value?) {
        precondition(key != Self.free, "the key of free places")
        var i = home(key)
        while places[i].key != Self.free && places[i].key != key { i = (i + 1) & mask }
        guard let value else {
            if places[i].key == key { remove(at: i) }
            return
        }
        if places[i].key == key {
            places[i].value = value
            return
        }
        places[i] = Place(key: key, value: value)
        count += 1
        if count * 2 > places.count { grow() }
    }

    /// Frees place `i`, moving later places of its probe run back so every key stays reachable
    /// from its home without crossing a free place.
    private mutating func remove(at start: Int) {
        var i = start, j = start
        while true {
            j = (j + 1) & mask
            let k = places[j].key
            if k == Self.free { break }
            let h = home(k)
            // The key at j may move to i unless its home lies cyclically in (i, j].
            let stays = i <= j ? (i < h && h <= j) : (i < h || h <= j)
            if !stays {
                places[i] = places[j]
                i = j
            }
        }
        places[i] = Place(key: Self.free, value: filler)
        count -= 1
    }

    private mutating func grow() {
        let old = places
        places = Array(repeating: Place(key: Self.free, value: filler), count: old.count * 2)
        shift -= 1
        for p in old where p.key != Self.free {
            var i = home(p.key)
            while places[i].key != Self.free { i = (i + 1) & mask }
            places[i] = p
        }
    }
}
