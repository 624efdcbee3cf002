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

/// Queries: covering a point, counting, ids, boxes met, beacons by id.
extension MemoryCoverageEngine {
    // MARK: Queries

    package func covering(_ query: CoverQuery) async throws -> [Beacon] {
        coveringNow(query)
    }

    /// Synchronous form of `covering` (benchmarks and callers outside async contexts).
    package func coveringNow(_ query: CoverQuery) -> [Beacon] {
        lock.read {
            var slots: [Int32] = []
            visit(query) { slots.append($0) }
            return beacons(of: slots, perimeter: query.perimeters)
        }
    }

    package func coveringFormatted(_ query: CoverQuery) async throws -> [(beacon: Beacon, perimeter: (any FormattedPerimeter)?)] {
        coveringFormattedNow(query)
    }

    /// Synchronous form of `coveringFormatted`: a large polygon perimeter whose rings' GeoJSON
    /// is in the coordinate file comes as that text (`CompactPerimeter`), not read into
    /// coordinates (a nearby answer copies it instead of formatting thousands of numbers).
    package func coveringFormattedNow(_ query: CoverQuery) -> [(beacon: Beacon, perimeter: (any FormattedPerimeter)?)] {
        lock.read {
            var slots: [Int32] = []
            visit(query) { slots.append($0) }
            var out: [(beacon: Beacon, perimeter: (any FormattedPerimeter)?)] = []
            out.reserveCapacity(slots.count)
            forEachBeacon(of: slots) { c, records in
                if query.perimeters, c.kind == .large, !c.compact.isEmpty, c.compact.allSatisfy({ $0.textLength > 0 }) {
                    out.append((beacon(c, records, perimeter: false), CompactPerimeter(polygons: c.compact, isMulti: c.isMulti)))
                } else {
                    out.append((beacon(c, records, perimeter: query.perimeters), nil))
                }
            }
            return out
        }
    }

    /// The beacons of `slots` (in use), in order. Must hold the read lock.
    func beacons(of slots: [Int32], perimeter: Bool = true) -> [Beacon] {
        var out: [Beacon] = []
        out.reserveCapacity(slots.count)
        forEachBeacon(of: slots) { c, records in out.append(beacon(c, records, perimeter: perimeter)) }
        return out
    }

    /// Calls `body` with the object of each of `slots` (in use), in order, and the records'
    /// bytes. Must hold the read lock.
    ///
    /// Each beacon reads its slot's object and then its record: both are cold. Their lines are
    /// requested for all beacons first, one step at a time, so the misses overlap instead of
    /// coming two per beacon in a row; the objects are reached without retaining them (an
    /// atomic on the cold line would wait for it), the read lock keeping them alive.
    func forEachBeacon(of slots: [Int32], _ body: (Cold, UnsafeRawBufferPointer) -> Void) {
        cold.withUnsafeBufferPointer { cold in
            let objects = UnsafeRawPointer(cold.baseAddress!).assumingMemoryBound(to: UnsafeRawPointer?.self)
            for slot in slots { dbeacon_prefetch(objects + Int(slot)) }
            for slot in slots { dbeacon_prefetch(objects[Int(slot)]) }
            records.withUnsafeBytes { records in
                for slot in slots {
                    guard let object = objects[Int(slot)] else { continue }
                    let offset = Unmanaged<Cold>.fromOpaque(object)._withUnsafeGuaranteedRef { $0.record }
                    dbeacon_prefetch(records.baseAddress! + offset)
                }
                for slot in slots { body(cold[Int(slot)]!, records) }
            }
        }
    }

    /// The beacon of a slot, from its record (`records`: the arena's bytes) and its geometry;
    /// without `perimeter`, a polygon perimeter comes back empty (nearby with `perimeter=none`
    /// does not read a large polygon's coordinates).
    func beacon(_ c: Cold, _ records: UnsafeRawBufferPointer, perimeter: Bool = true) -> Beacon {
        let bytes = UnsafeRawBufferPointer(rebasing: records[c.record..<(c.record + Int(c.recordLength))])
        let p: Perimeter = perimeter || c.kind == .circle ? c.perimeter : .multiPolygon([])
        return BeaconRecord.decode(bytes, id: c.id, location: c.location, perimeter: p)
    }

    package func coveringIDs(_ query: CoverQuery) async throws -> [BeaconID] {
        coveringIDsNow(query)
    }

    /// Synchronous form of `coveringIDs` (benchmarks, callers outside async contexts).
    ///
    /// The ids are read once the lookup is done: each is a miss in a table of 40 bytes per
    /// beacon (40 MB at 1M), and their lines are requested together so the misses overlap
    /// (read one by one during the lookup, they were a third of its time).
    package func coveringIDsNow(_ query: CoverQuery) -> [BeaconID] {
        lock.read {
            var found: [Int32] = []
            visit(query) { found.append($0) }
            return slots.ids.withUnsafeBufferPointer { ids in
                for slot in found { dbeacon_prefetch(ids.baseAddress! + Int(slot)) }
                return found.map { ids[Int($0)]! }
            }
        }
    }

    /// The slots of the covering beacons, appended to `out` (cleared first): the lookup alone,
    /// without copying beacons out (benchmarks; a slot is valid until the next change).
    package func coveringSlots(_ query: CoverQuery, into out: inout [Int32]) {
        out.removeAll(keepingCapacity: true)
        lock.read { visit(query) { out.append($0) } }
    }

    /// Number of covering beacons, without copying them out (benchmarks).
    package func countCovering(_ query: CoverQuery) -> Int {
        var n = 0
        lock.read { visit(query) { _ in n += 1 } }
        return n
    }

    /// What a query admits before any geometry: lifetime, the viewer's view of it (owner,
    /// members of a private beacon, alive now), service and tags. The index's form of the
    /// visibility policy's `cover` (checked equal to it in `VisibilityPolicyTests`).
    struct Admission {
        let at: Int64, now: Int64
        let checkNow: Bool
        var viewer: Int32 = -2 // a user unknown to the index owns nothing and is in no group
        var isAdmin = false
        let viewerBit: UInt64
        var tagMask: UInt64 = 0
        var overflowQuery = false
        let tagFilter: Bool
        let tags: [String]
        var service: Int32 = 0
        /// Nothing can match (a tag or service no beacon has).
        var none = false

        /// Must hold the read lock.
        init(_ query: CoverQuery, _ engine: MemoryCoverageEngine) {
            at = query.at.millis
            now = query.visibleNow.millis
            checkNow = now != at
            switch query.viewer {
            case .admin: isAdmin = true
            case .user(let uid): viewer = engine.users[uid] ?? -2
            }
            viewerBit = MemoryCoverageEngine.memberBit(viewer)
            tags = query.tags
            tagFilter = !query.tags.isEmpty
            if tagFilter {
                for tag in query.tags {
                    if let id = engine.tagIDs[tag] {
                        if id < 64 { tagMask |= 1 << UInt64(id) } else { overflowQuery = true }
                    }
                }
                if tagMask == 0 && !overflowQuery { none = true } // no beacon has any of these tags
            }
            if let s = query.service {
                if let i = engine.services[s] { service = i } else { none = true }
            }
        }

        /// Whether the slot's beacon passes. Must hold the read lock.
        @inline(__always)
        func admits(_ h: Hot, slot: Int32, _ engine: MemoryCoverageEngine) -> Bool {
            guard h.lifeStart <= at, at < h.lifeEnd else { return false }
            if checkNow && !isAdmin && h.owner != viewer && !(h.lifeStart <= now && now < h.lifeEnd) { return false }
            if service != 0 && h.service != service { return false }
            if tagFilter && h.tagBits & tagMask == 0 {
                guard overflowQuery && h.overflowTags, let c = engine.cold[Int(slot)],
                      tags.contains(where: engine.tags(of: c).contains) else { return false }
            }
            if !isAdmin && h.isPrivate && h.owner != viewer {
                guard h.memberBits & viewerBit != 0, let c = engine.cold[Int(slot)], c.members.contains(viewer) else { return false }
            }
            return true
        }
    }

    /// The candidates whose perimeter's box meets one of `boxes`, that `query` admits (its point
    /// unused), not moving with their owner; each once, by slot. The candidates of
    /// `GET /v1/regions`, from the grid: every level's cells over the boxes.
    package func meeting(_ boxes: [BoundingBox], _ query: CoverQuery) async throws -> [PerimeterCandidate] {
        lock.read {
            let admission = Admission(query, self)
            guard !admission.none else { return [] }
            // Slots admitted on their entries, then each once (a box in several cells comes once
            // per cell): sorting beats hashing for the few dozen a search finds.
            var found: [Int32] = []
            for box in boxes {
                grid.forEachMeeting(box) { entry in
                    let slot = entry.slot
                    guard admission.admits(entry.record, slot: slot, self) else { return }
                    if entry.record.multiBox {
                        guard let c = cold[Int(slot)], c.splitBoxes.contains(where: { $0.intersects(box) }) else { return }
                    }
                    found.append(slot)
                }
            }
            found.sort()
            var candidates: [PerimeterCandidate] = []
            candidates.reserveCapacity(found.count)
            var previous: Int32 = -1
            for slot in found where slot != previous {
                previous = slot
                guard let c = cold[Int(slot)], !c.tracksOwner else { continue }
                candidates.append(PerimeterCandidate(id: c.id, boxes: c.boxes, circle: c.kind == .circle ? (c.location, c.radius) : nil))
            }
            return candidates
        }
    }

    /// Calls `body` with each matching slot once. Must hold the read lock.
    @inline(__always)
    func visit(_ query: CoverQuery, _ body: (Int32) -> Void) {
        let lon = query.point.lon, lat = query.point.lat
        let admission = Admission(query, self)
        guard !admission.none else { return }
        var multiBoxSeen: [Int32] = []
        // The rasters' words, the block addresses and the slots do not move while the read lock is held.
        let pointLatitude = Geodesy.LatitudeTrig(lat)
        let rasterBase = rasterWords.withUnsafeBufferPointer { $0.baseAddress }
        let coldBase = cold.withUnsafeBufferPointer { $0.baseAddress }
        let blockBase = rasterBlocks.withUnsafeBufferPointer { $0.baseAddress }
        grid.forEachCandidate(lon: lon, lat: lat, prepare: { entry in
            switch entry.record.test {
            case .small(let flat, let coarse):
                if PolygonRaster.classifyCoarse(coarse, box: entry.box, lon: lon, lat: lat) == PolygonRaster.unknown {
                    dbeacon_prefetch(flat)
                    dbeacon_prefetch(flat + 8)
                }
            case .large(let raster, let coarse):
                if raster >= 0 {
                    if let word = PolygonRaster.unsettledWord(coarse: coarse, rasterBase! + Int(raster) * PolygonRaster.wordCount,
                                                              box: entry.box, lon: lon, lat: lat) {
                        dbeacon_prefetch(word)
                        dbeacon_prefetch(blockBase! + Int(raster))
                    }
                } else {
                    dbeacon_prefetch(coldBase! + Int(entry.slot))
                }
            default: break
            }
        }) { entry in
            let slot = entry.slot, h = entry.record
            guard admission.admits(h, slot: slot, self) else { return }
            if h.multiBox {
                guard let c = cold[Int(slot)], c.splitBoxes.contains(where: { $0.contains(query.point) }),
                      !multiBoxSeen.contains(slot) else { return }
                multiBoxSeen.append(slot)
            }
            switch h.test {
            case .circle(let clat, let clon, let radius):
                if Geodesy.circleContains(center: Position(lon: clon, lat: clat), radiusM: radius, point: query.point,
                                          pointLatitude: pointLatitude) {
                    body(slot)
                }
            case .small(let flat, let coarse):
                switch PolygonRaster.classifyCoarse(coarse, box: entry.box, lon: lon, lat: lat) {
                case PolygonRaster.inside: body(slot)
                case PolygonRaster.outside: return
                default: if FlatPerimeter.covers(flat, lon: lon, lat: lat) { body(slot) }
                }
            case .large(let raster, let coarse):
                if raster >= 0 {
                    // Built over the entry's box (a beacon with a raster has one box).
                    switch PolygonRaster.classify(coarse: coarse, rasterBase! + Int(raster) * PolygonRaster.wordCount,
                                                  box: entry.box, lon: lon, lat: lat) {
                    case PolygonRaster.inside: body(slot); return
                    case PolygonRaster.outside: return
                    default: break
                    }
                    if let block = blockBase![Int(raster)],
                       let answer = CompactPolygon.Block(block).compactAnswer(lon: lon, lat: lat) {
                        if answer { body(slot) }
                        return
                    }
                }
                if let c = cold[Int(slot)], c.covers(lon: lon, lat: lat) { body(slot) }
            case .free:
                return
            }
        }
    }

    /// The tags of a slot (from its record: only beacons with a tag beyond the 64 with bits need this).
    func tags(of c: Cold) -> [String] {
        records.withUnsafeBytes { beacon(c, $0, perimeter: false).tags }
    }

    package func beacons(ids: [BeaconID]) async throws -> [Beacon] {
        try await beacons(ids: ids, perimeters: true)
    }

    package func beacons(ids: [BeaconID], perimeters: Bool) async throws -> [Beacon] {
        lock.read { beacons(of: slots.slots(of: ids), perimeter: perimeters) }
    }

    /// `PerimeterDistance.isWithin(limit, of: perimeter, …)` for a large polygon, decided on its
    /// compact vertices in memory (`CompactPolygon.planeDistance`) when the answer is clear of
    /// the plane's error and a step's move of the vertices: the exit cushion of a fix, without
    /// reading the polygon's exact vertices from their file. Nil for other perimeters, an unknown
    /// id, and a point too near the cushion's edge to tell.
    package func isWithin(_ limit: Double, ofPerimeterOf id: BeaconID, point: Position) -> Bool? {
        guard limit > 0, point.lon.isFinite, point.lat.isFinite else { return nil }
        let band = PerimeterDistance.planeError(limit, latitude: point.lat)
        guard band.isFinite else { return nil }
        // `isWithin`'s own thresholds: below `lower` the plane says within, from `upper` on it says not.
        let lower = limit - 2 * band, upper = limit + 2 * band
        let frame = LocalFrame(origin: point)
        return lock.read { () -> Bool? in
            guard let slot = slots[id], let compact = cold[Int(slot)]?.compact, !compact.isEmpty else { return nil }
            var undecided = false
            for polygon in compact {
                switch polygon.isNearerThan(lower, notBeyond: upper, from: frame) {
                case true?: return true
                case nil: undecided = true
                case false?: break
                }
            }
            return undecided ? nil : false
        }
    }

    /// A polygon's enclosing circle, made from its outlines around its location when it was
    /// prepared (or by `warm`, after a load), kept with its slot and in the snapshot: a phone's
    /// regions in a crowd (some twenty beacons, each a circle around its perimeter) read no
    /// perimeter. Nil for a circle, an unknown id, or a polygon `warm` has yet to reach.
    package func enclosingCircle(of id: BeaconID) -> (center: Position, radiusM: Double)? {
        lock.read { slots[id].flatMap { cold[Int($0)]?.enclosing } }
    }

    package func facts(ids: [BeaconID]) async throws -> [BeaconID: BeaconFacts] {
        lock.read {
            var found: [BeaconID: BeaconFacts] = [:]
            found.reserveCapacity(ids.count)
            forEachBeacon(of: slots.slots(of: ids)) { c, records in
                found[c.id] = BeaconRecord.decodeFacts(UnsafeRawBufferPointer(rebasing: records[c.record..<(c.record + Int(c.recordLength))]))
            }
            return found
        }
    }

    package func trackingBeacons(owner: UserID) async throws -> [Beacon] {
        lock.read {
            guard let o = users[owner], let set = tracking[o] else { return [] }
            return records.withUnsafeBytes { records in
                set.compactMap { cold[Int($0)] }.sorted { $0.id < $1.id }.map { beacon($0, records) }
            }
        }
    }
}
