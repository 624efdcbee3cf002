import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
import Testing

@Suite(.bounded) struct StoreTests {
    /// Multi-row writes are cut into power-of-two slices (a few statement shapes to cache):
    /// every row once, in order, none larger than the largest.
    @Test func multiRowWritesComeInAFewShapes() {
        var shapes = Set<Int>()
        for n in 0...600 {
            let rows = Array(0..<n)
            let slices = rows.chunkedInPowersOfTwo()
            #expect(slices.flatMap { $0 } == rows)
            #expect(slices.allSatisfy { $0.count <= 256 && $0.count & ($0.count - 1) == 0 })
            #expect(zip(slices, slices.dropFirst()).allSatisfy { $0.count >= $1.count })
            shapes.formUnion(slices.map(\.count))
        }
        #expect(shapes == [1, 2, 4, 8, 16, 32, 64, 128, 256])
    }

    @Test(arguments: Backend.all) func createsTheSchemaAndReopensIt(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let b = try await h.beacon(feature(name: "kiosk", tags: ["food"]), owner: ann)
        // A second store on the same database sees the data and does not re-run migrations.
        let reopened = try await StoreLocation.open(h.services.config.databasePath, listen: false, deadline: Backend.testDeadline,
                                                    logger: TestHarness.logger)
        #expect(try await reopened.beacon(id: b.id) == b)
        switch reopened {
        case let spatialite as SpatiaLiteStore:
            #expect(try await spatialite.spatialiteVersion().hasPrefix("5"))
            #expect(try await spatialite.appliedMigrations() == SpatiaLiteSchema.migrations.map(\.0))
        case let postgres as PostgresStore:
            #expect(try await postgres.postgisVersion().hasPrefix("3"))
            await postgres.shutdown()
        default:
            Issue.record("unexpected store \(type(of: reopened))")
        }
    }

    /// `forEachBatch` streams every row once, in batches of at most the size asked for, and lets
    /// the body run other statements between batches (the copier reads and writes that way).
    @Test(arguments: Backend.all) func streamsRowsInBatches(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let store = try #require(h.store as? any SQLStore)
        let (sizes, values) = try await store.read { db in
            var sizes: [Int] = [], values: [Int64] = []
            try await db.forEachBatch("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500) SELECT i FROM n
                """, batch: 1000) { rows in
                sizes.append(rows.count)
                values += try rows.map { try $0.int64("i") }
                #expect(try await db.row("SELECT 41 + 1 AS x")?.int64("x") == 42)
            }
            return (sizes, values)
        }
        #expect(sizes == [1000, 1000, 500])
        #expect(values == Array(1...2500).map(Int64.init))
    }

    @Test(arguments: Backend.all) func roundTripsEveryField(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let (ben, _) = try await h.user("ben")
        let target = try await h.beacon(feature(name: "target"), owner: ann)
        let outer = box(9.17, 48.77, 9.19, 48.79), hole = box(9.178, 48.777, 9.179, 48.778)
        let f = feature(name: "full", perimeter: polygon([outer, hole]), tags: ["food", "event"],
                        lifetime: ("2026-11-21T12:00:00Z", "2026-11-21T14:00:00Z"), members: [ben],
                        relationships: [.object(["type": "tour", "target": .string(target.id.rawValue), "order": 2])],
                        extra: [("description", "desc"), ("tracks_owner", true), ("content_policy", "followers"),
                                ("content", [.object(["kind": "image", "url": "https://example.com/a.jpg", "title": "A"])])])
        let created = try await h.beacon(f, owner: ann)
        let loaded = try #require(try await h.store.beacon(id: created.id))
        #expect(loaded == created)
        #expect(loaded.members == [ben])
        #expect(loaded.contentPolicy == .followers)
        #expect(loaded.relationships == [Relationship(type: "tour", target: target.id, order: 2)])
    }

    /// A bulk insert is a few multi-row statements: every beacon reads back as given, and an id
    /// that is taken (before, or earlier in the same call, in the same slice or a later one)
    /// is named in `beacon_exists` with nothing of the call kept.
    @Test(arguments: Backend.all) func bulkInsertsKeepEveryBeaconAndNameATakenID(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let (ben, _) = try await h.user("ben")
        var g = RandomBeacons(seed: 4150, users: [ann, ben])
        let beacons = (0..<300).map { g.beacon(index: $0) }  // slices of 256, 32, 8 and 4
        try await h.store.insertBeacons(beacons)
        let loaded = try await h.store.beacons(ids: beacons.map(\.id))
        #expect(loaded.count == 300)
        let byID = Dictionary(uniqueKeysWithValues: loaded.map { ($0.id, $0) })
        for b in beacons { #expect(byID[b.id] == b, "\(b.id)") }

        func refused(_ batch: [Beacon]) async -> BeaconID? {
            do { try await h.store.insertBeacons(batch); return nil } catch let e as DBeaconError {
                #expect(e.code == "beacon_exists" && e.path == "id")
                return e.message.split(separator: " ").dropFirst(4).first.map { BeaconID(uncheckedRawValue: String($0)) }
            } catch { Issue.record("\(error)"); return nil }
        }
        let fresh = (300..<600).map { g.beacon(index: $0) }
        #expect(await refused(Array(fresh[..<270]) + [beacons[7]] + Array(fresh[270...])) == beacons[7].id)  // taken before
        #expect(await refused(Array(fresh[..<10]) + [fresh[3]]) == fresh[3].id)  // twice, same slice
        #expect(await refused(Array(fresh[..<256]) + [fresh[100]]) == fresh[100].id)  // twice, a later slice
        #expect(try await h.store.beaconCount() == 300, "nothing of a refused call is kept")
    }

    /// SpatiaLite perimeters are read from the stored blob without `AsBinary`: the decoder
    /// must read every shape the store writes (polygon with a hole, multipolygon, a part
    /// across the antimeridian) exactly as SpatiaLite's own WKB says.
    @Test func readsSpatiaLiteBlobsExactlyAsAsBinary() async throws {
        let h = try await TestHarness.make(backend: .spatialite)
        let (ann, _) = try await h.user("ann")
        let outer = box(9.17, 48.77, 9.19, 48.79), hole = box(9.178, 48.777, 9.179, 48.778)
        _ = try await h.beacon(feature(name: "holed", perimeter: polygon([outer, hole])), owner: ann)
        let parts = [polygon([box(9.1, 48.7, 9.11, 48.71)]), polygon([box(9.2, 48.7, 9.21, 48.71), box(9.203, 48.703, 9.204, 48.704)])]
        _ = try await h.beacon(feature(name: "multi", perimeter: .object([
            "type": "MultiPolygon", "coordinates": .array(parts.map { $0["coordinates"]! }),
        ])), owner: ann)
        _ = try await h.beacon(feature(name: "round", perimeter: .object(["type": "Circle", "radius_m": 80])), owner: ann)
        let store = try #require(h.store as? any SQLStore)
        let rows = try await store.read { db in
            try await db.rows("SELECT id, area, AsBinary(area) AS wkb FROM beacons WHERE perimeter_kind <> 'circle' ORDER BY seq", [])
        }
        #expect(rows.count == 2)
        for row in rows {
            let native = try WKB.decodeSpatiaLitePolygons(try row.bytes("area"))
            let reference = try WKB.decodePolygons(try row.bytes("wkb"))
            let id = try row.string("id")
            #expect(native == reference, "\(id)")
        }
        // Truncated or foreign blobs are refused (the store then asks SpatiaLite for WKB).
        let blob = try rows[0].bytes("area")
        #expect(throws: WKB.DecodingError.self) { try WKB.decodeSpatiaLitePolygons(Array(blob.dropLast(9)) + [0xFE]) }
        #expect(throws: WKB.DecodingError.self) { try WKB.decodeSpatiaLitePolygons(try rows[0].bytes("wkb")) }
    }

    @Test(arguments: Backend.all) func refusesStaleVersions(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let b = try await h.beacon(feature(), owner: ann)
        var edited = b
        edited.name = "edited"
        edited.version = 2
        try await h.store.updateBeacon(edited, expectedVersion: 1, fanOut: nil)
        await #expect(throws: DBeaconError.self) { try await h.store.updateBeacon(edited, expectedVersion: 1, fanOut: nil) }
        await #expect(throws: DBeaconError.self) { try await h.store.deleteBeacon(id: b.id, expectedVersion: 1, fanOut: nil) }
        #expect(try await h.store.beacon(id: b.id)?.name == "edited")
    }

    @Test(arguments: Backend.all) func deletingCascadesToContext(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let target = try await h.beacon(feature(name: "t"), owner: ann)
        let source = try await h.beacon(feature(name: "s", relationships: [.object(["type": "related", "target": .string(target.id.rawValue)])]), owner: ann)
        #expect(try await h.store.follow(beacon: target.id, user: ann, at: h.clock.now()))
        try await h.store.deleteBeacon(id: target.id, expectedVersion: nil, fanOut: nil)
        #expect(try await h.store.beacon(id: source.id)?.relationships == [])
        #expect(try await h.store.isFollowing(beacon: target.id, user: ann) == false)
    }

    @Test(arguments: Backend.all) func importIsAllOrNothing(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let good = feature(name: "good")
        let bad = feature(name: "bad", lat: 95)
        let doc: JSONValue = .object(["type": "FeatureCollection", "features": [good, bad]])
        await #expect {
            try await h.beacons.importFeatures(doc, owner: ann)
        } throws: { ($0 as? DBeaconError)?.path == "features[1].geometry.coordinates[1]" }
        #expect(try await h.store.beaconCount() == 0)
    }

    @Test(arguments: Backend.all) func importsRelationshipCycles(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let a: JSONValue = .object(["type": "Feature", "id": "bcn_a",
                                    "geometry": .object(["type": "Point", "coordinates": [9, 48]]),
                                    "properties": .object(["name": "a", "relationships": [.object(["type": "related", "target": "bcn_b"])]])])
        let b: JSONValue = .object(["type": "Feature", "id": "bcn_b",
                                    "geometry": .object(["type": "Point", "coordinates": [9, 48]]),
                                    "properties": .object(["name": "b", "relationships": [.object(["type": "related", "target": "bcn_a"])]])])
        let imported = try await h.beacons.importFeatures(.object(["type": "FeatureCollection", "features": [a, b]]), owner: ann)
        #expect(imported.count == 2)
        #expect(try await h.store.beacon(id: BeaconID("bcn_a")!)?.relationships.first?.target == BeaconID("bcn_b"))
    }

    @Test(arguments: Backend.all) func listsWithVisibilityFiltersAndCursor(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, _) = try await h.user("ann")
        let (ben, _) = try await h.user("ben")
        for i in 0..<5 { try await h.beacon(feature(name: "pub\(i)", lon: 9 + Double(i) * 0.01, tags: i % 2 == 0 ? ["food"] : []), owner: ann) }
        try await h.beacon(feature(name: "private", members: []), owner: ann)
        try await h.beacon(feature(name: "expired", lifetime: (nil, "2020-01-01T00:00:00Z")), owner: ann)
        let benView = try await h.store.listBeacons(BeaconListQuery(limit: 100), viewer: .user(ben), now: h.clock.now())
        #expect(benView.items.map(\.name).sorted() == ["pub0", "pub1", "pub2", "pub3", "pub4"])
        let annView = try await h.store.listBeacons(BeaconListQuery(limit: 100), viewer: .user(ann), now: h.clock.now())
        #expect(annView.items.count == 7)
        let food = try await h.store.listBeacons(BeaconListQuery(tags: ["food"]), viewer: .user(ben), now: h.clock.now())
        #expect(food.items.map(\.name) == ["pub0", "pub2", "pub4"])
        let boxed = try await h.store.listBeacons(BeaconListQuery(bbox: BoundingBox(west: 9.005, south: 48, east: 9.025, north: 49)),
                                                  viewer: .user(ben), now: h.clock.now())
        #expect(boxed.items.map(\.name) == ["pub1", "pub2"])
        var seen: [String] = []
        var after: Int64?
        repeat {
            let page = try await h.store.listBeacons(BeaconListQuery(limit: 2, after: after), viewer: .user(ben), now: h.clock.now())
            seen += page.items.map(\.name)
            after = page.next
        } while after != nil
        #expect(seen == ["pub0", "pub1", "pub2", "pub3", "pub4"])
    }
}
