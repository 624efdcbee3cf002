import DBeaconCore
import Foundation
import HummingbirdTesting
import Testing

/// `dbeacon registry add/list/resolve` and `dbeacon sighting`, locally and through the API.
@Suite(.bounded) struct RegistryCLITests {
    @Test(arguments: Backend.all) func registersResolvesAndSightsOnTheLocalDatabase(_ backend: Backend) async throws {
        let dir = try Scratch.directory("dbeacon-cli")
        let db = try backend.freshDatabase(in: dir)
        #expect(try await CLI.run(["user", "add", "ann", "--db", db]).status == 0)
        let made = try await CLI.run(["beacon", "create", "--name", "Museum shop", "--lat", "48.7784", "--lon", "9.18", "--owner", "ann",
                                "--json", "--db", db])
        let beacon = try #require(try JSONParser.parse(made.out)["id"]?.stringValue)

        let added = try await CLI.run(["registry", "add", "--beacon", beacon, "--uuid", kontaktUUID, "--major", "100", "--minor", "7",
                                 "--lat", "48.7784", "--lon", "9.18", "--level", "0", "--measured-power", "-59", "--json", "--db", db])
        #expect(added.status == 0, "\(added.err)")
        #expect(try JSONParser.parse(added.out)["id"]?.stringValue?.hasPrefix("reg_") == true)
        let dup = try await CLI.run(["registry", "add", "--beacon", beacon, "--uuid", kontaktUUID, "--major", "100", "--minor", "7", "--db", db])
        #expect(dup.status == 1 && dup.err.contains("already registered"))

        let list = try await CLI.run(["registry", "list", "--db", db])
        #expect(list.out.contains("\(kontaktUUID)/100/7") && list.out.contains(beacon))

        let resolved = try await CLI.run(["registry", "resolve", "--uuid", kontaktUUID, "--major", "100", "--minor", "7", "--db", db])
        #expect(resolved.status == 0 && resolved.out.contains("Museum shop"), "\(resolved.err)")
        let missing = try await CLI.run(["registry", "resolve", "--uuid", kontaktUUID, "--major", "100", "--minor", "8", "--db", db])
        #expect(missing.status == 1 && missing.err.contains("not found"))

        let seen = try await CLI.run(["sighting", "--uuid", kontaktUUID, "--major", "100", "--minor", "7", "--rssi", "-65", "--as", "ann",
                                "--db", db])
        #expect(seen.status == 0, "\(seen.err)")
        #expect(seen.out.contains("Museum shop") && seen.out.contains("2.0 m") && seen.out.contains("near"))
        #expect(seen.out.contains("beacon.entered"))
        let raw = try await CLI.run(["sighting", "--adv", "0201061aff4c000215f7826da64fa24e988024bc5b71e0893e00640007c5", "--rssi", "-79",
                               "--as", "ann", "--json", "--db", db])
        let result = try JSONParser.parse(raw.out)["results"]?.arrayValue?.first
        #expect(result?["beacon"]?["id"] == .string(beacon) && result?["proximity"] == "far")
        let bad = try await CLI.run(["sighting", "--adv", "4c000216", "--rssi", "-79", "--as", "ann", "--db", db])
        #expect(bad.out.contains("malformed_frame"))
        #expect(try await CLI.run(["sighting", "--rssi", "-70", "--db", db]).status != 0, "an identity is required")
    }

    @Test(arguments: Backend.all) func worksThroughTheAPI(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, token) = try await h.user("owner")
        let b = try await h.beacon(feature(name: "Museum shop"), owner: owner)
        try await h.app().test(.live) { client in
            let env = ["DBEACON_SERVER": "http://127.0.0.1:\(client.port!)", "DBEACON_TOKEN": token]
            let added = try await CLI.run(["registry", "add", "--beacon", b.id.rawValue, "--uuid", kontaktUUID, "--major", "3"],
                                                  environment: env)
            #expect(added.status == 0, "\(added.err)")
            let resolved = try await CLI.run(["registry", "resolve", "--uuid", kontaktUUID, "--major", "3", "--minor", "9", "--json"],
                                       environment: env)
            #expect(try JSONParser.parse(resolved.out)["id"] == .string(b.id.rawValue), "\(resolved.err)")
            let seen = try await CLI.run(["sighting", "--uuid", kontaktUUID, "--major", "3", "--minor", "9", "--rssi", "-70"],
                                                 environment: env)
            #expect(seen.status == 0 && seen.out.contains("Museum shop") && seen.out.contains("beacon.entered"), "\(seen.err)")
        }
    }
}
