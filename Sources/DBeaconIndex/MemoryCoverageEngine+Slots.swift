import CPrefetch
package import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The arenas: installing, moving and removing slots, their records, rasters and the indexes of users, services and tags.
extension MemoryCoverageEngine {
    /// Must hold the write lock.
    func install(_ beacon: Beacon, _ prep: consuming Prepared) {
        if let old = slots[beacon.id] { uninstall(old) }
        var h = Hot()
        let boxes = prep.boxes
        h.multiBox = boxes.count > 1
        h.lifeStart = beacon.lifetime?.start?.millis ?? .min
        h.lifeEnd = beacon.lifetime?.end?.millis ?? .max
        h.owner = userIndex(beacon.owner)
        h.service = beacon.service.map(serviceIndex) ?? 0
        h.isPrivate = beacon.members != nil
        let members = Array(Set((beacon.members ?? []).map(userIndex))).sorted()
        for m in members { h.memberBits |= Self.memberBit(m) }
        for tag in beacon.tags {
            let id = tagIndex(tag)
            if id < 64 { h.tagBits |= 1 << UInt64(id) } else { h.overflowTags = true }
        }
        var raster: Int32 = -1
        var radius: Double?, isMulti = false
        switch beacon.perimeter {
        case .circle(let r): radius = r
        case .multiPolygon: isMulti = true
        case .polygon: break
        }
        if let radius {
            h.test = .circle(lat: beacon.location.lat, lon: beacon.location.lon, radius: radius)
        } else if !prep.compact.isEmpty {
            raster = prep.raster.map(storeRaster) ?? -1
            h.test = .large(raster: raster, coarse: prep.raster?.coarse ?? (0, 0))
        } else if let flat = prep.flat {
            h.test = .small(UnsafePointer(flat.base), coarse: prep.smallCoarse)
        }
        let offset = records.count
        records.append(contentsOf: prep.record)
        let c = Cold(id: beacon.id, location: beacon.location, radius: radius ?? 0, record: offset, recordLength: prep.record.count,
                     raster: raster, kind: h.test.kind, tracksOwner: beacon.tracksOwner, isMulti: isMulti, flat: prep.flat,
                     compact: prep.compact, members: members, boxes: boxes, summaryPending: prep.summaryPending,
                     enclosing: prep.enclosing)
        place(c, hot: h, cells: prep.cells)
    }

    /// Puts a slot's record in a free slot and its boxes in the grid. Must hold the write lock.
    func place(_ c: Cold, hot: Hot, cells: [(level: Int, keys: [UInt64])]? = nil) {
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = Int32(cold.count)
            cold.append(nil)
        }
        let boxes = c.boxes
        let cells = cells ?? boxes.map(HierarchicalGrid<Hot>.cells(for:))
        for (box, cell) in zip(boxes, cells) { grid.insert(slot, box: box, level: cell.level, keys: cell.keys, record: hot) }
        if c.needsWarming { pending += 1 }
        if c.raster >= 0 {
            let n = Int(c.raster)
            if rasterBlocks.count <= n { rasterBlocks += repeatElement(nil, count: n + 1 - rasterBlocks.count) }
            rasterBlocks[n] = c.compact.count == 1 ? c.compact[0].block : nil
        }
        cold[Int(slot)] = c
        slots.set(c.id, slot: slot)
        if c.tracksOwner { tracking[hot.owner, default: []].insert(slot) }
    }

    /// Replaces a slot's `Cold` with one of the same beacon and record (moved, or with its
    /// raster). Must hold the write lock.
    func reinstall(_ slot: Int32, _ c: Cold, hot: Hot) {
        uninstall(slot, keepRecord: true)
        place(c, hot: hot)
    }

    /// Must hold the write lock.
    func uninstall(_ slot: Int32, keepRecord: Bool = false) {
        guard let c = cold[Int(slot)] else { return }
        let owner = c.tracksOwner ? grid.record(of: slot, box: c.box)?.owner : nil
        for box in c.boxes {
            let cell = HierarchicalGrid<Hot>.cells(for: box)
            grid.remove(slot, level: cell.level, keys: cell.keys)
        }
        if let owner {
            tracking[owner]?.remove(slot)
            if tracking[owner]?.isEmpty == true { tracking[owner] = nil }
        }
        slots.remove(c.id)
        if c.raster >= 0 { rasterBlocks[Int(c.raster)] = nil }
        if !keepRecord {
            if c.raster >= 0 { freeRasters.append(c.raster) }
            recordGarbage += Int(c.recordLength)
            if recordGarbage > 1 << 20 && recordGarbage > records.count / 2 { compactRecords(without: c) }
        }
        if c.needsWarming { pending -= 1 }
        cold[Int(slot)] = nil
        freeSlots.append(slot)
    }

    /// Scrubs what erased data left in memory, so that the next snapshot holds none of it (issue
    /// 43): the records of deleted and replaced beacons still in the arena (compacted away), the
    /// freed rasters' words (zeroed), and `user`'s id in the table that numbers users (replaced by
    /// a placeholder: no beacon refers to that number any more, and it is never reused).
    package func scrub(erasing user: UserID) {
        lock.write {
            compactRecords(without: nil)
            let zeros = [UInt64](repeating: 0, count: PolygonRaster.wordCount)
            for r in freeRasters { rasterWords.replaceSubrange(rasterRange(r), with: zeros) }
            if let i = users.removeValue(forKey: user) { users[UserID(uncheckedRawValue: "~erased\(i)")] = i }
        }
    }

    /// Copies the records of the slots (but `dropped`) into a new arena, without the garbage.
    /// Must hold the write lock.
    func compactRecords(without dropped: Cold?) {
        var fresh: [UInt8] = []
        fresh.reserveCapacity(records.count - recordGarbage)
        records.withUnsafeBufferPointer { old in
            for case let c? in cold where c !== dropped {
                let offset = fresh.count
                fresh.append(contentsOf: old[c.record..<(c.record + Int(c.recordLength))])
                c.record = offset
            }
        }
        records = fresh
        recordGarbage = 0
    }

    /// The words of raster `r` in `rasterWords`.
    func rasterRange(_ r: Int32) -> Range<Int> {
        Int(r) * PolygonRaster.wordCount ..< Int(r + 1) * PolygonRaster.wordCount
    }

    func userIndex(_ user: UserID) -> Int32 {
        if let i = users[user] { return i }
        let i = Int32(users.count)
        users[user] = i
        return i
    }

    func serviceIndex(_ service: String) -> Int32 {
        if let i = services[service] { return i }
        let i = Int32(services.count + 1)
        services[service] = i
        return i
    }

    func tagIndex(_ tag: String) -> Int {
        if let i = tagIDs[tag] { return i }
        let i = tagIDs.count
        tagIDs[tag] = i
        return i
    }

    /// The boxes a perimeter is indexed under: circles by their geodesic extent (two boxes
    /// across the antimeridian); polygons by their extent, or one box per polygon when a
    /// multipolygon is split at the antimeridian.
    package static func boxes(of beacon: Beacon) -> [BoundingBox] {
        switch beacon.perimeter {
        case .circle(let r):
            return Geodesy.boundingBoxes(center: beacon.location, radiusM: r)
        case .polygon(let p):
            return [BoundingBox(of: p.exterior)] // (no array of polygons: one per load of a beacon)
        case .multiPolygon(let polygons):
            let perPolygon = polygons.map { BoundingBox(of: $0.exterior) }
            let all = perPolygon.dropFirst().reduce(perPolygon[0]) { $0.union($1) }
            return all.east - all.west > 180 ? perPolygon : [all]
        }
    }
}
