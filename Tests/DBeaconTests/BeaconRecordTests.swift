import DBeaconApp
import DBeaconCore
import DBeaconHTTP
import DBeaconIndex
import Testing

/// The index keeps beacons as compact byte records (`BeaconRecord`) and rebuilds them for
/// answers: every field must come back exactly, whichever optional parts a beacon has.
@Suite(.bounded) struct BeaconRecordTests {
    static func randomBeacon(_ g: inout RandomBeacons, index: Int) -> Beacon {
        var b = g.beacon(index: index)
        let users = g.users
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &g.rng) ? value() : nil }
        b.description = maybe("desc \(index) – ünïcødé ✓ \"quoted\"")
        b.tracksOwner = Bool.random(using: &g.rng)
        b.contentPolicy = ContentPolicy.allCases.randomElement(using: &g.rng)!
        b.service = maybe(["tour", "promotion", "meeting"].randomElement(using: &g.rng)!)
        b.followersCount = Int.random(in: 0...100_000, using: &g.rng)
        b.version = Int.random(in: 1...1_000_000, using: &g.rng)
        b.createdAt = Timestamp(millis: Int64.random(in: -10_000_000_000_000...10_000_000_000_000, using: &g.rng))
        b.updatedAt = Timestamp(millis: Int64.random(in: 0...4_000_000_000_000, using: &g.rng))
        switch Int.random(in: 0..<4, using: &g.rng) {
        case 0: b.lifetime = nil
        case 1: b.lifetime = Lifetime(start: nil, end: nil)
        case 2: b.lifetime = Lifetime(start: Timestamp(millis: -5), end: nil)
        default: b.lifetime = Lifetime(start: nil, end: Timestamp(millis: 1_764_000_000_123))
        }
        if Bool.random(using: &g.rng) { b.members = Bool.random(using: &g.rng) ? [] : g.users }
        b.tags = (0..<Int.random(in: 0...70, using: &g.rng)).map { "tag-\($0)" }
        b.relationships = (0..<Int.random(in: 0...3, using: &g.rng)).map { i in
            Relationship(type: i == 0 ? "tour" : "related", target: BeaconID(uncheckedRawValue: "bcn_t\(i)"),
                         order: i == 0 ? Int.random(in: -5...500, using: &g.rng) : nil)
        }
        b.content = (0..<Int.random(in: 0...3, using: &g.rng)).map { (i: Int) -> ContentRef in
            let title: String? = i == 1 ? nil : "title \(i)"
            let addedBy: UserID? = i == 2 ? users.first : nil
            let createdAt: Timestamp? = i == 0 ? nil : Timestamp(millis: 1_700_000_000_000 + Int64(i))
            return ContentRef(kind: "image", url: "https://example.org/\(index)/\(i).jpg", title: title, addedBy: addedBy,
                              createdAt: createdAt)
        }
        return b
    }

    /// Updates leave old records behind in the engine's arena; once they are half of it, it is
    /// compacted (records move): every beacon must still come back as last written.
    @Test func beaconsComeBackAfterTheRecordArenaIsCompacted() async throws {
        let h = try await TestHarness.make(engine: .memory)
        let users = ["usr_a", "usr_b"].map { UserID(uncheckedRawValue: $0) }
        var g = RandomBeacons(seed: 41, users: users)
        let engine = MemoryCoverageEngine(store: h.store)
        var beacons = (0..<50).map { Self.randomBeacon(&g, index: $0) }
        for b in beacons { engine.apply(.upsert(b)) }
        // ~2 KiB records, rewritten until well past a compaction (1 MiB of garbage).
        for round in 0..<30 {
            for i in beacons.indices {
                beacons[i].description = String(repeating: "\(round)-\(i) ", count: 300)
                beacons[i].version += 1
                engine.apply(.upsert(beacons[i]))
            }
            if round % 7 == 0 { engine.apply(.move(beacons[0].id, Position(lon: 9.2, lat: 48.8 + Double(round) * 1e-4))) }
            if round % 7 == 0 { beacons[0].location = Position(lon: 9.2, lat: 48.8 + Double(round) * 1e-4) }
        }
        let back = try await engine.beacons(ids: beacons.map(\.id))
        #expect(back.count == beacons.count)
        for (a, b) in zip(back, beacons) {
            // A move changes only the location (circles move with it; polygons stay).
            #expect(a == b, "\(b.id)")
        }
        // ~3 MB of records were written: without compaction the arena would hold them all.
        #expect(engine.recordArenaBytes < 2_300_000, "the arena was compacted: \(engine.recordArenaBytes) bytes")
    }

    @Test func everyFieldComesBack() {
        let users = ["usr_a", "usr_b", "usr_c"].map { UserID(uncheckedRawValue: $0) }
        var g = RandomBeacons(seed: 31, users: users)
        for i in 0..<2_000 {
            let b = Self.randomBeacon(&g, index: i)
            var bytes: [UInt8] = [9, 9] // appended after what is there
            BeaconRecord.encode(b, into: &bytes)
            #expect(bytes.prefix(2) == [9, 9])
            let back = bytes.withUnsafeBytes {
                BeaconRecord.decode(UnsafeRawBufferPointer(rebasing: $0[2...]), id: b.id, location: b.location, perimeter: b.perimeter)
            }
            #expect(back == b, "beacon \(i)")
            // What decisions read, decoded alone (the gate's).
            let facts = bytes.withUnsafeBytes { BeaconRecord.decodeFacts(UnsafeRawBufferPointer(rebasing: $0[2...])) }
            #expect(facts == BeaconFacts(b), "beacon \(i)")
        }
    }

    /// The gate decides on what the rule reads of each beacon (`facts`): the index's facts are
    /// the stored beacons' own, missing ids left out.
    @Test(arguments: Backend.all) func factsAreTheStoredBeacons(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, engine: .memory)
        var users: [UserID] = []
        for name in ["ann", "ben", "cy"] { users.append(try await h.user(name).id) }
        var g = RandomBeacons(seed: 32, users: users)
        let beacons = (0..<60).map { i in
            var b = Self.randomBeacon(&g, index: i)
            b.relationships = [] // (their targets would have to exist)
            if b.lifetime == Lifetime(start: nil, end: nil) { b.lifetime = nil } // (the store keeps no empty lifetime)
            b.content = b.content.map { var c = $0; c.addedBy = nil; return c }
            return b
        }
        for b in beacons { try await h.store.insertBeacon(b) }
        let ids = beacons.map(\.id) + [BeaconID(uncheckedRawValue: "bcn_missing")]
        let fromIndex = try await h.services.engine.facts(ids: ids)
        let fromStore = try await SQLCoverageEngine(store: h.store).facts(ids: ids)
        #expect(fromIndex.count == beacons.count && fromStore.count == beacons.count)
        for b in beacons {
            #expect(fromIndex[b.id] == fromStore[b.id] && fromIndex[b.id] != nil, "\(b.id)")
        }
    }
}
