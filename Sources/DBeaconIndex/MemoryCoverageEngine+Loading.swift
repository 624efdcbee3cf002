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

/// Loading every beacon, resynchronising, and applying the store's changes.
extension MemoryCoverageEngine {
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
        report.value.installSeconds += (ContinuousClock.now - t).inSeconds
        report.value.seconds = (ContinuousClock.now - started).inSeconds
        report.value.beacons = count
        return report.value
    }

    /// Brings the index back in line with the store after changes may have been missed (a
    /// PostgreSQL listener that reconnected): reloads every beacon and drops the ones that no
    /// longer exist, while queries go on being answered. Changes applied meanwhile win.
    package func resync(batchSize: Int = 20_000) async throws {
        let before = lock.read { Set(slots.ids.lazy.compactMap { $0 }) }
        _ = try await loadAll(batchSize: batchSize) { [self] seen, touched in
            for id in before where !seen.contains(id) && !touched.contains(id) {
                if let slot = slots[id] { uninstall(slot) }
            }
        }
    }

    /// Loads everything; `finish` runs under the write lock with the ids loaded and the ids
    /// changed through `apply` meanwhile, before loading mode ends.
    func loadAll(batchSize: Int, prepare: Bool = true, report: ReportBox? = nil,
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
                report?.value.installSeconds += (ContinuousClock.now - t1).inSeconds
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
        /// A polygon's enclosing circle (else `warm` makes it).
        var enclosing: (center: Position, radiusM: Double)?

        init(boxes: [BoundingBox], flat: FlatPerimeter? = nil, compact: [CompactPolygon] = [], raster: PolygonRaster? = nil) {
            self.boxes = boxes
            self.flat = flat
            self.compact = compact
            self.raster = raster
            cells = boxes.map(HierarchicalGrid<Hot>.cells(for:))
        }
    }
}
