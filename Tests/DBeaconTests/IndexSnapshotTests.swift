import DBeaconApp
import DBeaconCore
import DBeaconGeo
import DBeaconHTTP
import DBeaconIndex
import DBeaconStore
import Foundation
import Testing

/// The in-memory index's snapshot: a restart maps it instead of reading every beacon, and it is
/// used only while the database is exactly as it was when the snapshot was taken.
@Suite(.bounded) struct IndexSnapshotTests {
    @Test(arguments: Backend.all) func aSnapshotAnswersAsTheDatabaseUntilItChanges(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, engine: .memory)
        let sql = SQLCoverageEngine(store: h.store)
        var users: [UserID] = []
        for name in ["ann", "ben", "chen"] { users.append(try await h.user(name).id) }
        var g = RandomBeacons(seed: 8080, users: users)
        var beacons = (0..<300).map { BeaconRecordTests.randomBeacon(&g, index: $0) }
        for i in 0..<300 {
            beacons[i].relationships = []
            beacons[i].tags = Array(beacons[i].tags.prefix(3))
            if beacons[i].perimeter.polygons.isEmpty == false { beacons[i].tracksOwner = false }
        }
        for i in 0..<8 {
            beacons[i].perimeter = EngineEquivalenceTests.largePolygon(&g, at: beacons[i].location, vertices: 400 + 100 * i)
        }
        beacons.append(Beacon(id: BeaconID(uncheckedRawValue: "bcn_dateline"), name: "dateline", owner: users[0],
                              location: Position(lon: 179.999, lat: -16.5), perimeter: .circle(radiusM: 900),
                              createdAt: RandomBeacons.base, updatedAt: RandomBeacons.base))
        try await h.store.insertBeacons(beacons)
        let queries = g.queries(count: 800, beacons: beacons)

        // As the server does after a load from the database: exact coordinates in a new file of
        // the folder, rasters built, then the snapshot.
        let folder = h.directory.appendingPathComponent("index").path
        let owner = IndexSnapshots(directory: folder, write: true)
        #expect(owner.writable)
        #expect(!IndexSnapshots(directory: folder, write: true).writable, "a second process may only read the folder")
        let writer = MemoryCoverageEngine(store: h.store)
        writer.useCoordinates(try owner.newCoordinateFile())
        try await writer.load(prepare: false)
        let pending = writer.pendingCount
        #expect(pending >= 8)
        #expect(Self.circleMismatches(writer, beacons, made: false) == 0, "a load leaves the polygons' circles to the warm-up")
        if backend == .spatialite {
            // A snapshot taken before the warm-up has finished (the periodic one, or at shutdown):
            // its large polygons come back as written (provisional strips, no raster), the same
            // answers, and a warm-up finishes them.
            let early = try #require(try await writer.writeSnapshot(to: owner))
            let unfinished = MemoryCoverageEngine(store: h.store)
            let readOnly = IndexSnapshots(directory: folder, write: false)
            #expect(try unfinished.load(snapshotFrom: readOnly, stamp: early.stamp)?.beacons == beacons.count)
            #expect(unfinished.pendingCount == pending)
            #expect(Self.circleMismatches(unfinished, beacons, made: false) == 0)
            let checker = EngineEquivalenceTests()
            #expect(try await checker.compare(unfinished, sql, queries, label: "snapshot before the warm-up") == 0)
            #expect(await unfinished.warm() == pending)
            #expect(unfinished.pendingCount == 0)
            #expect(Self.circleMismatches(unfinished, beacons, made: true) == 0)
            // (Read-only: its polygons' text is not written, so not `record`'s every-text check.)
            #expect(try await checker.compare(unfinished, sql, queries, label: "snapshot before the warm-up, warmed", record: false) == 0)
        }
        #expect(await writer.warm() == pending)
        #expect(writer.pendingCount == 0)
        #expect(Self.circleMismatches(writer, beacons, made: true) == 0, "the warm-up makes every polygon's circle")
        let report = try await writer.writeSnapshot(to: owner)
        guard backend == .spatialite else {
            // Several PostGIS nodes write at once: no stamp, no snapshot; each node loads from the database.
            #expect(try await h.store.changeStamp() == nil)
            #expect(report == nil)
            return
        }
        let stamp = try #require(try await h.store.changeStamp())
        #expect(report?.stamp == stamp && report?.beacons == beacons.count)
        // Location fixes write fence states, not beacons (of a user with no beacon moving with
        // them): the snapshot stays current.
        let walker = try await h.user("dora").id
        for b in beacons.prefix(12) { try await h.fix(walker, lat: b.location.lat, lon: b.location.lon) }
        #expect(try await h.store.changeStamp() == stamp)

        // Loaded from the snapshot (read-only, as the CLI does): the same answers, whole beacons
        // field for field, as the SQL path; rasters included (nothing left to prepare).
        let reader = IndexSnapshots(directory: folder, write: false)
        let loaded = MemoryCoverageEngine(store: h.store)
        #expect(try loaded.load(snapshotFrom: reader, stamp: stamp)?.beacons == beacons.count)
        #expect(loaded.count == beacons.count && loaded.pendingCount == 0)
        #expect(Self.circleMismatches(loaded, beacons, made: true) == 0, "the snapshot keeps the circles")
        let checker = EngineEquivalenceTests()
        #expect(try await checker.compare(loaded, sql, queries, label: "from the snapshot") == 0)

        // Changes applied on top of the snapshot's slots: updates (new perimeters, large ones
        // too), deletes, moves.
        for i in stride(from: 0, to: 120, by: 4) {
            var b = beacons[i]
            b.perimeter = i % 16 == 0 ? EngineEquivalenceTests.largePolygon(&g, at: b.location, vertices: 500) : g.beacon(index: 9000 + i).perimeter
            b.tags = ["food"]
            b.version += 1
            try await h.store.updateBeacon(b, expectedVersion: b.version - 1, fanOut: nil)
            let stored = try #require(try await h.store.beacon(id: b.id)) // as the store's change hook reports it
            loaded.apply(.upsert(stored))
            writer.apply(.upsert(stored))
            beacons[i] = stored
        }
        for i in stride(from: 1, to: 120, by: 7) {
            try await h.store.deleteBeacon(id: beacons[i].id, expectedVersion: nil, fanOut: nil)
            loaded.apply(.delete(beacons[i].id))
            writer.apply(.delete(beacons[i].id))
        }
        #expect(try await checker.compare(loaded, sql, queries, label: "snapshot, then changes") == 0)
        // A changed polygon's circle is made with the change; a deleted beacon has none.
        let deleted = Set(stride(from: 1, to: 120, by: 7).map { beacons[$0].id })
        #expect(Self.circleMismatches(loaded, beacons.filter { !deleted.contains($0.id) }, made: true) == 0)
        #expect(deleted.allSatisfy { loaded.enclosingCircle(of: $0) == nil })

        // The database changed since: the snapshot is stale and is not loaded.
        let later = try #require(try await h.store.changeStamp())
        #expect(later.store == stamp.store && later.counter > stamp.counter)
        let stale = MemoryCoverageEngine(store: h.store)
        #expect(try stale.load(snapshotFrom: reader, stamp: later) == nil)
        #expect(stale.count == 0)
        // Nor is it for another database at the same counter.
        #expect(try stale.load(snapshotFrom: reader, stamp: ChangeStamp(store: "another", counter: stamp.counter)) == nil)

        // A damaged snapshot is refused, never trusted: one byte changed, or cut short.
        let path = folder + "/index.snapshot"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let original = bytes
        bytes[bytes.count / 2] ^= 0x20
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(throws: (any Error).self) { try MemoryCoverageEngine(store: h.store).load(snapshotFrom: reader, stamp: stamp) }
        try original.prefix(original.count - 100).write(to: URL(fileURLWithPath: path))
        #expect(throws: (any Error).self) { try MemoryCoverageEngine(store: h.store).load(snapshotFrom: reader, stamp: stamp) }

        // The coordinate file keeps the edited polygons' old coordinates; a snapshot with a new
        // file drops them, and the answers stay the same. The edited ones are written with their
        // GeoJSON as text (`--perimeter-text formatted`), the others keep their hints: the new
        // file holds both forms, each copied as it is.
        writer.hintedPerimeterText = false
        let coordinateFiles = { try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("coords-") } }
        for i in stride(from: 0, to: 8, by: 2) {
            var b = try #require(try await h.store.beacon(id: beacons[i].id))
            b.perimeter = EngineEquivalenceTests.largePolygon(&g, at: b.location, vertices: 700)
            b.version += 1
            try await h.store.updateBeacon(b, expectedVersion: b.version - 1, fanOut: nil)
            writer.apply(.upsert(try #require(try await h.store.beacon(id: b.id))))
        }
        let before = try coordinateFiles()
        let compacted = try #require(try await writer.writeSnapshot(to: owner, compactCoordinates: true))
        let after = try coordinateFiles()
        #expect(before.count == 1 && after.count == 1 && before != after, "\(before) → \(after)")
        let inUse = try FileManager.default.attributesOfItem(atPath: folder + "/" + after[0])[.size] as? Int
        let oldSize = writer.memoryReport.first { $0.0 == "exact coordinates and their GeoJSON (file)" }?.1
        #expect(inUse == oldSize, "the new file holds exactly the coordinates in use")
        let fromCompacted = MemoryCoverageEngine(store: h.store)
        #expect(try fromCompacted.load(snapshotFrom: reader, stamp: compacted.stamp)?.beacons == beacons.count - 17)
        #expect(try await checker.compare(fromCompacted, sql, queries, label: "after compacting the coordinates") == 0)
    }

    /// Beacons whose enclosing circle in `engine` is not as it should be: for a polygon, exactly
    /// `EnclosingCircle.verified` of its outlines around its location when `made` (nil before the
    /// warm-up when not); for a circle, none.
    static func circleMismatches(_ engine: MemoryCoverageEngine, _ beacons: [Beacon], made: Bool) -> Int {
        beacons.filter { b in
            let kept = engine.enclosingCircle(of: b.id)
            guard !b.perimeter.isCircle, made else { return kept != nil }
            let expected = EnclosingCircle.verified(b.perimeter.polygons.map(\.exterior), origin: b.location)
            guard let kept else { return true }
            return kept.center.lon != expected.center.lon || kept.center.lat != expected.center.lat || kept.radiusM != expected.radiusM
        }.count
    }

    /// The whole path through `dbeacon serve`: the snapshot written at shutdown is mapped at the
    /// next start (same answers), and a change made while the server was down (the CLI on the
    /// file) makes the next start read the database instead.
    @Test func aServerRestartsFromItsSnapshotUnlessTheDatabaseChanged() async throws {
        let dir = try Scratch.directory("dbeacon-snapshot")
        let db = dir.appendingPathComponent("city.sqlite").path
        let log = dir.appendingPathComponent("serve.log")
        let admin = PostgresMultiProcessTests.adminToken
        var server = try await ServerProcess.start(db: db, log: log, extra: ["--log-level", "info"])
        let user = try #require(try await server.call(.POST, "/v1/users", token: admin, json: ["name": "ann"]).json)
        let token = try #require(user["token"]?.stringValue)
        var g = RandomBeacons(seed: 99, users: [UserID(uncheckedRawValue: "usr_x")])
        var ids: [String] = []
        for i in 0..<12 {
            // Three large polygons (compact, with rasters) and circles, all around the point asked about.
            let ring = g.starRing(Position(lon: 9.1801, lat: 48.7784), vertices: 300 + 50 * i, rMin: 0.01, rMax: 0.02)
            let perimeter: JSONValue = i < 3 ? GeoJSONCodec.encodePerimeter(.polygon(Polygon(rings: [ring]))) : circle(100 + Double(i) * 10)
            let created = try await server.call(.POST, "/v1/beacons", token: token, json: feature(name: "b\(i)", perimeter: perimeter))
            #expect(created.status == 201)
            ids.append(try #require(created.json?["id"]?.stringValue))
        }
        let before = try await server.call(.GET, "/v1/nearby?lat=48.7784&lon=9.1801&limit=50", token: token).json
        #expect(before?["features"]?.arrayValue?.count == 12)
        server.stop()
        #expect(FileManager.default.fileExists(atPath: db + ".index/index.snapshot"))

        server = try await ServerProcess.start(db: db, log: log, extra: ["--log-level", "info"])
        #expect(try await server.call(.GET, "/v1/nearby?lat=48.7784&lon=9.1801&limit=50", token: token).json == before)
        server.stop()
        let text = try String(contentsOf: log, encoding: .utf8)
        #expect(text.contains("in-memory index loaded from its snapshot"), "\(text)")

        // The CLI deletes a beacon while no server runs: the snapshot is stale.
        let deleted = try await CLI.run(["beacon", "delete", ids[5], "--db", db])
        #expect(deleted.status == 0, "\(deleted.err)")
        try Data().write(to: log)
        server = try await ServerProcess.start(db: db, log: log, extra: ["--log-level", "info"])
        defer { server.stop() }
        let after = try await server.call(.GET, "/v1/nearby?lat=48.7784&lon=9.1801&limit=50", token: token).json
        #expect(after?["features"]?.arrayValue?.compactMap { $0["id"]?.stringValue }.sorted() == ids.filter { $0 != ids[5] }.sorted())
        let restarted = try String(contentsOf: log, encoding: .utf8)
        #expect(restarted.contains("no current index snapshot") && !restarted.contains("loaded from its snapshot"), "\(restarted)")
    }
}
