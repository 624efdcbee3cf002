import CPrefetch
import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the index holds and where its memory goes.
extension MemoryCoverageEngine {
    /// Bytes in the record arena, garbage included (it is compacted once garbage is half of it).
    package var recordArenaBytes: Int { lock.read { records.count } }

    /// Where the index's memory goes (bytes, estimated from the layouts; the bench logs it).
    package var memoryReport: [(String, Int)] {
        lock.read {
            var compact = 0, flat = 0, members = 0, exact = 0
            var large = 0, small = 0, circles = 0
            for case let c? in cold {
                for p in c.compact { compact += p.blockBytes; exact += p.fileBytes }
                if let f = c.flat { flat += 8 * f.count }
                members += 4 * c.members.count
                switch c.kind {
                case .large: large += 1
                case .small: small += 1
                case .circle: circles += 1
                case .free: break
                }
            }
            let entries = grid.entryCount
            return [
                ("beacons", slots.count), ("circles", circles), ("small polygons", small), ("large polygons", large),
                ("slot objects", cold.count * 200 + members), ("records", records.capacity),
                ("id table", slots.bytes),
                ("grid entries", entries * (MemoryLayout<HierarchicalGrid<Hot>.Box>.stride + MemoryLayout<HierarchicalGrid<Hot>.Entry>.stride)),
                ("small polygon blocks", flat), ("large polygon blocks", compact),
                ("rasters", rasterWords.capacity * 8 + rasterBlocks.capacity * 8),
                ("exact coordinates and their GeoJSON (file)", exact), ("coordinate file", coordinatesLock.withLock { coordinates?.size ?? 0 }),
            ]
        }
    }
}
