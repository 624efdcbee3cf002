import DBeaconCore
import Foundation
import Testing

/// `dbeacon user list|show|disable|enable|rotate-token|delete` and `dbeacon export` on the
/// database file, as the operator (issue 43).
@Suite(.bounded) struct AccountCLITests {
    @Test(arguments: Backend.all) func theOperatorManagesUsersFromTheCommandLine(_ backend: Backend) async throws {
        let db = try backend.freshDatabase(in: try Scratch.directory("dbeacon-cli-accounts"))
        let ann = try JSONParser.parse(try await CLI.run(["user", "add", "ann", "--db", db, "--json"]).out)
        _ = try await CLI.run(["user", "add", "ben", "--db", db])
        let annID = try #require(ann["id"]?.stringValue)

        let table = try await CLI.run(["user", "list", "--db", db])
        #expect(table.status == 0, "\(table.err)")
        #expect(table.out.contains("ann") && table.out.contains("ben") && table.out.contains("active"))
        let page = try JSONParser.parse(try await CLI.run(["user", "list", "--name-prefix", "A", "--json", "--db", db]).out)
        #expect(page["users"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["ann"])

        let shown = try await CLI.run(["user", "show", "ann", "--db", db])
        #expect(shown.status == 0 && shown.out.contains(annID) && shown.out.contains("beacons"))
        let disabled = try await CLI.run(["user", "disable", annID, "--json", "--db", db])
        #expect(try JSONParser.parse(disabled.out)["disabled"] == true)
        #expect(try JSONParser.parse(try await CLI.run(["user", "enable", "ann", "--json", "--db", db]).out)["disabled"] == false)

        let rotated = try JSONParser.parse(try await CLI.run(["user", "rotate-token", "ann", "--json", "--db", db]).out)
        #expect(rotated["token"]?.stringValue?.hasPrefix("dbt_") == true && rotated["token"] != ann["token"])
        let own = try await CLI.run(["user", "rotate-token", "--db", db])
        #expect(own.status != 0 && own.err.contains("name the user"))

        let file = Scratch.file("export", ext: "json")
        let exported = try await CLI.run(["export", "--user", "ann", "--output", file.path, "--db", db])
        #expect(exported.status == 0 && exported.out.contains("wrote"), "\(exported.err)")
        let document = try JSONParser.parse(Array(try Data(contentsOf: file)))
        #expect(document["profile"]?["id"] == .string(annID))
        #expect(try await CLI.run(["export", "--db", db]).status != 0, "the operator names the user")

        let unconfirmed = try await CLI.run(["user", "delete", "ann", "--db", db])
        #expect(unconfirmed.status != 0 && unconfirmed.err.contains("--yes"))
        let deleted = try await CLI.run(["user", "delete", "ann", "--yes", "--db", db])
        #expect(deleted.status == 0 && deleted.out.contains("erased \(annID)"), "\(deleted.err)")
        #expect(try await CLI.run(["user", "show", annID, "--db", db]).status != 0)
        let ambiguous = try await CLI.run(["user", "show", "nobody", "--db", db])
        #expect(ambiguous.status != 0 && ambiguous.err.contains("no user named nobody"))
    }
}
