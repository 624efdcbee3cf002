import DBeaconApp
import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconHTTP
@_spi(Testing) import DBeaconServices
import DBeaconStore
import Testing

/// Nearby must agree with an independent reference (shapely/GEOS for polygons, GeographicLib
/// for circles, the contract's lifetime/visibility/tag rules re-implemented in Python) on
/// thousands of random points.
@Suite(.bounded) struct NearbyReferenceTests {
    @Test(arguments: Backend.all, [AppConfig.Engine.memory, .sql])
    func agreesWithShapelyAndGeographicLib(_ backend: Backend, engine: AppConfig.Engine) async throws {
        let h = try await TestHarness.make(backend: backend, engine: engine)
        var users: [UserID] = []
        for name in ["ann", "ben", "chen"] { users.append(try await h.user(name).id) }
        var generator = RandomBeacons(seed: 2026, users: users)
        let beacons = (0..<400).map { generator.beacon(index: $0) }
        for b in beacons {
            // Each random polygon is valid by construction; the codec's GEOS check must agree.
            let json = BeaconFeatureCodec.encode(VisibilityGate.unchecked(b))
            _ = try BeaconFeatureCodec.decodeDraft(json)
        }
        try await h.store.insertBeacons(beacons)
        let queries = generator.queries(count: 3000, beacons: beacons)

        let reference = try await runReference("nearby_reference.py", input: .object([
            "beacons": RandomBeacons.referenceJSON(beacons), "queries": .array(queries.map(\.referenceJSON)),
            "now": .number(Double(h.clock.now().millis)),
        ]))["results"]!.arrayValue!

        var mismatches = 0
        var nonEmpty = 0
        for (i, q) in queries.enumerated() {
            let expected = reference[i].arrayValue!.compactMap(\.stringValue)
            let found = try await h.beacons.nearby(point: q.point, tags: q.tags, at: q.at, limit: 100_000, by: q.viewer)
            let ids = found.map(\.beacon.id.rawValue).sorted()
            if !expected.isEmpty { nonEmpty += 1 }
            if ids != expected {
                mismatches += 1
                if mismatches <= 5 { Issue.record("query \(i) \(q.point) viewer \(q.viewer): got \(ids), expected \(expected)") }
            }
            // Nearest first.
            #expect(zip(found, found.dropFirst()).allSatisfy { $0.distanceM <= $1.distanceM })
        }
        #expect(mismatches == 0)
        // The test means something only if many queries find beacons.
        #expect(nonEmpty > queries.count / 3)
    }
}
