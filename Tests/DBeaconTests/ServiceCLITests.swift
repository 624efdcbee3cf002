import DBeaconCore
import Foundation
import HummingbirdTesting
import Testing

@Suite(.bounded) struct ServiceCLITests {
    @Test(arguments: Backend.all) func serviceCommandsOnTheLocalDatabase(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, start: Timestamp.now()) { $0.samplesDirectory = samplesDirectory }
        let db = h.services.config.databasePath
        let (_, ann) = try await h.user("ann")
        let groupID = try await h.app().test(.router) { client in
            _ = try await client.call(.post, "/v1/me/location", token: ann, json: ["lat": 48.7784, "lon": 9.18])
            return try await client.call(.post, "/v1/groups", token: ann, json: ["name": "Walkers", "range_m": 150]).json?["id"]?
                .stringValue ?? ""
        }

        let tour = try await CLI.run(["tour", "show", "bcn_tour_old_town_walk", "--db", db, "--json"])
        #expect(tour.status == 0, "\(tour.err)")
        #expect(try JSONParser.parse(tour.out)["stops"]?.arrayValue?.count == 8)
        let table = try await CLI.run(["tour", "show", "bcn_tour_old_town_walk", "--db", db])
        #expect(table.out.contains("Jubiläumssäule") && table.out.contains("ORDER"), "\(table.out)")

        let pick = try await CLI.run(["promo", "pick", "--lat", "48.7753", "--lon", "9.1783", "--as", "usr_anna", "--db", db, "--json"])
        #expect(pick.status == 0, "\(pick.err)")
        #expect(try JSONParser.parse(pick.out)["promotion"]?["properties"]?["service"] == "promotion")

        let created = try await CLI.run(["meeting", "create", "--name", "Picnic", "--lat", "48.7812", "--lon", "9.1822", "--radius", "150",
                                   "--start", "2026-01-01T00:00:00Z", "--end", "2030-01-01T00:00:00Z", "--as", "usr_anna",
                                   "--db", db, "--json"])
        #expect(created.status == 0, "\(created.err)")
        let meetingID = try #require(try JSONParser.parse(created.out)["id"]?.stringValue)
        let list = try await CLI.run(["meeting", "list", "--as", "usr_anna", "--db", db, "--json"])
        #expect((try JSONParser.parse(list.out)["features"]?.arrayValue ?? []).contains { $0["id"] == .string(meetingID) })
        let nearby = try await CLI.run(["meeting", "nearby", "--lat", "48.7812", "--lon", "9.1822", "--as", "usr_ben", "--db", db])
        #expect(nearby.out.contains("Picnic"), "\(nearby.out)")

        let status = try await CLI.run(["group", "status", groupID, "--as", "ann", "--db", db])
        #expect(status.status == 0, "\(status.err)")
        #expect(status.out.contains("Walkers") && status.out.contains("leader"), "\(status.out)")
        let bad = try await CLI.run(["group", "status", groupID, "--as", "usr_ben", "--db", db])
        #expect(bad.status == 1 && bad.err.contains("not found"), "non-members get nothing")
    }
}
