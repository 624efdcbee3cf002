package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The fast path of "which beacons cover this point": every beacon in memory, indexed by a
/// hierarchical grid over its perimeter's bounding box(es).
///
/// A query looks up one grid cell per occupied level, then filters the candidates with
/// plain-old-data checks (box, lifetime, tag bits, service, visibility) before the exact
/// test: geodesic distance for circles (the same `Geodesy.circleContains` the SQL path
/// registers as `dbeacon_circle_contains`), GEOS's point-location rules on one block of
/// coordinates for small polygons (`FlatPerimeter`), and an edge-indexed polygon
/// (`IndexedPolygon`, the same rules) for large ones, so a 5,000-vertex region costs a few
/// dozen edge tests rather than thousands.
///
/// Readers run in parallel under a read lock; a change (create, update, delete, move) is
/// prepared outside the lock and swapped in under the write lock, synchronously from the
/// store's commit hook, so a write is visible to queries as soon as the writer returns.
package final class MemoryCoverageEngine: CoverageEngine, @unchecked Sendable {
    /// Polygons with more vertices than this use `IndexedPolygon` instead of `FlatPerimeter`.
    package static let largePolygonThreshold = 256

    /// The fields a query filters on and tests with, packed without references (the scan over
    /// a cell touches no reference counts). A copy sits in each of the slot's grid entries, so
    /// a query reads them from the cell's contiguous list rather than from a record elsewhere
    /// in memory per candidate; the exact box is not needed there: circles are decided by
    /// their distance, polygons by their edges (a raster is laid over the entry's own
    /// rounded-out box, which the query has at hand).
    struct Hot {
        /// How the point is tested (its payload is all the test reads besides the point).
        var test: Test = .free
        var isPrivate = false
        var multiBox = false
        var overflowTags = false
        var owner: Int32 = -1
        var service: Int32 = 0
        var lifeStart = Int64.min, lifeEnd = Int64.max
        var tagBits: UInt64 = 0
        /// For a private beacon, bit `u % 64` of each member's user index `u`: a viewer whose bit
        /// is clear is no member, decided without reaching the slot's `Cold` (two cache misses).
        var memberBits: UInt64 = 0
    }

    /// A slot's exact test and what it needs, in the grid entry itself.
    enum Test {
        case free
        /// Geodesic distance from the centre.
        case circle(lat: Double, lon: Double, radius: Double)
        /// `FlatPerimeter.covers` on the block (`FlatPerimeter.base`, owned by the slot's `Cold`).
        case small(UnsafePointer<Double>)
        /// The raster's summary and number in `rasterWords` (or -1: none), then the edge index
        /// in the slot's `Cold`.
        case indexed(raster: Int32, coarse: (UInt64, UInt64))
        /// Edge by edge on the beacon's perimeter until `warm` builds the index.
        case pending

        var kind: Kind {
            switch self {
            case .free: .free
            case .circle: .circle
            case .small: .small
            case .indexed: .indexed
            case .pending: .pending
            }
        }
    }

    /// The bit of user index `u` in `Hot.memberBits` (0 for a user unknown to the index).
    @inline(__always)
    static func memberBit(_ u: Int32) -> UInt64 { u < 0 ? 0 : 1 << UInt64(u & 63) }

    /// `small`: a polygon tested on its `FlatPerimeter`; `indexed`: a large one with an edge
    /// index; `pending`: a large polygon whose index is not built yet (a fast start-up loads
    /// without building them; `warm` builds them in the background): tested edge by edge meanwhile.
    enum Kind: UInt8 { case free, circle, small, indexed, pending }

    /// Everything else about a slot (a class: reading it from a query copies one reference).
    final class Cold {
        let beacon: Beacon
        let flat: FlatPerimeter?
        let indexed: [IndexedPolygon]
        let members: Set<Int32>
        /// The boxes of a perimeter indexed under several (across the antimeridian); empty for
        /// one box (`MemoryCoverageEngine.boxes(of:)` gives them again on removal).
        let splitBoxes: [BoundingBox]
        let kind: Kind
        /// Number of the raster in `rasterWords`, or -1.
        let raster: Int32

        init(beacon: Beacon, flat: FlatPerimeter?, indexed: [IndexedPolygon], members: Set<Int32>, boxes: [BoundingBox],
             kind: Kind, raster: Int32) {
            self.beacon = beacon
            self.flat = flat
            self.indexed = indexed
            self.members = members
            splitBoxes = boxes.count > 1 ? boxes : []
            self.kind = kind
            self.raster = raster
        }

        /// The boxes the beacon is indexed under.
        var boxes: [BoundingBox] { splitBoxes.isEmpty ? MemoryCoverageEngine.boxes(of: beacon) : splitBoxes }
    }

    private let lock = ReadWriteLock()
    /// The words of the edge-indexed polygons' rasters, `PolygonRaster.wordCount` each (reused through `freeRasters`).
    private var rasterWords: [UInt64] = []
    private var freeRasters: [Int32] = []
    private var cold: [Cold?] = []
    /// The beacon id of each slot (dense, so an id is one read away from the slot).
    private var ids: [BeaconID?] = []
    private var freeSlots: [Int32] = []
    private var slots: [BeaconID: Int32] = [:]
    private var grid = HierarchicalGrid<Hot>()
    private var users: [UserID: Int32] = [:]
    private var tagIDs: [String: Int] = [:]
    private var services: [String: Int32] = [:]
    private var tracking: [Int32: Set<Int32>] = [:]
    /// Ids changed through `apply` while `load` runs: the loader must not overwrite them.
    private var touchedDuringLoad: Set<BeaconID>?
    private var loadsInProgress = 0

    package init() {}

    package var name: String { "memory" }

    /// Number of beacons indexed.
    package var count: Int { lock.read { slots.count } }

    // MARK: Loading and changes

    /// A load: beacons, seconds in all, and seconds spent installing slots in the grid under
    /// the write lock (reading and preparing overlap it).
    package struct LoadReport: Sendable {
        package var beacons = 0
        package var seconds = 0.0
        package var installSeconds = 0.0
    }

    /// Bulk-loads every stored beacon. Register `apply` with the store before calling this:
    /// changes committed while loading win over the loader's (older) copy.
    ///
    /// With `prepare: false` large polygons are loaded without their edge index and answered
    /// by an unindexed edge test (the same rules) until `warm()` has built it: the server
    /// starts answering in about half the time and builds them in the background.
    @discardableResult
    package func load(from store: any BeaconStore, batchSize: Int = 20_000, prepare: Bool = true) async throws -> LoadReport {
        let started = ContinuousClock.now
        let report = ReportBox()
        // The grid's entries are staged and put in their cells when the load ends (nothing
        // queries the engine before): each cell's list is built once, at its size.
        lock.write { grid.beginStaging() }
        do {
            _ = try await loadAll(from: store, batchSize: batchSize, prepare: prepare, report: report)
        } catch {
            lock.write { grid.endStaging() }
            throw error
        }
        let t = ContinuousClock.now
        lock.write { grid.endStaging() }
        report.value.installSeconds += Self.seconds(ContinuousClock.now - t)
        report.value.seconds = Self.seconds(ContinuousClock.now - started)
        report.value.beacons = count
        return report.value
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// Brings the index back in line with the store after changes may have been missed (a
    /// PostgreSQL listener that reconnected): reloads every beacon and drops the ones that no
    /// longer exist, while queries go on being answered. Changes applied meanwhile win.
    package func resync(from store: any BeaconStore, batchSize: Int = 20_000) async throws {
        let before = lock.read { Set(slots.keys) }
        _ = try await loadAll(from: store, batchSize: batchSize) { [self] seen, touched in
            for id in before where !seen.contains(id) && !touched.contains(id) {
                if let slot = slots[id] { uninstall(slot) }
            }
        }
    }

    /// Loads everything; `finish` runs under the write lock with the ids loaded and the ids
    /// changed through `apply` meanwhile, before loading mode ends.
    private func loadAll(from store: any BeaconStore, batchSize: Int, prepare: Bool = true, report: ReportBox? = nil,
                         finish: ((Set<BeaconID>, Set<BeaconID>) -> Void)? = nil) async throws -> Set<BeaconID> {
        let loading = UncheckedSendable(LoadProgress())
        let trackSeen = finish != nil
        let expected = try await store.beaconCount()
        lock.write {
            beginLoad()
            // One allocation for the tables instead of repeated growth (1M beacons: ~20 rehashes).
            slots.reserveCapacity(expected)
            cold.reserveCapacity(expected)
            ids.reserveCapacity(expected)
        }
        // Batches are prepared and installed on a queue of their own while the store reads the
        // next ones (a bounded number in flight), so reading overlaps indexing; with more than
        // one core, two readers read alternate beacons in parallel.
        let readers = ProcessInfo.processInfo.activeProcessorCount > 1 ? 2 : 1
        let installer = DispatchQueue(label: "dbeacon.index.load")
        let inFlight = DispatchSemaphore(value: readers + 1)
        let drained: @Sendable () async -> Void = {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in installer.async { done.resume() } }
        }
        let enqueue: @Sendable ([Beacon]) -> Void = { [self] batch in
            inFlight.wait()
            installer.async { [self] in
                defer { inFlight.signal() }
                let prepared = Self.prepareConcurrently(batch, pending: !prepare)
                let t1 = ContinuousClock.now
                lock.write {
                    for (beacon, prep) in zip(batch, prepared) {
                        if trackSeen { loading.value.seen.insert(beacon.id) } // only a resync needs them
                        if !(touchedDuringLoad?.contains(beacon.id) ?? false) { install(beacon, prep) }
                    }
                }
                report?.value.installSeconds += Self.seconds(ContinuousClock.now - t1)
            }
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for shard in 0..<readers {
                    group.addTask { try await store.forEachBeacon(batchSize: batchSize, shard: (shard, readers), enqueue) }
                }
                try await group.waitForAll()
            }
        } catch {
            await drained()
            lock.write { endLoad() }
            throw error
        }
        await drained()
        return lock.write {
            finish?(loading.value.seen, touchedDuringLoad ?? [])
            endLoad()
            return loading.value.seen
        }
    }

    /// Loads may overlap (a resync during start-up): changes are tracked until the last ends.
    /// Must hold the write lock.
    private func beginLoad() {
        loadsInProgress += 1
        if touchedDuringLoad == nil { touchedDuringLoad = [] }
    }

    private func endLoad() {
        loadsInProgress -= 1
        if loadsInProgress == 0 { touchedDuringLoad = nil }
    }

    /// Ids seen by a load (written only under the write lock).
    final class LoadProgress { var seen = Set<BeaconID>() }

    /// A load's timings (written only by the loading task).
    final class ReportBox: @unchecked Sendable { var value = LoadReport() }

    /// Applies one committed change (the store's change observer calls this).
    package func apply(_ change: BeaconChange) {
        switch change {
        case .upsert(let beacon):
            let prep = Self.prepare(beacon)
            lock.write {
                touchedDuringLoad?.insert(beacon.id)
                install(beacon, prep)
            }
        case .delete(let id):
            lock.write {
                touchedDuringLoad?.insert(id)
                if let slot = slots[id] { uninstall(slot) }
            }
        case .move(let id, let position):
            // A move keeps the perimeter's shape: circles move with the location; a polygon of a
            // moving beacon stays where it is (the model moves circles only). So the polygon's
            // test is reused (only the boxes are recomputed), and the read and the swap
            // happen under one write lock (no newer version can slip between).
            lock.write {
                touchedDuringLoad?.insert(id)
                guard let slot = slots[id], let c = cold[Int(slot)] else { return }
                var beacon = c.beacon
                beacon.location = position
                install(beacon, Prepared(boxes: Self.boxes(of: beacon), flat: c.flat, indexed: c.indexed,
                                         raster: c.raster >= 0 ? PolygonRaster(words: rasterWords[rasterRange(c.raster)]) : nil, pending: c.kind == .pending))
            }
        }
    }

    /// What an exact test needs, built outside the lock (an edge index can take milliseconds).
    struct Prepared: @unchecked Sendable {
        /// The boxes the perimeter is indexed under (`boxes(of:)`).
        var boxes: [BoundingBox]
        var flat: FlatPerimeter? = nil
        var indexed: [IndexedPolygon] = []
        var raster: PolygonRaster? = nil
        /// A polygon not prepared yet (`Kind.pending`).
        var pending = false
        /// The grid cells of `boxes` (computed with the rest, outside the lock).
        var cells: [(level: Int, keys: [UInt64])] = []

        init(boxes: [BoundingBox], flat: FlatPerimeter? = nil, indexed: [IndexedPolygon] = [],
             raster: PolygonRaster? = nil, pending: Bool = false) {
            self.boxes = boxes
            self.flat = flat
            self.indexed = indexed
            self.raster = raster
            self.pending = pending
            cells = boxes.map(HierarchicalGrid<Hot>.cells(for:))
        }
    }

    /// Without the edge index of a large polygon: it is built later (`warm`).
    static func pending(_ beacon: Beacon) -> Prepared {
        if case .circle = beacon.perimeter { return Prepared(boxes: boxes(of: beacon)) }
        if beacon.perimeter.vertexCount > largePolygonThreshold { return Prepared(boxes: boxes(of: beacon), pending: true) }
        return prepare(beacon)
    }

    static func prepare(_ beacon: Beacon) -> Prepared {
        let boxes = Self.boxes(of: beacon)
        switch beacon.perimeter {
        case .circle:
            return Prepared(boxes: boxes)
        case .polygon, .multiPolygon:
            let polygons = beacon.perimeter.polygons
            if beacon.perimeter.vertexCount > largePolygonThreshold {
                let indexed = polygons.map(IndexedPolygon.init)
                // One raster over the whole box; perimeters split into several boxes (across the
                // antimeridian) go straight to the edge test.
                let raster = boxes.count == 1 ? PolygonRaster(polygons: polygons, box: HierarchicalGrid<Hot>.roundedOut(boxes[0])) { x, y in
                    indexed.contains { $0.covers(lon: x, lat: y) }
                } : nil
                return Prepared(boxes: boxes, indexed: indexed, raster: raster)
            }
            return Prepared(boxes: boxes, flat: FlatPerimeter(polygons))
        }
    }

    static func prepareConcurrently(_ batch: [Beacon], pending: Bool = false) -> [Prepared] {
        let results = UnsafeMutableBufferPointer<Prepared>.allocate(capacity: batch.count)
        results.initialize(repeating: Prepared(boxes: []))
        defer { results.deallocate() }
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let chunk = (batch.count + workers - 1) / workers
        // Each worker writes its own disjoint range of `results`.
        let output = UncheckedSendable(results.baseAddress!)
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            let lo = w * chunk, hi = min(batch.count, lo + chunk)
            guard lo < hi else { return }
            for i in lo..<hi { (output.value + i).pointee = pending ? Self.pending(batch[i]) : prepare(batch[i]) }
        }
        return Array(results)
    }

    /// Number of large polygons still waiting for their edge index (`load(prepare: false)`).
    package var pendingCount: Int { lock.read { pending } }
    /// Slots of kind `.pending` (kept by `install`/`uninstall`).
    private var pending = 0

    /// Builds the edge indexes of the large polygons loaded without them, in batches, outside the
    /// lock; each is swapped in only if its slot still holds the same version (a change
    /// applied meanwhile was prepared by `apply` already). Queries go on meanwhile.
    /// Returns the number prepared.
    @discardableResult
    package func warm(batchSize: Int = 2_000) async -> Int {
        var done = 0
        var next = 0
        var donePass = 0
        while true {
            let batch: [(Int32, Cold)] = lock.read {
                var out: [(Int32, Cold)] = []
                while next < cold.count && out.count < batchSize {
                    if let c = cold[next], c.kind == .pending { out.append((Int32(next), c)) }
                    next += 1
                }
                return out
            }
            if batch.isEmpty {
                // A move of a pending polygon may have reinstalled it in a slot already passed:
                // scan again while passes make progress.
                if donePass == 0 || pendingCount == 0 { return done }
                next = 0
                donePass = 0
                continue
            }
            let prepared = Self.prepareConcurrently(batch.map(\.1.beacon))
            lock.write {
                for ((slot, c), prep) in zip(batch, prepared) where cold[Int(slot)] === c {
                    install(c.beacon, prep)
                    done += 1
                    donePass += 1
                }
            }
            await Task.yield()
        }
    }

    /// Must hold the write lock.
    private func install(_ beacon: Beacon, _ prep: Prepared) {
        if let old = slots[beacon.id] { uninstall(old) }
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = Int32(cold.count)
            cold.append(nil)
            ids.append(nil)
        }
        var h = Hot()
        let boxes = prep.boxes
        h.multiBox = boxes.count > 1
        h.lifeStart = beacon.lifetime?.start?.millis ?? .min
        h.lifeEnd = beacon.lifetime?.end?.millis ?? .max
        h.owner = userIndex(beacon.owner)
        h.service = beacon.service.map(serviceIndex) ?? 0
        h.isPrivate = beacon.members != nil
        let members = Set((beacon.members ?? []).map(userIndex))
        for m in members { h.memberBits |= Self.memberBit(m) }
        for tag in beacon.tags {
            let id = tagIndex(tag)
            if id < 64 { h.tagBits |= 1 << UInt64(id) } else { h.overflowTags = true }
        }
        switch beacon.perimeter {
        case .circle(let radius):
            h.test = .circle(lat: beacon.location.lat, lon: beacon.location.lon, radius: radius)
        case .polygon, .multiPolygon:
            if prep.pending {
                h.test = .pending
            } else if !prep.indexed.isEmpty {
                var raster: Int32 = -1
                var coarse: (UInt64, UInt64) = (0, 0)
                if let r = prep.raster {
                    coarse = r.coarse
                    if let free = freeRasters.popLast() {
                        rasterWords.replaceSubrange(rasterRange(free), with: r.words)
                        raster = free
                    } else {
                        raster = Int32(rasterWords.count / PolygonRaster.wordCount)
                        rasterWords.append(contentsOf: r.words)
                    }
                }
                h.test = .indexed(raster: raster, coarse: coarse)
            } else if let flat = prep.flat {
                h.test = .small(UnsafePointer(flat.base))
            }
        }
        let kind = h.test.kind
        var raster: Int32 = -1
        if case .indexed(let r, _) = h.test { raster = r }
        for (box, c) in zip(boxes, prep.cells) { grid.insert(slot, box: box, level: c.level, keys: c.keys, record: h) }
        if kind == .pending { pending += 1 }
        cold[Int(slot)] = Cold(beacon: beacon, flat: prep.flat, indexed: prep.indexed, members: members, boxes: boxes,
                               kind: kind, raster: raster)
        ids[Int(slot)] = beacon.id
        slots[beacon.id] = slot
        if beacon.tracksOwner { tracking[h.owner, default: []].insert(slot) }
    }

    /// Must hold the write lock.
    private func uninstall(_ slot: Int32) {
        guard let c = cold[Int(slot)] else { return }
        for box in c.boxes {
            let cell = HierarchicalGrid<Hot>.cells(for: box)
            grid.remove(slot, level: cell.level, keys: cell.keys)
        }
        if c.beacon.tracksOwner, let owner = users[c.beacon.owner] {
            tracking[owner]?.remove(slot)
            if tracking[owner]?.isEmpty == true { tracking[owner] = nil }
        }
        slots[c.beacon.id] = nil
        if c.raster >= 0 { freeRasters.append(c.raster) }
        if c.kind == .pending { pending -= 1 }
        cold[Int(slot)] = nil
        ids[Int(slot)] = nil
        freeSlots.append(slot)
    }

    /// The words of raster `r` in `rasterWords`.
    private func rasterRange(_ r: Int32) -> Range<Int> {
        Int(r) * PolygonRaster.wordCount ..< Int(r + 1) * PolygonRaster.wordCount
    }

    private func userIndex(_ user: UserID) -> Int32 {
        if let i = users[user] { return i }
        let i = Int32(users.count)
        users[user] = i
        return i
    }

    private func serviceIndex(_ service: String) -> Int32 {
        if let i = services[service] { return i }
        let i = Int32(services.count + 1)
        services[service] = i
        return i
    }

    private func tagIndex(_ tag: String) -> Int {
        if let i = tagIDs[tag] { return i }
        let i = tagIDs.count
        tagIDs[tag] = i
        return i
    }

    /// The boxes a perimeter is indexed under: circles by their geodesic extent (two boxes
    /// across the antimeridian); polygons by their extent, or one box per polygon when a
    /// multipolygon is split at the antimeridian.
    static func boxes(of beacon: Beacon) -> [BoundingBox] {
        switch beacon.perimeter {
        case .circle(let r):
            return Geodesy.boundingBoxes(center: beacon.location, radiusM: r)
        case .polygon, .multiPolygon:
            let perPolygon = beacon.perimeter.polygons.map { BoundingBox(of: $0.exterior) }
            let all = perPolygon.dropFirst().reduce(perPolygon[0]) { $0.union($1) }
            return all.east - all.west > 180 ? perPolygon : [all]
        }
    }

    // MARK: Queries

    package func covering(_ query: CoverQuery) async throws -> [Beacon] {
        coveringNow(query)
    }

    /// Synchronous form of `covering` (benchmarks and callers outside async contexts).
    package func coveringNow(_ query: CoverQuery) -> [Beacon] {
        var out: [Beacon] = []
        lock.read {
            visit(query) { slot in out.append(cold[Int(slot)]!.beacon) }
        }
        return out
    }

    package func coveringIDs(_ query: CoverQuery) async throws -> [BeaconID] {
        var out: [BeaconID] = []
        lock.read {
            visit(query) { slot in out.append(ids[Int(slot)]!) }
        }
        return out
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

    /// Calls `body` with each matching slot once. Must hold the read lock.
    @inline(__always)
    private func visit(_ query: CoverQuery, _ body: (Int32) -> Void) {
        let lon = query.point.lon, lat = query.point.lat
        let at = query.at.millis
        let now = query.visibleNow.millis
        let checkNow = now != at
        var viewer: Int32 = -2 // a user unknown to the index owns nothing and is in no group
        var isAdmin = false
        switch query.viewer {
        case .admin: isAdmin = true
        case .user(let uid): viewer = users[uid] ?? -2
        }
        let viewerBit = Self.memberBit(viewer)
        var tagMask: UInt64 = 0
        var overflowQuery = false
        var tagFilter = !query.tags.isEmpty
        if tagFilter {
            for tag in query.tags {
                if let id = tagIDs[tag] {
                    if id < 64 { tagMask |= 1 << UInt64(id) } else { overflowQuery = true }
                }
            }
            if tagMask == 0 && !overflowQuery { return } // no beacon has any of these tags
            tagFilter = true
        }
        var service: Int32 = 0
        if let s = query.service {
            guard let i = services[s] else { return }
            service = i
        }
        var multiBoxSeen: [Int32] = []
        // The rasters' words do not move while the read lock is held.
        let rasterBase = rasterWords.withUnsafeBufferPointer { $0.baseAddress }
        grid.forEachCandidate(lon: lon, lat: lat) { entry in
            let slot = entry.slot, h = entry.record
            guard h.lifeStart <= at, at < h.lifeEnd else { return }
            if checkNow && !isAdmin && h.owner != viewer && !(h.lifeStart <= now && now < h.lifeEnd) { return }
            if service != 0 && h.service != service { return }
            if tagFilter && h.tagBits & tagMask == 0 {
                guard overflowQuery && h.overflowTags,
                      let c = cold[Int(slot)], query.tags.contains(where: c.beacon.tags.contains) else { return }
            }
            if !isAdmin && h.isPrivate && h.owner != viewer {
                guard h.memberBits & viewerBit != 0, let c = cold[Int(slot)], c.members.contains(viewer) else { return }
            }
            if h.multiBox {
                guard let c = cold[Int(slot)], c.splitBoxes.contains(where: { $0.contains(query.point) }),
                      !multiBoxSeen.contains(slot) else { return }
                multiBoxSeen.append(slot)
            }
            switch h.test {
            case .circle(let clat, let clon, let radius):
                if Geodesy.circleContains(center: Position(lon: clon, lat: clat), radiusM: radius, point: query.point) {
                    body(slot)
                }
            case .small(let flat):
                if FlatPerimeter.covers(flat, lon: lon, lat: lat) { body(slot) }
            case .indexed(let raster, let coarse):
                if raster >= 0 {
                    // Built over the entry's box (a beacon with a raster has one box).
                    switch PolygonRaster.classify(coarse: coarse, rasterBase! + Int(raster) * PolygonRaster.wordCount,
                                                  box: entry.box, lon: lon, lat: lat) {
                    case PolygonRaster.inside: body(slot); return
                    case PolygonRaster.outside: return
                    default: break
                    }
                }
                if let c = cold[Int(slot)], c.indexed.contains(where: { $0.covers(lon: lon, lat: lat) }) { body(slot) }
            case .pending:
                if let c = cold[Int(slot)], c.beacon.perimeter.polygons.contains(where: { IndexedPolygon.covers($0, lon: lon, lat: lat) }) {
                    body(slot)
                }
            case .free:
                return
            }
        }
    }

    package func beacons(ids: [BeaconID]) async throws -> [Beacon] {
        lock.read { ids.compactMap { slots[$0].flatMap { cold[Int($0)]?.beacon } } }
    }

    package func trackingBeacons(owner: UserID) async throws -> [Beacon] {
        lock.read {
            guard let o = users[owner], let set = tracking[o] else { return [] }
            return set.compactMap { cold[Int($0)]?.beacon }.sorted { $0.id < $1.id }
        }
    }
}
