import AsyncHTTPClient
import DBeaconCore
import Foundation
import Testing

/// A running `dbeacon serve` on a SpatiaLite file sees what the CLI writes to that file from
/// another process (issue 11.9): imports appear in nearby and enter standing users, deletions
/// vanish and enter nobody any more, within a second, without a restart.
@Suite(.serialized, .bounded) struct SpatiaLiteMultiProcessTests {
    @Test func theServerPicksUpTheCLIsWritesToItsFile() async throws {
        let directory = try Scratch.directory("dbeacon-sl-mp")
        let db = directory.appendingPathComponent("served.sqlite").path
        let server = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("serve.log"))
        defer { server.stop() }
        let admin = PostgresMultiProcessTests.adminToken
        #expect(try await server.call(.POST, "/v1/users", token: admin, json: ["name": "owner"]).status == 201)
        let ann = try #require(try await server.call(.POST, "/v1/users", token: admin, json: ["name": "ann"]).json?["token"]?.stringValue)

        // Ann stands at the Schlossplatz; nothing is there yet.
        let fix: JSONValue = ["lat": 48.7784, "lon": 9.1801, "accuracy_m": 5]
        #expect(try await server.call(.POST, "/v1/me/location", token: ann, json: fix).json?["inside"] == [])

        // When the operator imports a beacon around her with the CLI, on the same file…
        let file = directory.appendingPathComponent("kiosk.geojson")
        try Data(JSONWriter.serialize(.object(["type": "FeatureCollection", "features": [
            feature(name: "kiosk", lat: 48.7784, lon: 9.18, perimeter: circle(150), tags: ["food"]),
        ]]))).write(to: file)
        let imported = try await CLI.run(["import", file.path, "--owner", "owner", "--db", db, "--json"])
        #expect(imported.status == 0, "\(imported.err)")
        let id = try #require(try JSONParser.parse(imported.out)["ids"]?.arrayValue?.first?.stringValue, "\(imported.out)")

        // …the server's nearby finds it within a second, and ann, standing inside, enters it.
        #expect(try await server.eventually { try await $0.nearbyIDs(token: ann).contains(id) }, "nearby stayed stale")
        #expect(try await server.eventually { server in
            try await server.call(.GET, "/v1/events", token: ann).json?["events"]?.arrayValue?
                .contains { $0["type"] == "beacon.entered" && $0["data"]?["beacon"] == .string(id) } == true
        }, "the standing user was not entered")

        // When the CLI reports ann elsewhere on the same file, the server forgets the fence state
        // it held for her (it reloads), so coming back enters her again.
        let away = try await CLI.run(["location", "--lat", "48.7900", "--lon", "9.18", "--as", "ann", "--db", db, "--json"])
        #expect(away.status == 0 && away.out.contains("beacon.exited"), "\(away.out)\(away.err)")
        var reentered = false
        for _ in 0..<20 where !reentered {
            try await Task.sleep(for: .milliseconds(100))
            let back = try await server.call(.POST, "/v1/me/location", token: ann, json: fix)
            reentered = back.json?["events"]?.arrayValue?.contains { $0["type"] == "beacon.entered" } == true
        }
        #expect(reentered, "the server kept a stale fence state after the CLI's fix")

        // When the CLI deletes it, it leaves nearby within a second and enters nobody any more.
        #expect(try await CLI.run(["beacon", "delete", id, "--db", db]).status == 0)
        #expect(try await server.eventually { try await !$0.nearbyIDs(token: ann).contains(id) }, "a deleted beacon stayed in nearby")
        let bob = try #require(try await server.call(.POST, "/v1/users", token: admin, json: ["name": "bob"]).json?["token"]?.stringValue)
        let report = try await server.call(.POST, "/v1/me/location", token: bob, json: fix)
        #expect(report.json?["inside"] == [] && report.json?["events"] == [], "a deleted beacon produced \(report.json.map(JSONWriter.string) ?? "")")
    }

    /// SIGTERM is a graceful shutdown: every background service (deliverer, tickers, the poller
    /// for other processes' writes) stops without an error and the process exits with status 0;
    /// meanwhile its tasks ran on the event loops.
    @Test func sigtermShutsDownCleanly() async throws {
        let directory = try Scratch.directory("dbeacon-term")
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("serve.log")
        let server = try await ServerProcess.start(db: directory.appendingPathComponent("db.sqlite").path, log: log)
        try await Task.sleep(for: .milliseconds(300)) // the poller has polled at least once
        server.stop()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(server.process.terminationStatus == 0, "\(output)")
        #expect(!output.contains("Error"), "\(output)")
        // Its Swift tasks ran on the event loops (`EventLoopGlobalExecutor` installed its hook).
        #expect(!output.contains("could not be moved to the event loops"), "\(output)")
    }
}
