import CPrefetch
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

/// The fast path of "which beacons cover this point": an index of every beacon's perimeter,
/// visibility and lifetime, by a hierarchical grid over its perimeter's bounding box(es).
///
/// A query looks up one grid cell per occupied level, then filters the candidates with
/// plain-old-data checks (box, lifetime, tag bits, service, visibility) before the exact
/// test: geodesic distance for circles (the same `Geodesy.circleContains` the SQL path
/// registers as `dbeacon_circle_contains`), GEOS's point-location rules on one block of
/// coordinates for small polygons (`FlatPerimeter`), and a compact edge-indexed form for large
/// ones (`CompactPolygon`: 16-bit coordinates in memory, the exact ones in a mapped
/// `CoordinateFile`), behind a raster that settles most points (`PolygonRaster`).
///
/// The index keeps no `Beacon` values: each beacon's other fields are a compact byte record
/// (`BeaconRecord`) in one arena, and an answer (`covering`, `beacons(ids:)`) rebuilds the
/// beacons it returns from their records and their perimeters' exact coordinates.
///
/// Readers run in parallel under a read lock; a change (create, update, delete, move) is
/// prepared outside the lock and swapped in under the write lock, synchronously from the
/// store's commit hook, so a write is visible to queries as soon as the writer returns.
package final class MemoryCoverageEngine: CoverageEngine, @unchecked Sendable {
    /// Polygons with more vertices than this use `CompactPolygon` instead of `FlatPerimeter`.
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
        /// `FlatPerimeter.covers` on the block (`FlatPerimeter.base`, owned by the slot's `Cold`)
        /// for points its 8×8 summary over the entry's box (`PolygonRaster.summary`) leaves open.
        case small(UnsafePointer<Double>, coarse: (UInt64, UInt64))
        /// The raster's summary and number in `rasterWords` (or -1: none yet, or several boxes),
        /// then the polygon's compact block (`rasterBlocks`), then the exact coordinates or
        /// several polygons through the slot's `Cold`.
        case large(raster: Int32, coarse: (UInt64, UInt64))

        var kind: Kind {
            switch self {
            case .free: .free
            case .circle: .circle
            case .small: .small
            case .large: .large
            }
        }
    }

    /// The bit of user index `u` in `Hot.memberBits` (0 for a user unknown to the index).
    @inline(__always)
    static func memberBit(_ u: Int32) -> UInt64 { u < 0 ? 0 : 1 << UInt64(u & 63) }

    /// `small`: a polygon tested on its `FlatPerimeter`; `large`: compact polygons with an edge index.
    enum Kind: UInt8 { case free, circle, small, large }

    /// Everything else about a slot (a class: reading it from a query copies one reference). A
    /// change installs a new one, so a task can tell whether a slot changed since it looked
    /// (`===`). Immutable but for `record`, which a compaction of the arena moves under the
    /// write lock.
    final class Cold: @unchecked Sendable {
        let id: BeaconID
        let location: Position
        /// The circle's radius (metres), or 0.
        let radius: Double
        /// Offset of the beacon's record in `records`.
        var record: Int
        let recordLength: Int32
        /// Number of the raster in `rasterWords`, or -1.
        let raster: Int32
        let kind: Kind
        let tracksOwner: Bool
        /// The perimeter is a MultiPolygon (a polygon perimeter is rebuilt as a Polygon).
        let isMulti: Bool
        let flat: FlatPerimeter?
        let compact: [CompactPolygon]
        /// User indexes of the members of a private beacon, sorted.
        let members: [Int32]
        /// The box the perimeter is indexed under (the first when there are several).
        let box: BoundingBox
        /// All boxes of a perimeter indexed under several (across the antimeridian); empty for one.
        let splitBoxes: [BoundingBox]
        /// A small polygon loaded without its 8×8 summary (`load(prepare: false)`): answered by
        /// its exact test alone until `warm` has made it.
        let summaryPending: Bool

        init(id: BeaconID, location: Position, radius: Double, record: Int, recordLength: Int, raster: Int32, kind: Kind,
             tracksOwner: Bool, isMulti: Bool, flat: FlatPerimeter?, compact: [CompactPolygon], members: [Int32],
             boxes: [BoundingBox], summaryPending: Bool = false) {
            self.id = id
            self.location = location
            self.radius = radius
            self.record = record
            self.recordLength = Int32(recordLength)
            self.raster = raster
            self.kind = kind
            self.tracksOwner = tracksOwner
            self.isMulti = isMulti
            self.flat = flat
            self.compact = compact
            self.members = members
            box = boxes.first ?? BoundingBox(west: 0, south: 0, east: 0, north: 0)
            splitBoxes = boxes.count > 1 ? boxes : []
            self.summaryPending = summaryPending
        }

        /// The same slot with other values (a move, a raster built).
        func with(location: Position? = nil, raster: Int32? = nil, boxes: [BoundingBox]? = nil,
                  compact: [CompactPolygon]? = nil, summaryPending: Bool? = nil) -> Cold {
            Cold(id: id, location: location ?? self.location, radius: radius, record: record, recordLength: Int(recordLength),
                 raster: raster ?? self.raster, kind: kind, tracksOwner: tracksOwner, isMulti: isMulti, flat: flat,
                 compact: compact ?? self.compact, members: members, boxes: boxes ?? self.boxes,
                 summaryPending: summaryPending ?? self.summaryPending)
        }

        /// The boxes the beacon is indexed under.
        var boxes: [BoundingBox] { splitBoxes.isEmpty ? [box] : splitBoxes }

        /// A large polygon with one box and no raster yet (`warm` builds it).
        var needsRaster: Bool { kind == .large && raster < 0 && splitBoxes.isEmpty }

        /// A polygon still to be prepared by `warm`: a large one's raster, strips or rings' GeoJSON,
        /// a small one's summary.
        var needsWarming: Bool {
            needsRaster || summaryPending || (kind == .large && compact.contains(where: \.needsFinishing))
        }

        func covers(lon: Double, lat: Double) -> Bool {
            compact.contains { $0.covers(lon: lon, lat: lat) }
        }

        /// The perimeter again (the exact coordinates of large polygons read from their file).
        var perimeter: Perimeter {
            let polygons: [Polygon]
            switch kind {
            case .circle: return .circle(radiusM: radius)
            case .small: polygons = flat?.polygons ?? []
            case .large: return CompactPerimeter(polygons: compact, isMulti: isMulti).perimeter
            case .free: polygons = []
            }
            return isMulti || polygons.count != 1 ? .multiPolygon(polygons) : .polygon(polygons[0])
        }
    }

    let lock = ReadWriteLock()
    /// Where `load` and `resync` read beacons.
    package let store: any BeaconStore & BeaconChangeFeed
    /// The exact coordinates of large polygons (nil: kept on the heap).
    var coordinates: CoordinateFile?
    /// Every slot's `BeaconRecord`, one after the other; `recordGarbage` bytes of them belong
    /// to no slot any more (`compactRecords` drops them).
    var records: [UInt8] = []
    var recordGarbage = 0
    /// The words of the large polygons' rasters, `PolygonRaster.wordCount` each (reused through `freeRasters`).
    var rasterWords: [UInt64] = []
    var freeRasters: [Int32] = []
    /// Per raster number, the compact block of its beacon's polygon (nil: several polygons, or
    /// a free number): a point the raster leaves open is tested on the block in place, without
    /// reaching the slot's `Cold` and its polygon object (three dependent misses). Kept by
    /// `place` and `uninstall`; the block lives as long as the slot's `Cold`.
    var rasterBlocks: [UnsafeRawPointer?] = []
    var cold: [Cold?] = []
    /// Each slot's beacon id (nil: free), beside `cold`: id answers (fences) read one array
    /// element per match instead of the slot's object.
    var slotIDs: [BeaconID?] = []
    var freeSlots: [Int32] = []
    var slots: [BeaconID: Int32] = [:]
    var grid = HierarchicalGrid<Hot>()
    var users: [UserID: Int32] = [:]
    var tagIDs: [String: Int] = [:]
    var services: [String: Int32] = [:]
    var tracking: [Int32: Set<Int32>] = [:]
    /// Ids changed through `apply` while `load` runs: the loader must not overwrite them.
    var touchedDuringLoad: Set<BeaconID>?
    var loadsInProgress = 0

    /// An engine over `store` (which `load` reads); large polygons' exact coordinates go to
    /// `coordinates` (an unnamed file in the temporary folder when nil, or the heap if none can
    /// be made).
    package init(store: any BeaconStore & BeaconChangeFeed, coordinates: CoordinateFile? = nil) {
        self.store = store
        self.coordinates = coordinates
    }

    let coordinatesLock = NSLock()
    private var coordinatesTried = false
    private var hintedText = true

    /// Whether large polygons' GeoJSON is kept as hints (`CoordinateFile.hintedText`) in the
    /// coordinate files this engine writes to from now on.
    package var hintedPerimeterText: Bool {
        get { coordinatesLock.withLock { hintedText } }
        set {
            coordinatesLock.withLock {
                hintedText = newValue
                coordinates?.hintedText = newValue
            }
        }
    }

    /// The file large polygons' exact coordinates go to: the one given, else an unnamed one made
    /// on first use (nil if none can be made: they stay on the heap).
    var coordinateFile: CoordinateFile? {
        coordinatesLock.withLock {
            if coordinates == nil && !coordinatesTried {
                coordinatesTried = true
                coordinates = try? CoordinateFile(creating: nil)
                coordinates?.hintedText = hintedText
            }
            return coordinates
        }
    }

    /// Sends large polygons' exact coordinates to `file` from now on (before a load: a
    /// snapshot's, or a new one next to it).
    package func useCoordinates(_ file: CoordinateFile) {
        coordinatesLock.withLock {
            file.hintedText = hintedText
            coordinates = file
        }
    }

    package var name: String { "memory" }

    /// Number of beacons indexed.
    package var count: Int { lock.read { slots.count } }

    /// The 8×8 summaries of the small polygons indexed under one box, by beacon (`unsettled`
    /// while `warm` has yet to make one): what lookups test before a polygon's edges.
    package var smallPolygonSummaries: [BeaconID: (UInt64, UInt64)] {
        lock.read {
            var out: [BeaconID: (UInt64, UInt64)] = [:]
            for case let c? in cold where c.kind == .small && c.splitBoxes.isEmpty {
                guard let slot = slots[c.id], case .small(_, let coarse)? = grid.peekRecord(of: slot, box: c.box)?.test else { continue }
                out[c.id] = coarse
            }
            return out
        }
    }

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
    /// With `prepare: false` large polygons are loaded without their raster (answered by their
    /// compact edge test, the same answers) and small ones without their summary (answered by
    /// their exact test) until `warm()` has built them: the server starts answering sooner and
    /// builds them in the background.
    @discardableResult
    package func load(batchSize: Int = 20_000, prepare: Bool = true) async throws -> LoadReport {
        let started = ContinuousClock.now
        let report = ReportBox()
        // The grid's entries are staged and put in their cells when the load ends (nothing
        // queries the engine before): each cell's list is built once, at its size.
        lock.write { grid.beginStaging() }
        do {
            _ = try await loadAll(batchSize: batchSize, prepare: prepare, report: report)
        } catch {
            lock.write { grid.endStaging() }
            throw error
        }
        let t = ContinuousClock.now
        // The last batches' temporaries go back before the grid's lists are built beside its
        // staged entries (the load's largest moment).
        releaseFreedMemory()
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
    package func resync(batchSize: Int = 20_000) async throws {
        let before = lock.read { Set(slots.keys) }
        _ = try await loadAll(batchSize: batchSize) { [self] seen, touched in
            for id in before where !seen.contains(id) && !touched.contains(id) {
                if let slot = slots[id] { uninstall(slot) }
            }
        }
    }

    /// Loads everything; `finish` runs under the write lock with the ids loaded and the ids
    /// changed through `apply` meanwhile, before loading mode ends.
    private func loadAll(batchSize: Int, prepare: Bool = true, report: ReportBox? = nil,
                         finish: ((Set<BeaconID>, Set<BeaconID>) -> Void)? = nil) async throws -> Set<BeaconID> {
        let loading = UncheckedSendable(LoadProgress())
        let trackSeen = finish != nil
        let store = self.store
        let expected = try await store.beaconCount()
        lock.write {
            beginLoad()
            // One allocation for the tables instead of repeated growth (1M beacons: ~20 rehashes).
            slots.reserveCapacity(expected)
            cold.reserveCapacity(expected)
            slotIDs.reserveCapacity(expected)
        }
        // Batches are prepared and installed on a queue of their own while the store reads the
        // next ones (a bounded number in flight), so reading overlaps indexing; with more than
        // one core, two readers read alternate beacons in parallel.
        let readers = ProcessInfo.processInfo.activeProcessorCount > 1 ? 2 : 1
        let installer = DispatchQueue(label: "dbeacon.index.load")
        let inFlight = AsyncSemaphore(permits: readers + 1)
        let drained: @Sendable () async -> Void = {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in installer.async { done.resume() } }
        }
        let enqueue: @Sendable ([Beacon]) async -> Void = { [self] batch in
            // Suspends (never blocks an event loop's thread) until the installer has room.
            await inFlight.wait()
            installer.async { [self] in
                defer { inFlight.signal() }
                // A resync leaves the slots of beacons that did not change as they are: nothing
                // prepared again, nothing appended to the coordinate file.
                let changed = trackSeen ? self.changed(batch) : batch
                let prepared = prepareConcurrently(changed, raster: prepare)
                defer { prepared.deallocate() }
                let t1 = ContinuousClock.now
                lock.write {
                    if trackSeen { for beacon in batch { loading.value.seen.insert(beacon.id) } } // only a resync needs them
                    let touched = touchedDuringLoad ?? []
                    for i in changed.indices {
                        // Moved out, not copied (a copy of a `Prepared` and its release were 3 %
                        // of a load).
                        let prep = (prepared.baseAddress! + i).move()
                        if touched.isEmpty || !touched.contains(changed[i].id) { install(changed[i], prep) }
                    }
                }
                report?.value.installSeconds += Self.seconds(ContinuousClock.now - t1)
                // The rows, beacons and prepared values of the batches installed so far go back to
                // the system every few batches: glibc keeps what is freed, and a load of 1M beacons
                // grew to 2.3 GiB resident before its trim at the end (1.95 GiB now, at no
                // measurable cost: a trim takes about 0.1 s).
                loading.value.batches += 1
                if loading.value.batches % 8 == 0 { releaseFreedMemory() }
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

    /// The beacons of `batch` that differ from their slot (or have none): same record bytes
    /// (every field but the geometry), location and perimeter, compared exactly (a large
    /// polygon's coordinates read back from their file), else changed.
    func changed(_ batch: [Beacon]) -> [Beacon] {
        // The slots' objects and record bytes as they are now (the arena may move afterwards).
        let installed: [(Cold, [UInt8])?] = lock.read {
            records.withUnsafeBytes { records in
                batch.map { b in
                    guard let slot = slots[b.id], let c = cold[Int(slot)] else { return nil }
                    return (c, Array(records[c.record..<(c.record + Int(c.recordLength))]))
                }
            }
        }
        var record: [UInt8] = []
        return zip(batch, installed).compactMap { b, installed in
            guard let (c, bytes) = installed, c.location == b.location else { return b }
            record.removeAll(keepingCapacity: true) // (`encode` appends)
            BeaconRecord.encode(b, into: &record)
            guard record == bytes else { return b }
            switch (b.perimeter, c.kind) {
            case (.circle(let r), .circle): return r == c.radius ? nil : b
            case (.polygon, .small), (.polygon, .large), (.multiPolygon, .small), (.multiPolygon, .large):
                var isMulti = false
                if case .multiPolygon = b.perimeter { isMulti = true }
                guard isMulti == c.isMulti else { return b }
                let polygons = c.kind == .small ? c.flat?.polygons ?? [] : c.compact.map(\.polygon)
                return polygons == b.perimeter.polygons ? nil : b
            default: return b
            }
        }
    }

    /// Loads may overlap (a resync during start-up): changes are tracked until the last ends.
    /// Must hold the write lock.
    func beginLoad() {
        loadsInProgress += 1
        if touchedDuringLoad == nil { touchedDuringLoad = [] }
    }

    func endLoad() {
        loadsInProgress -= 1
        if loadsInProgress == 0 { touchedDuringLoad = nil }
    }

    /// What a load has done (written only on its installer's queue).
    final class LoadProgress {
        /// Ids seen (a resync's).
        var seen = Set<BeaconID>()
        /// Batches installed.
        var batches = 0
    }

    /// A load's timings (written only by the loading task).
    final class ReportBox: @unchecked Sendable { var value = LoadReport() }

    /// Applies one committed change (the store's change observer calls this).
    package func apply(_ change: BeaconChange) {
        switch change {
        case .upsert(let beacon):
            let prep = prepare(beacon, raster: true)
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
            // moving beacon stays where it is (the model moves circles only). So the slot is
            // reinstalled with the same geometry and record (new boxes for a circle), and the
            // read and the swap happen under one write lock (no newer version can slip between).
            lock.write {
                touchedDuringLoad?.insert(id)
                guard let slot = slots[id], let c = cold[Int(slot)], var hot = grid.record(of: slot, box: c.box) else { return }
                var boxes = c.boxes
                if c.kind == .circle {
                    hot.test = .circle(lat: position.lat, lon: position.lon, radius: c.radius)
                    boxes = Geodesy.boundingBoxes(center: position, radiusM: c.radius)
                    hot.multiBox = boxes.count > 1
                }
                reinstall(slot, c.with(location: position, boxes: boxes), hot: hot)
            }
        }
    }

    /// What an exact test needs, built outside the lock (a compact polygon and its raster can
    /// take milliseconds).
    struct Prepared: @unchecked Sendable {
        /// The boxes the perimeter is indexed under (`boxes(of:)`).
        var boxes: [BoundingBox]
        var flat: FlatPerimeter? = nil
        var compact: [CompactPolygon] = []
        var raster: PolygonRaster? = nil
        /// A small polygon's summary (`Test.small`).
        var smallCoarse = PolygonRaster.unsettled
        /// A small polygon of one box whose summary `warm` makes (a load without `raster`).
        var summaryPending = false
        /// The grid cells of `boxes` (computed with the rest, outside the lock).
        var cells: [(level: Int, keys: [UInt64])] = []
        /// The beacon's `BeaconRecord`.
        var record: [UInt8] = []

        init(boxes: [BoundingBox], flat: FlatPerimeter? = nil, compact: [CompactPolygon] = [], raster: PolygonRaster? = nil) {
            self.boxes = boxes
            self.flat = flat
            self.compact = compact
            self.raster = raster
            cells = boxes.map(HierarchicalGrid<Hot>.cells(for:))
        }
    }

    /// The exact test of a beacon's perimeter; with `raster`, a large polygon's raster too (else
    /// `warm` builds it later).
    func prepare(_ beacon: Beacon, raster: Bool) -> Prepared {
        var prep = prepareGeometry(beacon, raster: raster)
        BeaconRecord.encode(beacon, into: &prep.record)
        return prep
    }

    private func prepareGeometry(_ beacon: Beacon, raster: Bool) -> Prepared {
        let boxes = Self.boxes(of: beacon)
        switch beacon.perimeter {
        case .circle:
            return Prepared(boxes: boxes)
        case .polygon, .multiPolygon:
            let polygons = beacon.perimeter.polygons
            if beacon.perimeter.vertexCount > Self.largePolygonThreshold {
                // Without `raster` (a load that lets `warm` finish the work), nor their GeoJSON
                // nor their strips (a provisional one: 15 % of loading 1M beacons).
                let compact = polygons.map { CompactPolygon($0, file: coordinateFile, text: raster, provisional: !raster) }
                let r = raster && boxes.count == 1 ? Self.raster(compact, box: boxes[0]) : nil
                return Prepared(boxes: boxes, compact: compact, raster: r)
            }
            var prep = Prepared(boxes: boxes, flat: FlatPerimeter(polygons))
            if boxes.count == 1, let flat = prep.flat {
                // Without `raster` (a load), `warm` makes it, as it does large polygons' rasters (4 %
                // of loading 1M beacons).
                if raster {
                    prep.smallCoarse = Self.summary(flat, polygons: polygons, box: boxes[0])
                } else {
                    prep.summaryPending = true
                }
            }
            return prep
        }
    }

    /// A small polygon's 8×8 summary, over the grid entry's (rounded-out) box.
    static func summary(_ flat: FlatPerimeter, polygons: [Polygon], box: BoundingBox) -> (UInt64, UInt64) {
        PolygonRaster.summary(box: HierarchicalGrid<Hot>.roundedOut(box), edgeBoxes: PolygonRaster.edgeBoxes(of: polygons),
                              covers: { x, y in FlatPerimeter.covers(flat.base, lon: x, lat: y) })
    }

    /// The raster of compact polygons, over the grid entry's (rounded-out) box.
    static func raster(_ compact: [CompactPolygon], box: BoundingBox) -> PolygonRaster {
        PolygonRaster(box: HierarchicalGrid<Hot>.roundedOut(box), edgeBoxes: { mark in
            for c in compact { c.forEachEdgeBox(mark) }
        }, covers: { x, y in compact.contains { $0.covers(lon: x, lat: y) } })
    }

    /// `prepare` of every beacon of `batch`, on every core, in a buffer the caller owns: it moves
    /// each element out, then deallocates the buffer.
    func prepareConcurrently(_ batch: [Beacon], raster: Bool) -> UnsafeMutableBufferPointer<Prepared> {
        let buffer = UnsafeMutableBufferPointer<Prepared>.allocate(capacity: max(1, batch.count))
        guard !batch.isEmpty else { return UnsafeMutableBufferPointer(start: buffer.baseAddress, count: 0) }
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let chunk = (batch.count + workers - 1) / workers
        // Each worker initializes its own disjoint range in place (no placeholder values, no copy).
        let output = UncheckedSendable(buffer.baseAddress!)
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            let lo = w * chunk, hi = min(batch.count, lo + chunk)
            guard lo < hi else { return }
            for i in lo..<hi { (output.value + i).initialize(to: prepare(batch[i], raster: raster)) }
        }
        return UnsafeMutableBufferPointer(start: buffer.baseAddress, count: batch.count)
    }

    /// Number of polygons still waiting for the warm-up (`load(prepare: false)`).
    package var pendingCount: Int { lock.read { pending } }
    /// Slots with `needsWarming` (kept by `install`/`uninstall`).
    var pending = 0

    /// Builds the strips and rasters of the large polygons loaded without them and writes their
    /// rings' GeoJSON to the coordinate file, and the summaries of the small ones loaded without
    /// them, in batches, outside the lock; each is swapped in only if
    /// its slot did not change meanwhile (a change applied meanwhile was prepared by `apply`
    /// already). Queries go on meanwhile. Returns the number prepared.
    @discardableResult
    package func warm(batchSize: Int = 2_000) async -> Int {
        var done = 0
        var next = 0
        var donePass = 0
        while true {
            let batch: [(Int32, Cold)] = lock.read {
                var out: [(Int32, Cold)] = []
                while next < cold.count && out.count < batchSize {
                    if let c = cold[next], c.needsWarming { out.append((Int32(next), c)) }
                    next += 1
                }
                return out
            }
            if batch.isEmpty {
                // A move may have reinstalled a waiting polygon in a slot already passed: scan
                // again while passes make progress.
                if donePass == 0 || pendingCount == 0 { return done }
                next = 0
                donePass = 0
                continue
            }
            let warmed = UnsafeMutableBufferPointer<Warmed>.allocate(capacity: batch.count)
            warmed.initialize(repeating: Warmed())
            let output = UncheckedSendable(warmed.baseAddress!)
            let colds = batch.map(\.1)
            // On every core, off the event loops (a batch takes a while at 1M).
            await offEventLoops {
                DispatchQueue.concurrentPerform(iterations: colds.count) { i in
                    let c = colds[i]
                    if c.summaryPending, let flat = c.flat {
                        (output.value + i).pointee.summary = Self.summary(flat, polygons: flat.polygons, box: c.box)
                        return
                    }
                    // The strips and rings' GeoJSON of polygons loaded without them
                    // (`load(prepare: false)`), before the raster (its tests use the strips).
                    var finished: [CompactPolygon]?
                    if c.compact.contains(where: \.needsFinishing) {
                        let all = c.compact.map { $0.finished() ?? $0 }
                        // Nothing done (a full disk): nothing to swap in (else `warm` would retry forever).
                        if !all.elementsEqual(c.compact, by: ===) { finished = all }
                    }
                    let raster = c.needsRaster ? Self.raster(finished ?? c.compact, box: c.box) : nil
                    (output.value + i).pointee = Warmed(raster: raster, finished: finished)
                }
                // The batch's temporaries (exact coordinates, text, hints) go back to the system,
                // so the server stays at its settled size while warming (1M: 1.7 GiB, not 2.2).
                releaseFreedMemory()
            }
            lock.write {
                for (i, (slot, c)) in batch.enumerated() where cold[Int(slot)] === c {
                    let w = warmed[i]
                    guard w.raster != nil || w.finished != nil || w.summary != nil,
                          var hot = grid.record(of: slot, box: c.box) else { continue }
                    var number: Int32?
                    if let r = w.raster {
                        number = storeRaster(r)
                        hot.test = .large(raster: number!, coarse: r.coarse)
                    }
                    if let summary = w.summary, let flat = c.flat { hot.test = .small(UnsafePointer(flat.base), coarse: summary) }
                    reinstall(slot, c.with(raster: number, compact: w.finished, summaryPending: w.summary == nil ? nil : false), hot: hot)
                    done += 1
                    donePass += 1
                }
            }
            warmed.deinitialize().deallocate()
            await Task.yield()
        }
    }

    /// What `warm` made for one slot: a large polygon's raster and finished blocks, or a small
    /// one's summary.
    struct Warmed {
        var raster: PolygonRaster?
        var finished: [CompactPolygon]?
        var summary: (UInt64, UInt64)?
    }

    /// Keeps a raster's words; returns its number. Must hold the write lock.
    func storeRaster(_ r: PolygonRaster) -> Int32 {
        if let free = freeRasters.popLast() {
            rasterWords.replaceSubrange(rasterRange(free), with: r.words)
            return free
        }
        let n = Int32(rasterWords.count / PolygonRaster.wordCount)
        rasterWords.append(contentsOf: r.words)
        return n
    }

    /// Must hold the write lock.
    private func install(_ beacon: Beacon, _ prep: consuming Prepared) {
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
                     compact: prep.compact, members: members, boxes: boxes, summaryPending: prep.summaryPending)
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
            slotIDs.append(nil)
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
        slotIDs[Int(slot)] = c.id
        slots[c.id] = slot
        if c.tracksOwner { tracking[hot.owner, default: []].insert(slot) }
    }

    /// Replaces a slot's `Cold` with one of the same beacon and record (moved, or with its
    /// raster). Must hold the write lock.
    private func reinstall(_ slot: Int32, _ c: Cold, hot: Hot) {
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
        slots[c.id] = nil
        if c.raster >= 0 { rasterBlocks[Int(c.raster)] = nil }
        if !keepRecord {
            if c.raster >= 0 { freeRasters.append(c.raster) }
            recordGarbage += Int(c.recordLength)
            if recordGarbage > 1 << 20 && recordGarbage > records.count / 2 { compactRecords(without: c) }
        }
        if c.needsWarming { pending -= 1 }
        cold[Int(slot)] = nil
        slotIDs[Int(slot)] = nil
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
    private func compactRecords(without dropped: Cold?) {
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
                ("slot objects", cold.count * (176 + MemoryLayout<BeaconID?>.stride) + members), ("records", records.capacity),
                ("id table", slots.capacity * (MemoryLayout<BeaconID>.stride + 4)),
                ("grid entries", entries * (MemoryLayout<HierarchicalGrid<Hot>.Box>.stride + MemoryLayout<HierarchicalGrid<Hot>.Entry>.stride)),
                ("small polygon blocks", flat), ("large polygon blocks", compact),
                ("rasters", rasterWords.capacity * 8 + rasterBlocks.capacity * 8),
                ("exact coordinates and their GeoJSON (file)", exact), ("coordinate file", coordinatesLock.withLock { coordinates?.size ?? 0 }),
            ]
        }
    }

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
    private func beacons(of slots: [Int32], perimeter: Bool = true) -> [Beacon] {
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
    private func forEachBeacon(of slots: [Int32], _ body: (Cold, UnsafeRawBufferPointer) -> Void) {
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
    package func coveringIDsNow(_ query: CoverQuery) -> [BeaconID] {
        var out: [BeaconID] = []
        lock.read { visit(query) { slot in out.append(slotIDs[Int(slot)]!) } }
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
            var found = Set<Int32>()
            for box in boxes {
                grid.forEachMeeting(box) { entry in
                    let slot = entry.slot
                    guard !found.contains(slot), admission.admits(entry.record, slot: slot, self),
                          let c = cold[Int(slot)], !c.tracksOwner else { return }
                    if entry.record.multiBox && !c.splitBoxes.contains(where: { $0.intersects(box) }) { return }
                    found.insert(slot)
                }
            }
            return found.sorted().compactMap { slot in
                guard let c = cold[Int(slot)] else { return nil }
                return PerimeterCandidate(id: c.id, boxes: c.boxes, circle: c.kind == .circle ? (c.location, c.radius) : nil)
            }
        }
    }

    /// Calls `body` with each matching slot once. Must hold the read lock.
    @inline(__always)
    private func visit(_ query: CoverQuery, _ body: (Int32) -> Void) {
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
        lock.read { beacons(of: ids.compactMap { slots[$0] }, perimeter: perimeters) }
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
