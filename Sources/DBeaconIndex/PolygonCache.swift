import DBeaconCore
import Foundation

/// Large polygons lately rebuilt from their exact coordinates (`CompactPolygon.polygon`), bounded
/// in bytes. The fence engine checks an exit cushion on every fix of a user standing just outside
/// a perimeter, and reading a 5,000-vertex polygon's 80 KB each time was a tenth of a fix's cost.
///
/// An entry holds its compact polygon, so the polygon's identity (the key) cannot be reused by
/// another while it is cached; a changed beacon has new compact polygons, so nothing is stale.
final class PolygonCache: Sendable {
    static let shared = PolygonCache(maxBytes: 64 << 20)

    private struct Shard {
        var entries: [ObjectIdentifier: (owner: CompactPolygon, polygon: Polygon)] = [:]
        var order: [ObjectIdentifier] = []
        var head = 0
        var bytes = 0
    }

    private final class Box: @unchecked Sendable {
        let lock = NSLock()
        var shard = Shard()
        func withLock<T>(_ body: (inout Shard) -> T) -> T { lock.withLock { body(&shard) } }
    }

    private let shards: [Box]
    private let shardBytes: Int

    init(maxBytes: Int) {
        shards = (0..<8).map { _ in Box() }
        shardBytes = maxBytes / 8
    }

    /// The polygon of `compact`, rebuilt once and kept while there is room.
    func polygon(of compact: CompactPolygon) -> Polygon {
        let key = ObjectIdentifier(compact)
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % 8)]
        if let hit = shard.withLock({ $0.entries[key]?.polygon }) { return hit }
        let polygon = compact.polygon
        let bytes = Self.cost(compact)
        guard bytes <= shardBytes else { return polygon }
        shard.withLock { s in
            guard s.entries[key] == nil else { return }
            // Oldest first out (insertion order).
            while s.bytes + bytes > shardBytes && s.head < s.order.count {
                if let old = s.entries.removeValue(forKey: s.order[s.head]) { s.bytes -= Self.cost(old.owner) }
                s.head += 1
            }
            if s.head > 1024 && s.head * 2 > s.order.count {
                s.order.removeFirst(s.head)
                s.head = 0
            }
            s.entries[key] = (compact, polygon)
            s.order.append(key)
            s.bytes += bytes
        }
        return polygon
    }

    /// Bytes a rebuilt polygon holds (its vertices and the array's header).
    private static func cost(_ compact: CompactPolygon) -> Int { 16 * compact.vertexCount + 64 }
}
