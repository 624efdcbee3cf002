package import DBeaconCore
import Foundation

/// Whole beacons recently read from the store, bounded in bytes, so answers (nearby, the fence
/// engine's enter/exit decisions) do not read the store for beacons asked for often. The index
/// itself keeps only what a query tests; a beacon is read whole only for an answer.
///
/// Sixteen shards, each a table and a CLOCK ring (a hit sets a bit; eviction passes over set
/// bits once, clearing them), under a lock of its own. The cache does not decide what is
/// current: `MemoryCoverageEngine` puts a beacon read from the store only if the beacon did
/// not change since it was looked up, and replaces cached copies as changes commit.
package final class BeaconCache: @unchecked Sendable {
    private final class Shard {
        let lock = NSLock()
        var table: [BeaconID: Int32] = [:]
        var ring: [Entry] = []
        var free: [Int32] = []
        var hand = 0
        var bytes = 0
    }

    private struct Entry {
        var beacon: Beacon?
        var bytes = 0
        var referenced = false
    }

    private let shards: [Shard]
    private let shardBytes: Int
    /// The most bytes held (an estimate of the beacons' heap size).
    package let capacityBytes: Int

    package init(capacityBytes: Int) {
        self.capacityBytes = capacityBytes
        shardBytes = max(0, capacityBytes / 16)
        shards = (0..<16).map { _ in Shard() }
    }

    @inline(__always)
    private func shard(_ id: BeaconID) -> Shard { shards[Int(UInt(bitPattern: id.hashValue) & 15)] }

    /// An estimate of a beacon's heap bytes (its storage, strings, arrays, coordinates).
    static func estimatedBytes(_ b: Beacon) -> Int {
        var n = 256 + 16 * b.perimeter.vertexCount + b.name.utf8.count + (b.description?.utf8.count ?? 0)
        n += 24 * b.tags.count + 32 * (b.members?.count ?? 0) + 64 * b.relationships.count
        for c in b.content { n += 64 + c.url.utf8.count + (c.title?.utf8.count ?? 0) }
        return n
    }

    /// The cached copy of a beacon.
    package func get(_ id: BeaconID) -> Beacon? {
        let s = shard(id)
        s.lock.lock()
        defer { s.lock.unlock() }
        guard let i = s.table[id] else { return nil }
        s.ring[Int(i)].referenced = true
        return s.ring[Int(i)].beacon
    }

    /// Caches a beacon (replacing a copy of it); with `onlyReplace`, only when a copy is cached.
    package func put(_ beacon: Beacon, onlyReplace: Bool = false) {
        let s = shard(beacon.id)
        let bytes = Self.estimatedBytes(beacon)
        s.lock.lock()
        defer { s.lock.unlock() }
        if let i = s.table[beacon.id] {
            s.bytes += bytes - s.ring[Int(i)].bytes
            s.ring[Int(i)].beacon = beacon
            s.ring[Int(i)].bytes = bytes
        } else {
            guard !onlyReplace, bytes <= shardBytes else { return }
            let entry = Entry(beacon: beacon, bytes: bytes, referenced: false)
            let i: Int32
            if let f = s.free.popLast() {
                i = f
                s.ring[Int(f)] = entry
            } else {
                i = Int32(s.ring.count)
                s.ring.append(entry)
            }
            s.table[beacon.id] = i
            s.bytes += bytes
        }
        evict(s)
    }

    /// Forgets a beacon.
    package func remove(_ id: BeaconID) {
        let s = shard(id)
        s.lock.lock()
        defer { s.lock.unlock() }
        guard let i = s.table.removeValue(forKey: id) else { return }
        s.bytes -= s.ring[Int(i)].bytes
        s.ring[Int(i)] = Entry()
        s.free.append(i)
    }

    /// A cached beacon's new location (a beacon moving with its owner).
    package func move(_ id: BeaconID, to position: Position) {
        let s = shard(id)
        s.lock.lock()
        defer { s.lock.unlock() }
        guard let i = s.table[id] else { return }
        s.ring[Int(i)].beacon?.location = position
    }

    /// Forgets everything.
    package func removeAll() {
        for s in shards {
            s.lock.lock()
            s.table = [:]
            s.ring = []
            s.free = []
            s.hand = 0
            s.bytes = 0
            s.lock.unlock()
        }
    }

    /// Bytes held now (estimate).
    package var bytes: Int {
        shards.reduce(0) { total, s in s.lock.withLock { total + s.bytes } }
    }

    /// Number of beacons held.
    package var count: Int {
        shards.reduce(0) { total, s in s.lock.withLock { total + s.table.count } }
    }

    /// CLOCK: evicts unreferenced entries until the shard fits. Must hold the shard's lock.
    private func evict(_ s: Shard) {
        guard s.bytes > shardBytes, !s.ring.isEmpty else { return }
        var passes = 0
        while s.bytes > shardBytes && passes < 2 * s.ring.count + 1 {
            if s.hand >= s.ring.count { s.hand = 0 }
            let i = s.hand
            s.hand += 1
            passes += 1
            guard let b = s.ring[i].beacon else { continue }
            if s.ring[i].referenced {
                s.ring[i].referenced = false
                continue
            }
            s.table[b.id] = nil
            s.bytes -= s.ring[i].bytes
            s.ring[i] = Entry()
            s.free.append(Int32(i))
        }
    }
}
