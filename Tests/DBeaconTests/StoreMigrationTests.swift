import DBeaconApp
import DBeaconCore
import DBeaconHTTP
import DBeaconServices
import DBeaconStore
import Foundation
import Testing

/// `dbeacon migrate`: the sample deployment copied from SpatiaLite to PostGIS without loss.
@Suite(.bounded) struct StoreMigrationTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("samples").path

    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func copiesTheSampleDeploymentWithoutLoss() async throws {
        // Given the samples on SpatiaLite, with a follower, a webhook, events and a live location.
        let h = try await TestHarness.make { $0.samplesDirectory = Self.samples; $0.allowPrivateWebhooks = true }
        let all = try await h.store.listBeacons(BeaconListQuery(limit: 1000), viewer: .admin, now: h.clock.now()).items
        #expect(all.count > 5)
        let (ann, annToken) = try await h.user("ann")
        _ = try await h.beacons.follow(all[0].id, by: .user(ann))
        _ = try await h.services.webhooks.create(url: "http://127.0.0.1:9/hook", events: nil, scope: nil,
                                                 description: "demo", by: .user(ann))
        try await h.fix(ann, lat: all[0].location.lat, lon: all[0].location.lon)
        var edited = all[0]
        edited.name += " (edited)"
        edited.version += 1
        try await h.store.updateBeacon(edited, expectedVersion: all[0].version,
                                       fanOut: FollowerFanOut(type: .updated, data: ["n": 1], at: h.clock.now(), requireAlive: true))

        // When it is migrated to an empty PostGIS schema…
        let target = try Backend.postgis.freshDatabase(in: h.directory)
        // (in pages of at most 40 values, so every table with more than a few rows streams in several)
        let reports = try await StoreCopier.copy(from: h.services.config.databasePath, to: target, logger: TestHarness.logger,
                                                 pageValues: 40)

        // …every table has the same rows (count and checksum) on both sides…
        let mismatched = reports.filter { !$0.matches }.map(\.table)
        #expect(mismatched.isEmpty, "tables differing: \(mismatched)")
        #expect(reports.first { $0.table == "beacons" }?.targetRows == all.count)
        #expect((reports.first { $0.table == "outbox" }?.targetRows ?? 0) > 0)
        #expect(reports.first { $0.table == "registry_entries" }?.targetRows == 6)

        // …and a server on PostGIS answers as the SpatiaLite one did.
        var config = h.services.config
        config.databasePath = target
        config.samplesDirectory = nil
        let moved = try await AppServices.make(config, clock: h.clock, logger: TestHarness.logger)
        for beacon in try await h.store.listBeacons(BeaconListQuery(limit: 1000), viewer: .admin, now: h.clock.now()).items {
            #expect(try await moved.store.beacon(id: beacon.id) == beacon)
        }
        #expect(try await moved.auth.authenticate(token: annToken) == .user(ann))
        #expect(try await moved.store.events(recipient: ann, after: nil, limit: 100).items.map(\.id)
                == (try await h.store.events(recipient: ann, after: nil, limit: 100).items.map(\.id)))
        let registry = RegistryListQuery(limit: 100)
        #expect(try await moved.store.listRegistryEntries(registry, viewer: .admin, now: h.clock.now()).items
                == (try await h.store.listRegistryEntries(registry, viewer: .admin, now: h.clock.now()).items))
        let point = all[0].location
        let query = CoverQuery(point: point, at: h.clock.now(), viewer: .user(ann))
        #expect(Set(try await moved.store.coveringBeacons(query).map(\.id)) == Set(try await h.store.coveringBeacons(query).map(\.id)))

        // A second migration into the same (no longer empty) target is refused.
        await #expect(throws: DBeaconError.self) {
            _ = try await StoreCopier.copy(from: h.services.config.databasePath, to: target, logger: TestHarness.logger)
        }
    }
}
