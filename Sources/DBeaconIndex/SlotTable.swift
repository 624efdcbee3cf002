import CPrefetch
package import DBeaconCore

/// The index's beacon ids and slots, both ways: each slot's id (`ids`, nil for a free slot), and
/// an open-addressing table from id to slot that keeps no key of its own, only the slot (with 32
/// bits of the id's hash): a lookup reads one 8-byte entry, then the id of the slot it names to
/// confirm it. At a million beacons that table takes 16 MB, where a `[BeaconID: Int32]` took some
/// 90 MB, and a lookup in it cost three cache misses (the bucket's word, its 40-byte key, its
/// value): the gate's reads of some twenty beacons per OwnTracks post spent 40 % of their time
/// there. `slots(of:)` looks many ids up at once with their cache lines requested together.
///
/// Linear probing at most half full, with backward-shift deletion (no tombstones), the hash
/// seeded per process (`Hasher`), so ids chosen to collide cannot be made in advance.
package struct SlotTable {
    /// Each slot's beacon id (nil: free).
    package private(set) var ids: [BeaconID?] = []
    /// `hash << 32 | slot` per entry, `empty` where none.
    private var entries = [UInt64](repeating: SlotTable.empty, count: 16)
    package private(set) var count = 0

    package init() {}

    private static let empty = UInt64.max

    private var mask: Int { entries.count - 1 }

    private static func hash(_ id: BeaconID) -> UInt64 { UInt64(UInt32(truncatingIfNeeded: id.hashValue)) }

    /// The slot of `id`, if it has one.
    package subscript(id: BeaconID) -> Int32? {
        find(id, hash: Self.hash(id)).map { Self.slot(entries[$0]) }
    }

    /// An entry's slot.
    private static func slot(_ entry: UInt64) -> Int32 { Int32(truncatingIfNeeded: entry) }

    /// The entry index holding `id`.
    private func find(_ id: BeaconID, hash: UInt64) -> Int? {
        let mask = self.mask
        var i = Int(hash) & mask
        while true {
            let e = entries[i]
            if e == Self.empty { return nil }
            if e >> 32 == hash, ids[Int(Self.slot(e))] == id { return i }
            i = (i + 1) & mask
        }
    }

    /// The slots of `ids` that have one, in their order: every id's entry, then every candidate
    /// slot's id, is requested before any is read, so the misses of a batch overlap.
    package func slots(of wanted: [BeaconID]) -> [Int32] {
        let hashes = wanted.map(Self.hash)
        let mask = self.mask
        entries.withUnsafeBufferPointer { entries in
            ids.withUnsafeBufferPointer { ids in
                for h in hashes { dbeacon_prefetch(entries.baseAddress! + (Int(h) & mask)) }
                for h in hashes {
                    let e = entries[Int(h) & mask]
                    if e != Self.empty { dbeacon_prefetch(ids.baseAddress! + Int(Self.slot(e))) }
                }
            }
        }
        return zip(wanted, hashes).compactMap { id, h in find(id, hash: h).map { Self.slot(entries[$0]) } }
    }

    /// Gives `id` the slot `slot` (one past the last slot appends one). The slot must be free and
    /// the id have none.
    package mutating func set(_ id: BeaconID, slot: Int32) {
        if Int(slot) == ids.count { ids.append(nil) }
        assert(ids[Int(slot)] == nil, "slot \(slot) is taken")
        ids[Int(slot)] = id
        if (count + 1) * 2 > entries.count { resize(to: entries.count * 2) }
        insert(Self.hash(id) << 32 | UInt64(UInt32(bitPattern: slot)))
        count += 1
    }

    /// Frees the slot of `id` (nothing when it has none).
    package mutating func remove(_ id: BeaconID) {
        guard var i = find(id, hash: Self.hash(id)) else { return }
        ids[Int(Self.slot(entries[i]))] = nil
        count -= 1
        // Backward shift: entries after the hole that may move into it do.
        let mask = self.mask
        var j = i
        entries[i] = Self.empty
        while true {
            j = (j + 1) & mask
            let e = entries[j]
            if e == Self.empty { return }
            let home = Int(e >> 32) & mask
            // The entry stays when its home lies cyclically in (i, j].
            let stays = i <= j ? (i < home && home <= j) : (i < home || home <= j)
            if !stays {
                entries[i] = e
                entries[j] = Self.empty
                i = j
            }
        }
    }

    package mutating func reserveCapacity(_ n: Int) {
        ids.reserveCapacity(n)
        var size = entries.count
        while size < 2 * n { size *= 2 }
        if size > entries.count { resize(to: size) }
    }

    /// Bytes held (the memory report).
    var bytes: Int { entries.capacity * 8 + ids.capacity * MemoryLayout<BeaconID?>.stride }

    private mutating func insert(_ entry: UInt64) {
        let mask = self.mask
        var i = Int(entry >> 32) & mask
        while entries[i] != Self.empty { i = (i + 1) & mask }
        entries[i] = entry
    }

    private mutating func resize(to size: Int) {
        let old = entries
        entries = [UInt64](repeating: Self.empty, count: size)
        for e in old where e != Self.empty { insert(e) }
    }
}
