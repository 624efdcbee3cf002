import DBeaconCore
import Foundation
import Testing

/// Idle, slowloris and slow-body connections cannot take the server down (issue 11.7): a real
/// `dbeacon serve` with short timeouts, flooded from 127.0.0.2 by `scripts/connection-flood.py`
/// while it probes /healthz from 127.0.0.1.
@Suite(.serialized, .bounded) struct ConnectionLimitTests {
    @Test func idleAndSlowConnectionsAreClosedAndHealthStaysUp() async throws {
        let directory = try Scratch.directory("dbeacon-flood")
        let server = try await ServerProcess.start(db: directory.appendingPathComponent("f.sqlite").path,
                                                   log: directory.appendingPathComponent("serve.log"),
                                                   extra: ["--header-timeout", "1", "--body-timeout", "1",
                                                           "--max-connections-per-client", "40"])
        defer { server.stop() }
        let user = try await server.call(.POST, "/v1/users", token: PostgresMultiProcessTests.adminToken, json: ["name": "ann"])
        let token = try #require(user.json?["token"]?.stringValue)

        let report = try await runScript("connection-flood.py", [
            "--port", String(server.port), "--idle", "300", "--slow", "10", "--slow-body", "10", "--token", token,
            "--duration", "3",
        ])
        let probe = report["probe"]
        #expect(probe?["count"]?.numberValue ?? 0 >= 10)
        #expect(probe?["ok"] == probe?["count"], "health probes failed during the flood: \(JSONWriter.string(report))")
        #expect(report["opened"] == 320)
        #expect(report["still_open"] == 0, "connections outlived the timeouts: \(JSONWriter.string(report))")
        #expect((report["closed_after_s"]?["max"]?.numberValue ?? 99) < 2.5, "\(JSONWriter.string(report))")
    }
}

/// Runs a script of `scripts/` with the test Python and returns its JSON output.
func runScript(_ name: String, _ arguments: [String]) async throws -> JSONValue {
    try await runPython("scripts/\(name)", arguments, what: "scripts/\(name)")
}
