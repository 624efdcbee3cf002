import DBeaconApp
import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconHTTP
@_spi(Testing) import DBeaconServices
import DBeaconIndex
import DBeaconStore
import Foundation
import Testing

/// The in-memory engine must answer exactly as the SQL reference path (SpatiaLite R*Tree +
/// `ST_Covers`) on the same random data — before and after creates, updates, deletes and
/// moves — and its edge-indexed polygons must agree with GEOS, boundaries included.
@Suite(.bounded) struct EngineEquivalenceTests {
    /// A star polygon with `vertices` vertices and a hole: large enough for `CompactPolygon`.
    static func largePolygon(_ g: inout RandomBeacons, at c: Position, vertices: Int) -> Perimeter {
        let outer = g.starRing(c, vertices: vertices, rMin: 0.01, rMax: 0.03)
        let hole = g.starRing(c, vertices: max(3, vertices / 10), rMin: 0.002, rMax: 0.006)
        return .polygon(Polygon(rings: [outer, hole]))
    }

    func compare(_ memory: any CoverageEngine, _ sql: any CoverageEngine, _ queries: [RandomQuery],
                 label: String, record: Bool = true) async throws -> Int {
        var mismatches = 0, nonEmpty = 0, formattedSeen = 0, largeSeen = 0, meetingSeen = 0
        var checkedText = Set<String>()
        for (n, q) in queries.enumerated() {
            let query = CoverQuery(point: q.point, tags: q.tags, at: q.at, viewer: q.viewer)
            let fromMemory = try await memory.covering(query).sorted { $0.id < $1.id }
            let fromSQL = try await sql.covering(query).sorted { $0.id < $1.id }
            // Large polygons' GeoJSON as the index keeps it formatted (read from its coordinate
            // file): a nearby answer made of it is byte for byte the one formatted from the store.
            let formatted = try await memory.coveringFormatted(query).sorted { $0.beacon.id < $1.beacon.id }
            formattedSeen += formatted.count { $0.perimeter != nil }
            largeSeen += fromSQL.count { $0.perimeter.vertexCount > MemoryCoverageEngine.largePolygonThreshold }
            func answer(_ results: [NearbyResult]) -> [UInt8] {
                NearbyEncoding.collection(results, cache: PerimeterJSONCache(capacity: 0))
            }
            let viaText = { answer(formatted.map { NearbyResult(beacon: VisibilityGate.unchecked($0.beacon), distanceM: 1, bearingDeg: 2, formattedPerimeter: $0.perimeter) }) }
            // (Once per beacon version: answers of thousands of vertices are slow to compare.)
            let unchecked = formatted.filter { $0.perimeter != nil && !checkedText.contains("\($0.beacon.id)@\($0.beacon.version)") }
            checkedText.formUnion(unchecked.map { "\($0.beacon.id)@\($0.beacon.version)" })
            // Written from the file (its text, or its coordinates and hints), not by the encoder's
            // fallback (formatting the coordinates), which would hide a broken path.
            for f in unchecked {
                let p = f.perimeter!
                var out = [UInt8](repeating: 0, count: p.jsonByteCount)
                if !out.withUnsafeMutableBytes({ p.writeJSON(to: $0) }) {
                    mismatches += 1
                    if record { Issue.record("\(label): \(f.beacon.id)'s perimeter cannot be written from the coordinate file") }
                }
            }
            if !unchecked.isEmpty, viaText() != answer(fromSQL.map { NearbyResult(beacon: VisibilityGate.unchecked($0), distanceM: 1, bearingDeg: 2) }) {
                mismatches += 1
                if record && mismatches <= 5 { Issue.record("\(label): \(q.point): the answer from formatted perimeters differs") }
            }
            let a = fromMemory.map(\.id.rawValue), b = fromSQL.map(\.id.rawValue)
            if !b.isEmpty { nonEmpty += 1 }
            if a != b {
                mismatches += 1
                if record && mismatches <= 5 { Issue.record("\(label): \(q.point) \(q.viewer) \(q.tags): memory \(a), sql \(b)") }
            } else if fromMemory != fromSQL {
                // The same beacons, rebuilt from the index's records and geometry, field for field.
                mismatches += 1
                if record && mismatches <= 5 {
                    for (x, y) in zip(fromMemory, fromSQL) where x != y { Issue.record("\(label): \(x.id) differs: memory \(x), sql \(y)") }
                }
            }
            // The regions search's candidates (every 25th query, a 1 km circle's boxes): the memory
            // engine's grid finds every beacon the store's spatial index finds, and others only
            // where a box rounded out to `Float` may meet the search's.
            if n % 25 == 0 {
                let boxes = Geodesy.boundingBoxes(center: q.point, radiusM: 1_000)
                let inMemory = try await memory.meeting(boxes, query), inSQL = try await sql.meeting(boxes, query)
                let ids = Set(inMemory.map(\.id)), sqlIDs = Set(inSQL.map(\.id))
                meetingSeen += sqlIDs.count
                let near = { (c: PerimeterCandidate) in
                    c.boxes.contains { b in boxes.contains { $0.intersects(BoundingBox(west: b.west - 1e-4, south: b.south - 1e-4,
                                                                                       east: b.east + 1e-4, north: b.north + 1e-4)) } }
                }
                if !sqlIDs.isSubset(of: ids) || inMemory.count != ids.count || !inMemory.filter({ !sqlIDs.contains($0.id) }).allSatisfy(near) {
                    mismatches += 1
                    if record && mismatches <= 5 { Issue.record("\(label): \(q.point): meeting: memory \(ids.count), sql \(sqlIDs.count)") }
                }
            }
        }
        #expect(nonEmpty > queries.count / 3, "\(label): too few queries find anything for the test to mean much")
        #expect(meetingSeen > queries.count / 25, "\(label): too few candidates near the queries for the test to mean much")
        print("\(label): \(meetingSeen) candidates near \(queries.count / 25) points")
        if !record {
            // A stale engine on purpose: its large polygons are not the store's.
        } else if let m = memory as? MemoryCoverageEngine, m.pendingCount == 0 {
            #expect(formattedSeen == largeSeen, "\(label): every large polygon found comes with its formatted text")
        } else if let m = memory as? MemoryCoverageEngine {
            // Loaded without them: formatted in each answer until `warm` has written them.
            #expect(formattedSeen == 0 && m.pendingCount > 0, "\(label)")
        }
        return mismatches
    }

    /// The city both equivalence tests start from: 500 random beacons (large polygons and
    /// multipolygons among them, services, fields only the index's records keep, beacons moving
    /// with their owner, one at the antimeridian) in the store and in a memory engine, and 1,500
    /// queries. `g` is left where the city's making left it.
    struct City {
        let h: TestHarness
        let memory: MemoryCoverageEngine
        let sql: SQLCoverageEngine
        let users: [UserID]
        var g: RandomBeacons
        var beacons: [Beacon]
        let queries: [RandomQuery]
    }

    func city(_ backend: Backend) async throws -> City {
        let h = try await TestHarness.make(backend: backend, engine: .memory)
        let memory = try #require(h.services.engine as? MemoryCoverageEngine)
        let sql = SQLCoverageEngine(store: h.store)
        var users: [UserID] = []
        for name in ["ann", "ben", "chen"] { users.append(try await h.user(name).id) }
        var g = RandomBeacons(seed: 6006, users: users)
        var beacons = (0..<500).map { g.beacon(index: $0) }
        // Large polygons (edge index), a tagged service, and circles across the antimeridian.
        for i in 0..<12 {
            beacons[i].perimeter = Self.largePolygon(&g, at: beacons[i].location, vertices: 300 + 150 * i)
        }
        // Large MultiPolygons: two regions apart, and one region alone (written as a MultiPolygon).
        for i in 12..<14 {
            let c = beacons[i].location
            let far = Position(lon: c.lon + 0.2, lat: c.lat + 0.02)
            let pair = [c, far].map { Self.largePolygon(&g, at: $0, vertices: 150 + 40 * i).polygons[0] }
            beacons[i].perimeter = .multiPolygon(i == 12 ? pair : [Self.largePolygon(&g, at: c, vertices: 500).polygons[0]])
        }
        for i in 12..<40 { beacons[i].service = i % 2 == 0 ? "tour" : "promotion" }
        // Fields the index keeps only in its records: they must come back as stored.
        for i in 40..<90 {
            beacons[i].description = "about \(i) – ✓"
            beacons[i].content = [ContentRef(kind: "web", url: "https://example.org/\(i)", title: i % 2 == 0 ? "t\(i)" : nil)]
            beacons[i].relationships = [Relationship(type: "related", target: beacons[i - 1].id, order: i % 3 == 0 ? i : nil)]
            beacons[i].contentPolicy = i % 2 == 0 ? .followers : .anyone
            beacons[i].tracksOwner = i % 5 == 0 && beacons[i].perimeter.polygons.isEmpty && beacons[i].owner != users[1]
        }
        beacons.append(Beacon(id: BeaconID(uncheckedRawValue: "bcn_dateline"), name: "dateline", owner: users[0],
                              location: Position(lon: 179.999, lat: -16.5), perimeter: .circle(radiusM: 900),
                              createdAt: RandomBeacons.base, updatedAt: RandomBeacons.base))
        try await h.store.insertBeacons(beacons)
        #expect(memory.count == beacons.count)

        var queries = g.queries(count: 1500, beacons: beacons)
        queries += [Position(lon: -179.999, lat: -16.5), Position(lon: 179.9999, lat: -16.501)].map {
            RandomQuery(point: $0, viewer: .user(users[0]), at: RandomBeacons.base, tags: [])
        }
        return City(h: h, memory: memory, sql: sql, users: users, g: g, beacons: beacons, queries: queries)
    }

    /// The memory engine answers as the store does once the city is inserted, bulk loaded, and
    /// loaded lazily (then warmed).
    @Test(arguments: Backend.all) func memoryAgreesWithSQLThroughLoads(_ backend: Backend) async throws {
        let city = try await city(backend)
        let (h, memory, sql, beacons, queries) = (city.h, city.memory, city.sql, city.beacons, city.queries)
        #expect(try await compare(memory, sql, queries, label: "after insert") == 0)

        // Without perimeters (the visibility gate's decisions): the same beacons field for field,
        // a circle's radius kept, a polygon's left empty; with them, the store's.
        let ids = beacons.map(\.id) + [BeaconID(uncheckedRawValue: "bcn_missing")]
        let bare = try await memory.beacons(ids: ids, perimeters: false)
        let full = try await memory.beacons(ids: ids, perimeters: true)
        let stored = try await sql.beacons(ids: ids).sorted { $0.id < $1.id }
        #expect(bare.map(\.id) == beacons.map(\.id) && full.sorted { $0.id < $1.id } == stored)
        for (b, f) in zip(bare, full) {
            var expected = f
            if case .circle = f.perimeter {} else { expected.perimeter = .multiPolygon([]) }
            #expect(b == expected, "\(b.id)")
        }

        // A fresh engine bulk-loaded from the store agrees too; it keeps large polygons' GeoJSON
        // as the text itself (`--perimeter-text formatted`), the others as hints.
        let loaded = MemoryCoverageEngine(store: h.store)
        loaded.hintedPerimeterText = false
        try await loaded.load(batchSize: 97)
        #expect(loaded.count == beacons.count)
        #expect(try await compare(loaded, sql, queries, label: "bulk load") == 0)

        // Loaded without rasters nor small polygons' summaries (the server's fast start-up):
        // large polygons answered by their compact edge test alone and small ones by their
        // edges alone agree, and so do they once `warm` has built their rasters and summaries,
        // the summaries those of the engine prepared at once.
        let lazy = MemoryCoverageEngine(store: h.store)
        try await lazy.load(batchSize: 97, prepare: false)
        let pending = lazy.pendingCount
        let polygons = beacons.filter { if case .circle = $0.perimeter { false } else { true } }
        let large = polygons.filter { $0.perimeter.vertexCount > MemoryCoverageEngine.largePolygonThreshold }.count
        let smallOneBox = polygons.filter {
            $0.perimeter.vertexCount <= MemoryCoverageEngine.largePolygonThreshold && MemoryCoverageEngine.boxes(of: $0).count == 1
        }.count
        #expect(pending == large + smallOneBox && large >= 14 && smallOneBox >= 100)
        let prepared = loaded.smallPolygonSummaries
        #expect(prepared.count == smallOneBox && prepared.values.filter { $0 != PolygonRaster.unsettled }.count >= smallOneBox / 2)
        #expect(lazy.smallPolygonSummaries.values.allSatisfy { $0 == PolygonRaster.unsettled })
        #expect(try await compare(lazy, sql, queries, label: "loaded, not prepared") == 0)
        #expect(await lazy.warm(batchSize: 50) == pending)
        #expect(lazy.pendingCount == 0)
        let warmed = lazy.smallPolygonSummaries
        #expect(warmed.count == prepared.count && warmed.allSatisfy { id, s in prepared[id].map { $0 == s } ?? false })
        #expect(try await compare(lazy, sql, queries, label: "loaded, then prepared") == 0)

    }

    /// The memory engine answers as the store does through updates, deletes and a beacon that
    /// moves with its owner.
    @Test(arguments: Backend.all) func memoryAgreesWithSQLThroughChanges(_ backend: Backend) async throws {
        let city = try await city(backend)
        let (h, memory, sql, users, queries) = (city.h, city.memory, city.sql, city.users, city.queries)
        var (g, beacons) = (city.g, city.beacons)
        // Updates (new perimeter, lifetime, tags, visibility) and deletes.
        var changed = 0
        for i in stride(from: 0, to: 300, by: 3) {
            var b = beacons[i]
            let replacement = g.beacon(index: 10_000 + i)
            b.perimeter = i % 30 == 0 ? Self.largePolygon(&g, at: b.location, vertices: 400) : replacement.perimeter
            b.lifetime = replacement.lifetime
            b.tags = replacement.tags
            b.members = replacement.members
            b.version += 1
            try await h.store.updateBeacon(b, expectedVersion: b.version - 1, fanOut: nil)
            beacons[i] = b
            changed += 1
        }
        for i in stride(from: 1, to: 300, by: 5) {
            try await h.store.deleteBeacon(id: beacons[i].id, expectedVersion: nil, fanOut: nil)
        }
        #expect(changed == 100)
        #expect(try await compare(memory, sql, queries, label: "after updates and deletes") == 0)

        // Moving beacons: a circle that tracks its owner follows the owner's fixes.
        var mover = g.beacon(index: 20_000)
        mover.id = BeaconID(uncheckedRawValue: "bcn_mover")
        mover.perimeter = .circle(radiusM: 300)
        mover.tracksOwner = true
        mover.owner = users[1]
        mover.members = nil
        mover.lifetime = nil
        try await h.store.insertBeacon(mover)
        let target = Position(lon: RandomBeacons.center.lon + 0.02, lat: RandomBeacons.center.lat - 0.01)
        try await h.fix(users[1], lat: target.lat, lon: target.lon)
        let near = Position(lon: target.lon + 0.001, lat: target.lat)
        let q = CoverQuery(point: near, at: h.clock.now(), viewer: .user(users[0]))
        #expect(try await memory.covering(q).contains { $0.id == mover.id })
        #expect(try await sql.covering(q).contains { $0.id == mover.id })
        #expect(try await compare(memory, sql, queries, label: "after a move") == 0)
        #expect(try await memory.trackingBeacons(owner: users[1]).map(\.id) == [mover.id])
    }

    /// The index keeps beacons' fields in its own records: a change the store makes on the side
    /// (a follower count) must reach them.
    @Test(arguments: Backend.all) func sideChangesReachTheIndexsCopies(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, engine: .memory)
        let memory = try #require(h.services.engine as? MemoryCoverageEngine)
        let ann = try await h.user("ann").id, ben = try await h.user("ben").id
        let b = try await h.beacon(feature(name: "cafe"), owner: ann)
        func same() async throws -> Bool {
            try await memory.beacons(ids: [b.id]) == (try await h.store.beacons(ids: [b.id]))
        }
        #expect(try await h.store.follow(beacon: b.id, user: ben, at: h.clock.now()))
        #expect(try await memory.beacons(ids: [b.id]).first?.followersCount == 1)
        #expect(try await same())
        #expect(try await h.store.unfollow(beacon: b.id, user: ben))
        #expect(try await memory.beacons(ids: [b.id]).first?.followersCount == 0)
        #expect(try await same())
    }

    /// A fix's exit cushion told from a large polygon's compact vertices in memory
    /// (`MemoryCoverageEngine.isWithin`, which spares reading the exact vertices from their
    /// file) is the exact test's answer (`PerimeterDistance.isWithin`) whenever it gives one,
    /// and it gives one for nearly every point: polygons with holes, a MultiPolygon, points
    /// inside, outside and a hair off the edges, cushions from 5 m to 2 km. Circles, small
    /// polygons and unknown ids are left to the exact test.
    @Test(arguments: Backend.all) func exitCushionsFromCompactVerticesAreExact(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, engine: .memory)
        let memory = try #require(h.services.engine as? MemoryCoverageEngine)
        let ann = try await h.user("ann").id
        var g = RandomBeacons(seed: 515, users: [ann])
        var decided = 0, undecided = 0, within = 0
        var first: Beacon?
        for round in 0..<8 {
            var b = g.beacon(index: round)
            b.id = BeaconID(uncheckedRawValue: "bcn_cushion\(round)")
            b.lifetime = nil
            b.members = nil
            let c = b.location
            b.perimeter = Self.largePolygon(&g, at: c, vertices: 300 + 60 * round)
            if round % 3 == 2, case .polygon(let first) = b.perimeter {
                let east = Position(lon: c.lon + 0.07, lat: c.lat)
                guard case .polygon(let second) = Self.largePolygon(&g, at: east, vertices: 280) else { return }
                b.perimeter = .multiPolygon([first, second])
            }
            try await h.store.insertBeacon(b)
            if first == nil { first = b }
            let perimeter = b.perimeter
            var points: [Position] = (0..<150).map { _ in
                Position(lon: c.lon + .random(in: -0.05...0.12, using: &g.rng), lat: c.lat + .random(in: -0.04...0.04, using: &g.rng))
            }
            // Near the edges: metres from a vertex or an edge's midpoint, either side.
            for polygon in perimeter.polygons {
                for ring in polygon.rings {
                    for i in stride(from: 0, to: ring.count - 1, by: 9) {
                        let a = ring[i], m = Position(lon: (a.lon + ring[i + 1].lon) / 2, lat: (a.lat + ring[i + 1].lat) / 2)
                        for base in [a, m] {
                            let metres = [0.01, 1, 4.9, 5, 20, 24.99, 25.01, 60, 300].randomElement(using: &g.rng)!
                            let angle = Double.random(in: 0..<(2 * .pi), using: &g.rng)
                            points.append(LocalFrame.offset(base, east: metres * cos(angle), north: metres * sin(angle)))
                        }
                    }
                }
            }
            for p in points {
                for limit in [5.0, 25, 100, 2000] {
                    let exact = PerimeterDistance.isWithin(limit, of: perimeter, center: c, point: p)
                    guard let told = memory.isWithin(limit, ofPerimeterOf: b.id, point: p) else {
                        undecided += 1
                        continue
                    }
                    decided += 1
                    if told { within += 1 }
                    #expect(told == exact, "round \(round) \(p) limit \(limit)")
                }
            }
        }
        // (Undecided: a point within centimetres of a cushion's edge, as many here are on purpose.)
        #expect(decided > 0 && undecided * 20 < decided, "\(undecided) undecided of \(decided + undecided)")
        #expect(within > decided / 10 && within < decided * 9 / 10)

        // A walk out of the first polygon through the fence engine: a fix inside enters it, one a
        // few metres out stays inside (the cushion, 25 m), one well beyond the cushion exits.
        let walked = try #require(first)
        let geos = try #require(PreparedPerimeter(walked.perimeter.polygons))
        var inside: Position?, held: Position?, beyond: Position?
        for a in walked.perimeter.polygons[0].exterior where inside == nil || held == nil || beyond == nil {
            for k in 0..<8 {
                let angle = Double(k) * .pi / 4
                for metres in [10.0, 80] {
                    let p = LocalFrame.offset(a, east: metres * cos(angle), north: metres * sin(angle))
                    if geos.covers(p) { inside = inside ?? p; continue }
                    let d = PerimeterDistance.outside(p, perimeter: walked.perimeter, center: walked.location, covered: false)
                    if d > 3 && d < 20 { held = held ?? p }
                    if d > 40 { beyond = beyond ?? p }
                }
            }
        }
        let (p0, p1, p2) = (try #require(inside), try #require(held), try #require(beyond))
        #expect(try await h.fix(ann, lat: p0.lat, lon: p0.lon).inside.contains(walked.id))
        #expect(try await h.fix(ann, lat: p1.lat, lon: p1.lon).inside.contains(walked.id))
        #expect(try await !h.fix(ann, lat: p2.lat, lon: p2.lon).inside.contains(walked.id))
        #expect(try await h.events(ann).filter { $0.beacon == walked.id }.map(\.type) == [.entered, .exited])
        // What the index keeps no compact vertices for: the exact test decides.
        var circle = g.beacon(index: 100)
        circle.perimeter = .circle(radiusM: 200)
        try await h.store.insertBeacon(circle)
        var small = g.beacon(index: 101)
        small.perimeter = Self.largePolygon(&g, at: small.location, vertices: 40)
        try await h.store.insertBeacon(small)
        for id in [circle.id, small.id, BeaconID(uncheckedRawValue: "bcn_unknown")] {
            #expect(memory.isWithin(25, ofPerimeterOf: id, point: circle.location) == nil)
        }
    }

    @Test func compactPolygonsAgreeWithGEOSOnBoundaries() throws {
        var g = RandomBeacons(seed: 77, users: [UserID(uncheckedRawValue: "usr_x")])
        let file = try CoordinateFile(creating: nil)
        var compactDecided = 0, exactDecided = 0
        for round in 0..<21 {
            let c = g.point()
            // The last round is the largest (40,000 vertices), with two-word runs.
            let vertices = round == 20 ? 40_000 : 300 + round * 40
            guard case .polygon(let polygon) = Self.largePolygon(&g, at: c, vertices: vertices) else { return }
            // The engine's compact form, its exact coordinates in a mapped file (or on the heap);
            // the largest with two-word runs (as polygons of over a million vertices have).
            let compact = CompactPolygon(polygon, file: round % 2 == 0 ? file : nil, wideRuns: round == 20)
            #expect(compact.polygon == polygon)
            #expect(!compact.isProvisional && compact.stripCount > 1)
            // As a load builds it (one provisional strip, every edge in it), and as the warm-up
            // finishes it (its strips built, its text written): the same answers throughout.
            let provisional = CompactPolygon(polygon, file: round % 2 == 0 ? file : nil, text: false, provisional: true,
                                             wideRuns: round == 20)
            #expect(provisional.isProvisional && provisional.stripCount == 1)
            // Its rings written to the file straight from their arrays (no contiguous copy), read back.
            #expect(provisional.polygon == polygon && (round % 2 != 0) == (file.offset(of: provisional.exact) == nil))
            let finished = try #require(provisional.finished())
            #expect(!finished.isProvisional && finished.stripCount == compact.stripCount && finished.finished() == nil)
            #expect(finished.polygon == polygon && finished.ringsJSON == compact.ringsJSON)
            let geos = try #require(PreparedPerimeter([polygon]))
            var points: [Position] = (0..<400).map { _ in
                Position(lon: c.lon + .random(in: -0.04...0.04, using: &g.rng), lat: c.lat + .random(in: -0.03...0.03, using: &g.rng))
            }
            // Vertices, edge midpoints and points a hair off the edges.
            for ring in polygon.rings {
                for i in stride(from: 0, to: ring.count - 1, by: round == 20 ? 211 : 7) {
                    let a = ring[i], b = ring[i + 1]
                    points.append(a)
                    points.append(Position(lon: (a.lon + b.lon) / 2, lat: (a.lat + b.lat) / 2))
                    points.append(Position(lon: (a.lon + b.lon) / 2 + 1e-12, lat: (a.lat + b.lat) / 2))
                    points.append(Position(lon: a.lon, lat: (a.lat + b.lat) / 2))
                    // Centimetres and less off the edge, on both sides: the compact coordinates
                    // (a step is about a decimetre here) cannot decide these; the exact ones must.
                    let len = ((b.lon - a.lon) * (b.lon - a.lon) + (b.lat - a.lat) * (b.lat - a.lat)).squareRoot()
                    if len > 0 {
                        let nx = -(b.lat - a.lat) / len, ny = (b.lon - a.lon) / len
                        for d in [1e-10, 1e-9, 1e-8, 5e-8, 3e-7] {
                            points.append(Position(lon: (a.lon + b.lon) / 2 + d * nx, lat: (a.lat + b.lat) / 2 + d * ny))
                            points.append(Position(lon: (a.lon + b.lon) / 2 - d * nx, lat: (a.lat + b.lat) / 2 - d * ny))
                        }
                    }
                }
            }
            // The raster may only say "inside"/"outside" where that is exactly true. It is built
            // over the grid entry's (rounded-out) box, as the engine builds it.
            let rasterBox = HierarchicalGrid<Int>.roundedOut(BoundingBox(of: polygon.exterior))
            let raster = PolygonRaster(polygons: [polygon], box: rasterBox) { x, y in
                compact.covers(lon: x, lat: y)
            }
            var inside = 0, settled = 0
            for p in points {
                let expected = geos.covers(p)
                if expected { inside += 1 }
                #expect(RayCrossing.covers(polygon, lon: p.lon, lat: p.lat) == expected, "every edge \(p) round \(round)")
                #expect(compact.covers(lon: p.lon, lat: p.lat) == expected, "compact \(p) round \(round)")
                #expect(provisional.covers(lon: p.lon, lat: p.lat) == expected, "provisional \(p) round \(round)")
                #expect(finished.covers(lon: p.lon, lat: p.lat) == expected, "finished \(p) round \(round)")
                // When the compact coordinates decide alone, they decide right.
                if let answer = compact.compactAnswer(lon: p.lon, lat: p.lat) {
                    compactDecided += 1
                    #expect(answer == expected, "compact alone \(p) round \(round)")
                } else {
                    exactDecided += 1
                }
                guard rasterBox.contains(p) else { continue }
                switch raster.classify(box: rasterBox, lon: p.lon, lat: p.lat) {
                case PolygonRaster.inside: settled += 1; #expect(expected, "raster inside \(p) round \(round)")
                case PolygonRaster.outside: settled += 1; #expect(!expected, "raster outside \(p) round \(round)")
                default: break
                }
            }
            #expect(inside > points.count / 10)
            #expect(settled > 0)
        }
        // A strip crossed by one long run of edges (a straight side of 10,000 vertices): runs
        // longer than a one-word run can count are split.
        let side = (0...10_000).map { Position(lon: 9.0 + Double($0) * 1e-6, lat: 48.0) }
        let sliver = Polygon(rings: [side + [Position(lon: 9.01, lat: 48.002), Position(lon: 9.0, lat: 48.002), side[0]]])
        let compactSliver = CompactPolygon(sliver, file: file)
        // Provisional too: its one strip holds the side's 10,000 edges in runs of at most 4,095.
        let provisionalSliver = CompactPolygon(sliver, file: file, text: false, provisional: true)
        let geosSliver = try #require(PreparedPerimeter([sliver]))
        var sliverPoints = (0..<2_000).map { _ in
            Position(lon: 8.9995 + .random(in: 0...0.011, using: &g.rng), lat: 47.9995 + .random(in: 0...0.003, using: &g.rng))
        }
        sliverPoints += side.enumerated().filter { $0.offset % 97 == 0 }.flatMap { [$0.element, Position(lon: $0.element.lon + 5e-7, lat: 48.0),
                                                                                Position(lon: $0.element.lon, lat: 48.0 + 1e-9)] }
        for p in sliverPoints {
            #expect(compactSliver.covers(lon: p.lon, lat: p.lat) == geosSliver.covers(p), "sliver \(p)")
            #expect(provisionalSliver.covers(lon: p.lon, lat: p.lat) == geosSliver.covers(p), "provisional sliver \(p)")
        }
        // A polygon of more holes than a load writes straight from the rings' arrays: copied
        // first instead, the same polygon and answers.
        let square = { (x: Double, y: Double, d: Double) -> Ring in
            [Position(lon: x, lat: y), Position(lon: x + d, lat: y), Position(lon: x + d, lat: y + d), Position(lon: x, lat: y + d),
             Position(lon: x, lat: y)]
        }
        let holes = (0..<40).map { i in square(9.0 + 0.002 * Double(i % 8) + 0.0005, 48.0 + 0.002 * Double(i / 8) + 0.0005, 0.001).reversed() as Ring }
        let holey = Polygon(rings: [square(9.0, 48.0, 0.016)] + holes)
        let provisionalHoley = CompactPolygon(holey, file: file, text: false, provisional: true)
        #expect(holey.rings.count > CompactPolygon.directRingLimit && provisionalHoley.polygon == holey)
        #expect(file.offset(of: provisionalHoley.exact) != nil)
        let geosHoley = try #require(PreparedPerimeter([holey]))
        for _ in 0..<2_000 {
            let p = Position(lon: 8.999 + .random(in: 0...0.018, using: &g.rng), lat: 47.999 + .random(in: 0...0.018, using: &g.rng))
            #expect(provisionalHoley.covers(lon: p.lon, lat: p.lat) == geosHoley.covers(p), "holey \(p)")
        }
        // Both paths of the compact test were taken: most points decided on 16-bit coordinates,
        // those on and next to edges on the exact ones.
        #expect(compactDecided > 5_000 && exactDecided > 1_000, "compact \(compactDecided), exact \(exactDecided)")
    }

    /// Small polygons are tested on their flat coordinate block, not through GEOS: the same
    /// answers as a GEOS prepared geometry, on vertices, edges, a hair off them, in holes, and
    /// for multipolygons.
    @Test func flatPerimeterAgreesWithGEOSOnBoundaries() throws {
        var g = RandomBeacons(seed: 78, users: [UserID(uncheckedRawValue: "usr_x")])
        for round in 0..<60 {
            let c = g.point()
            let outer = g.starRing(c, vertices: 8 + round, rMin: 0.002, rMax: 0.004)
            let hole = g.starRing(c, vertices: 5, rMin: 0.0005, rMax: 0.001)
            var polygons = [Polygon(rings: round % 2 == 0 ? [outer, hole] : [outer])]
            if round % 3 == 0 {
                let c2 = Position(lon: c.lon + 0.01, lat: c.lat)
                polygons.append(Polygon(rings: [g.starRing(c2, vertices: 12, rMin: 0.001, rMax: 0.003)]))
            }
            let flat = FlatPerimeter(polygons)
            let geos = try #require(PreparedPerimeter(polygons))
            var points: [Position] = (0..<300).map { _ in
                Position(lon: c.lon + .random(in: -0.006...0.016, using: &g.rng), lat: c.lat + .random(in: -0.005...0.005, using: &g.rng))
            }
            for polygon in polygons {
                for ring in polygon.rings {
                    for i in 0..<(ring.count - 1) {
                        let a = ring[i], b = ring[i + 1]
                        points.append(a)
                        points.append(Position(lon: (a.lon + b.lon) / 2, lat: (a.lat + b.lat) / 2))
                        points.append(Position(lon: (a.lon + b.lon) / 2 + 1e-12, lat: (a.lat + b.lat) / 2))
                        points.append(Position(lon: a.lon, lat: (a.lat + b.lat) / 2))
                    }
                }
            }
            // The 8×8 summary a small polygon's grid entry keeps, over the entry's (rounded-out)
            // box as the engine builds it: it may only say "inside"/"outside" where that is
            // exactly true, also on the lines between its blocks.
            let all = polygons.dropFirst().reduce(BoundingBox(of: polygons[0].exterior)) { $0.union(BoundingBox(of: $1.exterior)) }
            let box = HierarchicalGrid<Int>.roundedOut(all)
            let summary = PolygonRaster.summary(box: box, edgeBoxes: PolygonRaster.edgeBoxes(of: polygons)) { x, y in
                flat.covers(lon: x, lat: y)
            }
            for k in 0...8 {
                for t in stride(from: 0.0, through: 1.0, by: 1.0 / 64) {
                    let x = box.west + (box.east - box.west) * Double(k) / 8, y = box.south + (box.north - box.south) * t
                    let x2 = box.west + (box.east - box.west) * t, y2 = box.south + (box.north - box.south) * Double(k) / 8
                    points += [Position(lon: x, lat: y), Position(lon: x.nextDown, lat: y), Position(lon: x.nextUp, lat: y),
                               Position(lon: x2, lat: y2), Position(lon: x2, lat: y2.nextDown), Position(lon: x2, lat: y2.nextUp)]
                }
            }
            var inside = 0, settled = 0
            for p in points {
                let expected = geos.covers(p)
                if expected { inside += 1 }
                #expect(flat.covers(lon: p.lon, lat: p.lat) == expected, "\(p) round \(round)")
                switch PolygonRaster.classifyCoarse(summary, box: box, lon: p.lon, lat: p.lat) {
                case PolygonRaster.inside: settled += 1; #expect(expected, "summary inside \(p) round \(round)")
                case PolygonRaster.outside: settled += 1; #expect(!expected, "summary outside \(p) round \(round)")
                default: break
                }
            }
            #expect(inside > points.count / 10)
            #expect(settled > points.count / 10, "summary settled \(settled) of \(points.count) round \(round)")
            // Built directly on blocks, it settles no block the full raster's summary leaves open
            // the other way round.
            let full = PolygonRaster(polygons: polygons, box: box) { x, y in flat.covers(lon: x, lat: y) }.coarse
            for b in 0..<64 {
                let direct = ((b < 32 ? summary.0 : summary.1) >> UInt64((b & 31) * 2)) & 3
                let viaCells = ((b < 32 ? full.0 : full.1) >> UInt64((b & 31) * 2)) & 3
                #expect(direct == viaCells || direct == UInt64(PolygonRaster.unknown) || viaCells == UInt64(PolygonRaster.unknown),
                        "block \(b) round \(round)")
            }
        }
        #expect(PolygonRaster.classifyCoarse(PolygonRaster.unsettled, box: BoundingBox(west: 0, south: 0, east: 1, north: 1),
                                             lon: 0.5, lat: 0.5) == PolygonRaster.unknown)
    }

    /// Ranking drops far beacons before computing ellipsoidal distances; the answer must be
    /// exactly the full sort's.
    @Test func rankingPreselectionKeepsTheNearest() {
        var g = RandomBeacons(seed: 91, users: [UserID(uncheckedRawValue: "usr_x")], span: 0.1)
        let beacons = (0..<600).map { g.beacon(index: $0) }
        for _ in 0..<200 {
            let p = g.point()
            let limit = Int.random(in: 1...40, using: &g.rng)
            let ranked = BeaconService.rank(beacons, from: p, limit: limit)
            var full = beacons.map { b in (b.id, Geodesy.inverse(from: p, to: b.location).distance) }
            full.sort { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
            #expect(ranked.map(\.beacon.id) == full.prefix(limit).map(\.0))
            #expect(BeaconService.preselect(beacons, from: p, limit: limit).count < beacons.count)
        }
    }

    /// The nearby encoder splices cached perimeter JSON; the bytes must be exactly those of
    /// the plain tree encoding, and an edited beacon must not be served its old perimeter.
    @Test func nearbyEncodingWithCachedPerimetersIsExact() throws {
        var g = RandomBeacons(seed: 5, users: ["usr_x", "usr_y"].map { UserID(uncheckedRawValue: $0) })
        // Every optional part of a beacon (description, lifetime forms, members, relationships,
        // content, service, policies) in half of them.
        var beacons = (0..<60).map { $0 % 2 == 0 ? g.beacon(index: $0) : BeaconRecordTests.randomBeacon(&g, index: $0) }
        for i in 0..<10 { beacons[i].perimeter = Self.largePolygon(&g, at: beacons[i].location, vertices: 100 + 50 * i) }
        let cache = PerimeterJSONCache(capacity: 8)
        func plain(_ results: [NearbyResult], perimeters: Bool = true) -> [UInt8] {
            JSONWriter.serialize(BeaconFeatureCodec.collection(results.map { r in
                var properties = BeaconFeatureCodec.encodeProperties(r.beacon)
                if !perimeters { properties["perimeter"] = nil }
                properties["distance_m"] = .number(r.distanceM)
                properties["bearing_deg"] = .number(r.bearingDeg)
                return .object(JSONObject([("type", "Feature"), ("id", .string(r.beacon.id.rawValue)),
                                           ("geometry", GeoJSONCodec.encodePoint(r.beacon.location)),
                                           ("properties", .object(properties))]))
            }))
        }
        let results = beacons.enumerated().map { NearbyResult(beacon: VisibilityGate.unchecked($1), distanceM: 12.5 + Double($0) * 0.123456789, bearingDeg: 270) }
        #expect(NearbyEncoding.collection(results, cache: cache) == plain(results))
        #expect(NearbyEncoding.collection(results, includePerimeters: false, cache: cache) == plain(results, perimeters: false))
        #expect(NearbyEncoding.collection(results, cache: cache) == plain(results)) // from the cache
        var edited = results
        var changed = beacons[0]
        changed.perimeter = Self.largePolygon(&g, at: beacons[0].location, vertices: 120)
        changed.version += 1
        edited[0].beacon = VisibilityGate.unchecked(changed)
        #expect(NearbyEncoding.collection(edited, cache: cache) == plain(edited))
        #expect(try JSONParser.parse(NearbyEncoding.collection([], cache: cache))["features"]?.arrayValue?.isEmpty == true)
        // Perimeters handed over as formatted text are spliced in at their place; one whose
        // text cannot be read sends the answer back to formatting them all.
        let withText = results.enumerated().map { i, r in
            var t = r
            guard i % 3 == 0 else { return t }
            t.formattedPerimeter = TextPerimeter(perimeter: r.beacon.perimeter, readable: true)
            t.beacon = r.beacon.withPerimeter(.multiPolygon([]))
            return t
        }
        #expect(NearbyEncoding.collection(withText, cache: cache) == plain(results))
        var unreadable = withText
        unreadable[3].formattedPerimeter = TextPerimeter(perimeter: results[3].beacon.perimeter, readable: false)
        #expect(NearbyEncoding.collection(unreadable, cache: cache) == plain(results))
        // Bounded in bytes too: never more held than allowed, answers unchanged.
        let small = PerimeterJSONCache(capacity: 1_000, maxBytes: 40_000)
        for _ in 0..<3 {
            #expect(NearbyEncoding.collection(results, cache: small) == plain(results))
            #expect(small.bytes > 0 && small.bytes <= 40_000)
        }
    }

    /// Changes the engine never heard of (as when a PostgreSQL listener was disconnected) are
    /// picked up by `resync`: new beacons appear, edited ones change, deleted ones go.
    /// (The engine's own logic: the missed writes come from a second SpatiaLite connection that
    /// reports to nobody; on PostGIS every write notifies, so none could be missed on purpose.)
    @Test func resyncCatchesUpWithMissedChanges() async throws {
        let h = try await TestHarness.make(engine: .memory)
        let memory = try #require(h.services.engine as? MemoryCoverageEngine)
        let sql = SQLCoverageEngine(store: h.store)
        let ann = try await h.user("ann").id
        var g = RandomBeacons(seed: 404, users: [ann])
        var beacons = (0..<200).map { g.beacon(index: $0) }
        for i in 60..<66 { beacons[i].perimeter = Self.largePolygon(&g, at: beacons[i].location, vertices: 400 + 50 * i) }
        try await h.store.insertBeacons(beacons)
        // A second connection to the same file: its writes are not reported to the engine.
        let other = try SpatiaLiteStore(path: h.services.config.databasePath, synchronousFull: false)
        try await other.insertBeacons((200..<260).map { g.beacon(index: $0) })
        for b in beacons.prefix(40) { try await other.deleteBeacon(id: b.id, expectedVersion: nil, fanOut: nil) }
        var moved = beacons[50]
        moved.perimeter = .circle(radiusM: 3000)
        moved.version += 1
        try await other.updateBeacon(moved, expectedVersion: moved.version - 1, fanOut: nil)
        // A large polygon changed, and one changed without its version (a resync must compare
        // the geometry, not trust the version).
        var reshaped = beacons[60]
        reshaped.perimeter = Self.largePolygon(&g, at: reshaped.location, vertices: 500)
        reshaped.version += 1
        try await other.updateBeacon(reshaped, expectedVersion: reshaped.version - 1, fanOut: nil)
        var sameVersion = beacons[61]
        sameVersion.perimeter = Self.largePolygon(&g, at: sameVersion.location, vertices: 450)
        try await other.updateBeacon(sameVersion, expectedVersion: sameVersion.version, fanOut: nil)
        let queries = g.queries(count: 400, beacons: beacons)
        #expect(memory.count == 200)
        #expect(try await compare(memory, sql, queries, label: "before resync (stale on purpose)", record: false) > 0)
        let fileSize = { memory.memoryReport.first { $0.0 == "coordinate file" }?.1 ?? 0 }
        let before = fileSize()
        try await memory.resync()
        #expect(memory.count == 220)
        #expect(try await compare(memory, sql, queries, label: "after resync") == 0)
        // Only the two changed large polygons were written again, not the four unchanged ones.
        let grown = fileSize() - before
        #expect(grown > 0 && grown < before / 2, "the coordinate file grew by \(grown) bytes from \(before)")
    }
}

/// A perimeter's text as `GeoJSONCodec` writes it, readable or not.
struct TextPerimeter: FormattedPerimeter {
    let perimeter: Perimeter
    let readable: Bool
    var text: [UInt8] {
        var w = JSONWriter()
        GeoJSONCodec.writePerimeter(perimeter, into: &w)
        return w.bytes
    }
    var jsonByteCount: Int { text.count }
    func writeJSON(to out: UnsafeMutableRawBufferPointer) -> Bool {
        guard readable, out.count == jsonByteCount else { return false }
        text.withUnsafeBytes { out.copyMemory(from: $0) }
        return true
    }
}
