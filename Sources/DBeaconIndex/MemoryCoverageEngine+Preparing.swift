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

/// Preparing perimeters' exact tests (in parallel for a load) and warming what a fast start left out.
extension MemoryCoverageEngine {
    /// The exact test of a beacon's perimeter; with `raster`, a large polygon's raster too (else
    /// `warm` builds it later).
    func prepare(_ beacon: Beacon, raster: Bool) -> Prepared {
        var prep = prepareGeometry(beacon, raster: raster)
        BeaconRecord.encode(beacon, into: &prep.record)
        return prep
    }

    func prepareGeometry(_ beacon: Beacon, raster: Bool) -> Prepared {
        let boxes = Self.boxes(of: beacon)
        switch beacon.perimeter {
        case .circle:
            return Prepared(boxes: boxes)
        case .polygon, .multiPolygon:
            let polygons = beacon.perimeter.polygons
            // Without `raster` (a load), `warm` makes the enclosing circle too.
            let enclosing = raster ? EnclosingCircle.verified(polygons.map(\.exterior), origin: beacon.location) : nil
            if beacon.perimeter.vertexCount > Self.largePolygonThreshold {
                // Without `raster` (a load that lets `warm` finish the work), nor their GeoJSON
                // nor their strips (a provisional one: 15 % of loading 1M beacons).
                let compact = polygons.map { CompactPolygon($0, file: coordinateFile, text: raster, provisional: !raster) }
                let r = raster && boxes.count == 1 ? Self.raster(compact, box: boxes[0]) : nil
                var prep = Prepared(boxes: boxes, compact: compact, raster: r)
                prep.enclosing = enclosing
                return prep
            }
            var prep = Prepared(boxes: boxes, flat: FlatPerimeter(polygons))
            prep.enclosing = enclosing
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

    /// Builds the strips and rasters of the large polygons loaded without them and writes their
    /// rings' GeoJSON to the coordinate file, the summaries of the small ones loaded without
    /// them, and the enclosing circles of both, in batches, outside the lock; each is swapped in only if
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
                    if c.kind == .small {
                        if c.summaryPending, let flat = c.flat {
                            (output.value + i).pointee.summary = Self.summary(flat, polygons: flat.polygons, box: c.box)
                        }
                        if c.circlePending { (output.value + i).pointee.enclosing = c.makeEnclosing() }
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
                    let enclosing = c.circlePending ? c.makeEnclosing(compact: finished) : nil
                    (output.value + i).pointee = Warmed(raster: raster, finished: finished, enclosing: enclosing)
                }
                // The batch's temporaries (exact coordinates, text, hints) go back to the system,
                // so the server stays at its settled size while warming (1M: 1.7 GiB, not 2.2).
                releaseFreedMemory()
            }
            lock.write {
                for (i, (slot, c)) in batch.enumerated() where cold[Int(slot)] === c {
                    let w = warmed[i]
                    guard w.raster != nil || w.finished != nil || w.summary != nil || w.enclosing != nil,
                          var hot = grid.record(of: slot, box: c.box) else { continue }
                    var number: Int32?
                    if let r = w.raster {
                        number = storeRaster(r)
                        hot.test = .large(raster: number!, coarse: r.coarse)
                    }
                    if let summary = w.summary, let flat = c.flat { hot.test = .small(UnsafePointer(flat.base), coarse: summary) }
                    reinstall(slot, c.with(raster: number, compact: w.finished, summaryPending: w.summary == nil ? nil : false,
                                           enclosing: w.enclosing), hot: hot)
                    done += 1
                    donePass += 1
                }
            }
            warmed.deinitialize().deallocate()
            await Task.yield()
        }
    }

    /// What `warm` made for one slot: a large polygon's raster and finished blocks, or a small
    /// one's summary; either's enclosing circle.
    struct Warmed {
        var raster: PolygonRaster?
        var finished: [CompactPolygon]?
        var summary: (UInt64, UInt64)?
        var enclosing: (center: Position, radiusM: Double)?
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
}
