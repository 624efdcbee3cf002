import AsyncHTTPClient
import DBeaconCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Account changes reach every process (issue 43): on PostgreSQL a token rotated, a user
/// disabled or erased through one node is refused by another on the very next request (no
/// node caches a user's token), and that node's open event streams of the old credential end;
/// on SpatiaLite a rotation or erasure made by the CLI on the server's file is refused by the
/// running server within a second (its change log says accounts changed).
@Suite(.serialized, .bounded) struct AccountNodesTests {
    static let admin = PostgresMultiProcessTests.adminToken

    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func everyNodeRefusesAnEndedCredentialAtOnce() async throws {
        let directory = try Scratch.directory("dbeacon-accounts-pg")
        let db = try Backend.postgis.freshDatabase(in: directory)
        let a = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("a.log"))
        defer { a.stop() }
        let b = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("b.log"))
        defer { b.stop() }
        let created = try await a.call(.POST, "/v1/users", token: Self.admin, json: ["name": "ann"])
        let id = try #require(created.json?["id"]?.stringValue), first = try #require(created.json?["token"]?.stringValue)
        let device = try #require(try await a.call(.POST, "/v1/me/devices", token: first, json: ["name": "phone"]).json?["token"]?.stringValue)
        // Both nodes have seen (and would have cached) the token.
        #expect(try await a.call(.GET, "/v1/me", token: first).status == 200)
        #expect(try await b.call(.GET, "/v1/me", token: first).status == 200)

        // A rotation through A: B refuses the old token on the next request, and ends its stream.
        let stream = try await EventStreamTests.open(b.port, token: first)
        #expect(stream.status == .ok)
        let second = try #require(try await a.call(.POST, "/v1/me/token", token: first).json?["token"]?.stringValue)
        #expect(try await b.call(.GET, "/v1/me", token: first).status == 401)
        #expect(try await b.call(.GET, "/v1/me", token: second).status == 200)
        #expect(try await AccountTests.ends(stream, within: .seconds(10)), "B kept the old token's stream open")

        // Disabled through A: B refuses the user's and the device's tokens, OsmAnd included.
        #expect(try await a.call(.PATCH, "/v1/users/\(id)", token: Self.admin, json: ["disabled": true]).status == 200)
        #expect(try await b.call(.GET, "/v1/me", token: second).status == 401)
        #expect(try await b.call(.GET, "/v1/me", token: device).status == 401)
        #expect(try await b.call(.GET, "/v1/osmand?id=\(device)&lat=48.7784&lon=9.18").status == 401)
        #expect(try await a.call(.PATCH, "/v1/users/\(id)", token: Self.admin, json: ["disabled": false]).status == 200)
        #expect(try await b.call(.GET, "/v1/me", token: device).status == 200)

        // Erased through B: A refuses both tokens at once, and its index drops the user's beacon.
        let kiosk = try #require(try await a.call(.POST, "/v1/beacons", token: second, json: feature(name: "kiosk")).json?["id"]?.stringValue)
        #expect(try await b.eventually { try await $0.nearbyIDs(token: Self.admin).contains(kiosk) })
        #expect(try await b.call(.DELETE, "/v1/me?confirm=\(id)", token: second).status == 200)
        #expect(try await a.call(.GET, "/v1/me", token: second).status == 401)
        #expect(try await a.call(.GET, "/v1/me", token: device).status == 401)
        #expect(try await a.eventually { try await !$0.nearbyIDs(token: Self.admin).contains(kiosk) }, "A's index kept the erased user's beacon")
        #expect(try await a.call(.GET, "/v1/users/\(id)", token: Self.admin).status == 404)
    }

    @Test func theServerRefusesWhatTheCLIEndedOnItsFile() async throws {
        let directory = try Scratch.directory("dbeacon-accounts-sl")
        let db = directory.appendingPathComponent("served.sqlite").path
        let server = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("serve.log"))
        defer { server.stop() }
        let created = try await server.call(.POST, "/v1/users", token: Self.admin, json: ["name": "ann"])
        let first = try #require(created.json?["token"]?.stringValue)
        #expect(try await server.call(.GET, "/v1/me", token: first).status == 200)  // cached now

        // The operator rotates ann's token with the CLI, on the same file.
        let rotated = try await CLI.run(["user", "rotate-token", "ann", "--db", db, "--json"])
        #expect(rotated.status == 0, "\(rotated.err)")
        let second = try #require(try JSONParser.parse(rotated.out)["token"]?.stringValue)
        #expect(try await server.eventually { try await $0.call(.GET, "/v1/me", token: first).status == 401 }, "the server kept the old token")
        #expect(try await server.call(.GET, "/v1/me", token: second).status == 200)

        // Disabled, then deleted, with the CLI.
        #expect(try await CLI.run(["user", "disable", "ann", "--db", db]).status == 0)
        #expect(try await server.eventually { try await $0.call(.GET, "/v1/me", token: second).status == 401 })
        #expect(try await CLI.run(["user", "enable", "ann", "--db", db]).status == 0)
        #expect(try await server.call(.GET, "/v1/me", token: second).status == 200)
        let deleted = try await CLI.run(["user", "delete", "ann", "--yes", "--db", db, "--json"])
        #expect(deleted.status == 0 && deleted.out.contains("\"erased\":true"), "\(deleted.out)\(deleted.err)")
        #expect(try await server.eventually { try await $0.call(.GET, "/v1/me", token: second).status == 401 })
    }
}
