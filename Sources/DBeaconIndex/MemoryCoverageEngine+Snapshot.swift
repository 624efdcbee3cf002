import DBeaconCore
package import DBeaconStore
import Foundation

/// Snapshots: the whole index written to one file (`IndexSnapshots`) and mapped back at start,
/// so a server with a million beacons starts in seconds instead of reading and preparing every
/// beacon again. A snapshot is taken at a store change stamp (`ChangeStamp`) with every change
/// counted in the stamp applied, and is loaded only while the store's stamp is the same: one
/// that is stale or unreadable is rebuilt from the store, never trusted.
extension MemoryCoverageEngine {
    /// Version of the snapshot's contents (the engine's layouts); another version is not read.
    static let snapshotVersion: UInt32 = 8

    /// A snapshot written.
    package struct SnapshotWriteReport: Sendable {
        package var beacons = 0
        package var bytes = 0
        package var seconds = 0.0
        /// Of which the store's writes and the index's changes waited for (taking the view).
        package var captureSeconds = 0.0
        package var stamp: ChangeStamp
    }

    /// What a snapshot holds, taken under the read lock (the slots' objects and geometry are
    /// immutable, so writing them out needs no lock).
    private struct View {
        var stamp: ChangeStamp
        var users: [String]
        var tags: [String]
        var services: [(String, Int32)]
        var rasterWords: [UInt64]
        var records: [UInt8]
        /// Each slot's record, hot fields and record offset as of the capture (a compaction of the
        /// arena after it moves `Cold.record`, and `records` is the arena as captured).
        var slots: [(Cold, Hot, Int)]
    }

    /// The index as it is, or nil while a load runs (its entries are not in place yet).
    private func view(_ stamp: ChangeStamp) -> View? {
        lock.read {
            guard loadsInProgress == 0 else { return nil }
            var userNames = [String](repeating: "", count: users.count)
            for (u, i) in users { userNames[Int(i)] = u.rawValue }
            var tagNames = [String](repeating: "", count: tagIDs.count)
            for (t, i) in tagIDs { tagNames[i] = t }
            var out: [(Cold, Hot, Int)] = []
            out.reserveCapacity(slots.count)
            for (i, c) in cold.enumerated() {
                guard let c, let hot = grid.peekRecord(of: Int32(i), box: c.box) else { continue }
                out.append((c, hot, c.record))
            }
            return View(stamp: stamp, users: userNames, tags: tagNames, services: services.map { ($0.key, $0.value) },
                        rasterWords: rasterWords, records: records, slots: out)
        }
    }

    /// Writes a snapshot of the index to `snapshots` (which this process must own), as of the
    /// store's stamp now; nil when there is nothing to do: the store keeps no stamp (PostGIS),
    /// a load is running, or the exact coordinates are not in the folder's coordinate file.
    ///
    /// The coordinate file is append-only: an edited large polygon leaves its old coordinates
    /// behind. When what no polygon uses is more than what they use (and over 64 MiB), or with
    /// `compactCoordinates`, the snapshot goes with a new file holding only the coordinates in
    /// use (the engine appends there from now on; polygons still reading the old one keep it
    /// mapped until they are replaced).
    package func writeSnapshot(to snapshots: IndexSnapshots, compactCoordinates: Bool? = nil) async throws -> SnapshotWriteReport? {
        let started = ContinuousClock.now
        guard snapshots.writable, var coords = coordinatesLock.withLock({ coordinates }), let name = coords.name,
              coords.path == "\(snapshots.directory)/\(name)" else { return nil }
        let captureStarted = ContinuousClock.now
        guard let captured = try await store.withSettledChanges({ [self] stamp in UncheckedSendable(view(stamp)) }),
              let view = captured.value else { return nil }
        let captureSeconds = (ContinuousClock.now - captureStarted).inSeconds
        let live = view.slots.reduce(0) { $0 + $1.0.compact.reduce(0) { $0 + $1.fileBytes } }
        if compactCoordinates ?? (coords.size - live > max(live, 64 << 20)) {
            coords = try snapshots.newCoordinateFile()
            useCoordinates(coords)
        }
        let coordsName = coords.name ?? name
        let target = coords
        // Seconds of file writes at 1M: off the event loops.
        let sendableView = UncheckedSendable(view)
        let bytes = try await offEventLoops {
            try snapshots.writing.withLock { try Self.write(sendableView.value, coords: target, coordsName: coordsName, to: snapshots) }
        }
        return SnapshotWriteReport(beacons: view.slots.count, bytes: bytes, seconds: (ContinuousClock.now - started).inSeconds,
                                   captureSeconds: captureSeconds, stamp: view.stamp)
    }

    /// Writes a view's snapshot (under `snapshots.writing`); returns its size.
    private static func write(_ view: View, coords: CoordinateFile, coordsName: String, to snapshots: IndexSnapshots) throws -> Int {
        // Exact coordinates not in the folder's file (kept on the heap after a failed write) go
        // there now; then the file is made durable before the snapshot that refers to it.
        // Their rings' GeoJSON goes with them (read from the old file, or formatted).
        // (A polygon's text is in the same file as its coordinates, or none.)
        func exactOffset(_ p: CompactPolygon) throws -> (offset: Int, text: CompactPolygon.Text?) {
            if let offset = coords.offset(of: p.exact) { return (offset, p.text) }
            // Moved from another file: its text or hints as they are, else made now.
            let form = p.storedText.map { (bytes: $0, length: p.textLength, hinted: p.textHinted) }
                ?? CompactPolygon.text(lonLat: p.exact, rings: p.ringCounts, hinted: coords.hintedText)
            guard let written = coords.append(UnsafeBufferPointer(start: p.exact, count: 2 * p.vertexCount), text: form.bytes) else {
                throw SnapshotWriter.Failure.write(errno)
            }
            return (written.offset, CompactPolygon.Text(offset: written.offset + 16 * p.vertexCount, length: form.length, hinted: form.hinted))
        }
        var exact: [ObjectIdentifier: (offset: Int, text: CompactPolygon.Text?)] = [:]
        for (c, _, _) in view.slots { for p in c.compact { exact[ObjectIdentifier(p)] = try exactOffset(p) } }
        guard coords.sync() else { throw SnapshotWriter.Failure.write(errno) }
        let coordsSize = coords.size
        let bytes = try snapshots.replaceSnapshot { w in
            // Geometry first: each block at a multiple of 8, its offset noted for the directory.
            var flatAt: [Int] = [], compactAt: [[Int]] = []
            flatAt.reserveCapacity(view.slots.count)
            compactAt.reserveCapacity(view.slots.count)
            for (c, _, _) in view.slots {
                var at = -1
                if let f = c.flat {
                    try w.align()
                    at = w.position
                    try w.bytes(UnsafeRawBufferPointer(start: f.base, count: 8 * f.count))
                }
                flatAt.append(at)
                var blocks: [Int] = []
                for p in c.compact {
                    try w.align()
                    blocks.append(w.position)
                    try w.bytes(UnsafeRawBufferPointer(start: p.block, count: p.blockBytes))
                }
                compactAt.append(blocks)
            }
            let recordsAt = w.position
            try w.bytes(view.records)
            try w.align()
            let rastersAt = w.position
            try view.rasterWords.withUnsafeBytes { try w.bytes($0) }
            // The directory.
            try w.align()
            let directory = w.position
            try w.value(snapshotVersion)
            try w.string(view.stamp.store)
            try w.value(view.stamp.counter)
            try w.string(coordsName)
            try w.value(Int64(coordsSize))
            try w.value(UInt32(view.users.count))
            for u in view.users { try w.string(u) }
            try w.value(UInt32(view.tags.count))
            for t in view.tags { try w.string(t) }
            try w.value(UInt32(view.services.count))
            for (name, i) in view.services {
                try w.string(name)
                try w.value(i)
            }
            try w.value(UInt64(recordsAt))
            try w.value(UInt64(view.records.count))
            try w.value(UInt64(rastersAt))
            try w.value(UInt64(view.rasterWords.count))
            try w.value(UInt32(view.slots.count))
            for (k, (c, h, record)) in view.slots.enumerated() {
                try w.string(c.id.rawValue)
                try w.double(c.location.lon)
                try w.double(c.location.lat)
                try w.double(c.radius)
                try w.value(UInt64(record))
                try w.value(UInt32(c.recordLength))
                try w.value(c.kind.rawValue)
                var flags: UInt8 = 0
                if c.tracksOwner { flags |= 1 }
                if c.isMulti { flags |= 2 }
                if h.isPrivate { flags |= 4 }
                if h.multiBox { flags |= 8 }
                if h.overflowTags { flags |= 16 }
                if c.summaryPending { flags |= 32 } // a snapshot taken before `warm` made it
                if c.enclosing != nil { flags |= 64 } // (the same)
                try w.value(flags)
                if let e = c.enclosing {
                    try w.double(e.center.lon)
                    try w.double(e.center.lat)
                    try w.double(e.radiusM)
                }
                try w.value(c.raster)
                try w.value(h.owner)
                try w.value(h.service)
                try w.value(h.lifeStart)
                try w.value(h.lifeEnd)
                try w.value(h.tagBits)
                try w.value(h.memberBits)
                var coarse: (UInt64, UInt64) = (0, 0)
                switch h.test {
                case .large(_, let cs), .small(_, let cs): coarse = cs
                default: break
                }
                try w.value(coarse.0)
                try w.value(coarse.1)
                try w.value(UInt32(c.members.count))
                for m in c.members { try w.value(m) }
                let boxes = c.boxes
                try w.value(UInt8(boxes.count))
                for b in boxes {
                    for v in [b.west, b.south, b.east, b.north] { try w.double(v) }
                }
                try w.value(Int64(flatAt[k]))
                try w.value(UInt32(c.flat?.count ?? 0))
                try w.value(UInt32(c.compact.count))
                for (p, at) in zip(c.compact, compactAt[k]) {
                    try w.value(UInt64(at))
                    try w.value(UInt32(p.blockBytes))
                    let placed = exact[ObjectIdentifier(p)]!
                    try w.value(UInt64(placed.offset))
                    try w.value(Int64(placed.text?.offset ?? -1))
                    try w.value(UInt32(placed.text?.length ?? 0))
                    try w.value(UInt8(placed.text?.hinted == true ? 1 : 0))
                }
            }
            return directory
        }
        snapshots.removeCoordinateFiles(except: coordsName)
        snapshots.current = view.stamp
        return bytes
    }

    /// Loads the snapshot of `snapshots` if it was taken at `stamp` (the store's now): returns
    /// nil, changing nothing, when there is none or it is stale, and throws when it cannot be
    /// read (the engine is left empty). Register `apply` with the store before taking the stamp:
    /// changes applied meanwhile win over the snapshot's copies.
    ///
    /// Its geometry stays in the mapped file; when this process owns the folder, large
    /// polygons' exact coordinates go on to its coordinate file.
    package func load(snapshotFrom snapshots: IndexSnapshots, stamp: ChangeStamp) throws -> LoadReport? {
        let started = ContinuousClock.now
        guard let mapping = try snapshots.mapSnapshot() else { return nil }
        let payload = mapping.payload
        var r = SnapshotReader(payload, at: mapping.directoryOffset)
        guard try r.value(UInt32.self) == Self.snapshotVersion else { return nil }
        let store = try r.string(), counter = try r.value(Int64.self)
        guard ChangeStamp(store: store, counter: counter) == stamp else { return nil }
        let coordsName = try r.string(), coordsSize = Int(try r.value(Int64.self))
        guard !coordsName.contains("/") else { throw SnapshotMapping.Failure.malformed("coordinate file name") }
        let coords = try CoordinateFile(opening: "\(snapshots.directory)/\(coordsName)", size: coordsSize, writable: snapshots.writable)
        if snapshots.writable { useCoordinates(coords) }
        let userNames = try (0..<Int(try r.value(UInt32.self))).map { _ in try r.string() }
        let tagNames = try (0..<Int(try r.value(UInt32.self))).map { _ in try r.string() }
        let serviceList = try (0..<Int(try r.value(UInt32.self))).map { _ in (try r.string(), try r.value(Int32.self)) }
        let recordsAt = Int(try r.value(UInt64.self)), recordsCount = Int(try r.value(UInt64.self))
        let recordBytes = UnsafeRawBufferPointer(start: try r.range(recordsAt, recordsCount), count: recordsCount)
        let rastersAt = Int(try r.value(UInt64.self)), rasterCount = Int(try r.value(UInt64.self))
        let rasterBytes = try r.range(rastersAt, 8 * rasterCount, alignment: 8)
        let slotCount = Int(try r.value(UInt32.self))
        var report = LoadReport()

        try lock.write {
            beginLoad()
            defer { endLoad() }
            grid.beginStaging()
            defer { grid.endStaging() }
            // The snapshot's numbering of users, tags and services, in this engine's (the same
            // when it is empty, as at start-up).
            let userMap = userNames.map { userIndex(UserID(uncheckedRawValue: $0)) }
            let tagMap = tagNames.map(tagIndex)
            var serviceMap: [Int32: Int32] = [0: 0]
            for (name, i) in serviceList { serviceMap[i] = serviceIndex(name) }
            let identity = userMap.enumerated().allSatisfy { Int32($0.offset) == $0.element }
                && tagMap.enumerated().allSatisfy { $0.offset == $0.element } && serviceMap.allSatisfy { $0.key == $0.value }
            let recordBase = records.count
            records.append(contentsOf: recordBytes)
            let rasterBase = Int32(rasterWords.count / PolygonRaster.wordCount)
            rasterWords.append(contentsOf: UnsafeBufferPointer(start: rasterBytes.assumingMemoryBound(to: UInt64.self), count: rasterCount))
            slots.reserveCapacity(slotCount)
            cold.reserveCapacity(slotCount)
            for _ in 0..<slotCount {
                let id = BeaconID(uncheckedRawValue: try r.string())
                let location = Position(lon: try r.double(), lat: try r.double())
                let radius = try r.double()
                let record = Int(try r.value(UInt64.self)), recordLength = Int(try r.value(UInt32.self))
                guard record + recordLength <= recordsCount else { throw SnapshotMapping.Failure.malformed("record of \(id)") }
                guard let kind = Kind(rawValue: try r.value(UInt8.self)) else { throw SnapshotMapping.Failure.malformed("kind of \(id)") }
                let flags = try r.value(UInt8.self)
                var enclosing: (center: Position, radiusM: Double)?
                if flags & 64 != 0 {
                    let center = Position(lon: try r.double(), lat: try r.double()), radius = try r.double()
                    guard center.lon.isFinite, center.lat.isFinite, radius.isFinite, radius >= 0 else {
                        throw SnapshotMapping.Failure.malformed("enclosing circle of \(id)")
                    }
                    enclosing = (center, radius)
                }
                var raster = try r.value(Int32.self)
                var h = Hot()
                h.isPrivate = flags & 4 != 0
                h.multiBox = flags & 8 != 0
                h.overflowTags = flags & 16 != 0
                h.owner = try r.value(Int32.self)
                h.service = try r.value(Int32.self)
                h.lifeStart = try r.value(Int64.self)
                h.lifeEnd = try r.value(Int64.self)
                h.tagBits = try r.value(UInt64.self)
                h.memberBits = try r.value(UInt64.self)
                let coarse = (try r.value(UInt64.self), try r.value(UInt64.self))
                var members = try (0..<Int(try r.value(UInt32.self))).map { _ in try r.value(Int32.self) }
                let boxes = try (0..<Int(try r.value(UInt8.self))).map { _ in
                    BoundingBox(west: try r.double(), south: try r.double(), east: try r.double(), north: try r.double())
                }
                let flatAt = Int(try r.value(Int64.self)), flatCount = Int(try r.value(UInt32.self))
                var flat: FlatPerimeter?
                if flatAt >= 0 {
                    let p = try r.range(flatAt, 8 * flatCount, alignment: 8)
                    flat = FlatPerimeter(block: p.assumingMemoryBound(to: Double.self), count: flatCount, owner: mapping)
                }
                let compact = try (0..<Int(try r.value(UInt32.self))).map { _ in
                    let at = Int(try r.value(UInt64.self)), bytes = Int(try r.value(UInt32.self))
                    let exactAt = Int(try r.value(UInt64.self))
                    let textAt = Int(try r.value(Int64.self)), textLength = Int(try r.value(UInt32.self))
                    let hinted = try r.value(UInt8.self) == 1
                    let block = try r.range(at, bytes, alignment: 8)
                    let polygon = CompactPolygon(block: block, bytes: bytes, ownsBlock: false, exact: coords.pointer(at: exactAt),
                                                 text: textAt >= 0 ? CompactPolygon.Text(offset: textAt, length: textLength, hinted: hinted) : nil,
                                                 owners: [mapping, coords])
                    let textBytes = hinted ? 2 * polygon.vertexCount : textLength
                    guard exactAt >= 0, exactAt + 16 * polygon.vertexCount <= coordsSize,
                          textAt < 0 || textAt + textBytes <= coordsSize else {
                        throw SnapshotMapping.Failure.malformed("coordinates of \(id)")
                    }
                    return polygon
                }
                guard slots[id] == nil, !(touchedDuringLoad?.contains(id) ?? false) else { continue } // changed since: newer
                if !identity {
                    h.owner = h.owner >= 0 && Int(h.owner) < userMap.count ? userMap[Int(h.owner)] : h.owner
                    members = members.map { $0 >= 0 && Int($0) < userMap.count ? userMap[Int($0)] : $0 }.sorted()
                    h.memberBits = members.reduce(0) { $0 | Self.memberBit($1) }
                    var bits: UInt64 = 0
                    for t in 0..<min(64, tagMap.count) where h.tagBits & (1 << UInt64(t)) != 0 {
                        if tagMap[t] < 64 { bits |= 1 << UInt64(tagMap[t]) } else { h.overflowTags = true }
                    }
                    h.tagBits = bits
                    h.service = serviceMap[h.service] ?? h.service
                }
                if raster >= 0 { raster += rasterBase }
                switch kind {
                case .free: h.test = .free
                case .circle: h.test = .circle(lat: location.lat, lon: location.lon, radius: radius)
                case .small:
                    guard let flat else { throw SnapshotMapping.Failure.malformed("perimeter of \(id)") }
                    h.test = .small(UnsafePointer(flat.base), coarse: coarse)
                case .large:
                    guard !compact.isEmpty else { throw SnapshotMapping.Failure.malformed("perimeter of \(id)") }
                    h.test = .large(raster: raster, coarse: coarse)
                }
                let c = Cold(id: id, location: location, radius: radius, record: recordBase + record, recordLength: recordLength,
                             raster: raster, kind: kind, tracksOwner: flags & 1 != 0, isMulti: flags & 2 != 0, flat: flat,
                             compact: compact, members: members, boxes: boxes,
                             summaryPending: kind == .small && flags & 32 != 0,
                             enclosing: kind.isPolygon ? enclosing : nil)
                place(c, hot: h)
                report.beacons += 1
            }
        }
        // Records and rasters were copied, the directory parsed: only the geometry before them
        // is read from the mapping from now on.
        mapping.release(payloadFrom: recordsAt)
        report.seconds = (ContinuousClock.now - started).inSeconds
        return report
    }

    /// Forgets every beacon (a snapshot that could not be read leaves the engine empty).
    package func reset() {
        lock.write {
            rasterWords = []
            freeRasters = []
            rasterBlocks = []
            cold = []
            freeSlots = []
            slots = SlotTable()
            grid = HierarchicalGrid<Hot>()
            users = [:]
            tagIDs = [:]
            services = [:]
            tracking = [:]
            records = []
            recordGarbage = 0
            pending = 0
        }
    }
}
