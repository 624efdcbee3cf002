import AsyncHTTPClient
import DBeaconCore
import Foundation
import Testing

/// The event streams' notifier never polls (issue 44): it reads the log when events are
/// committed, and learns of other processes' commits from the store. A stream open on one
/// process gets an event another process committed; were it not woken, it would never read
/// the log again (a heartbeat does not read), and the bound below would fail.
@Suite(.serialized, .bounded) struct EventWakeTests {
    static let admin = PostgresMultiProcessTests.adminToken

    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func aStreamOnOneNodeWakesForAnotherNodesEvents() async throws {
        let directory = try Scratch.directory("dbeacon-wake-pg")
        let db = try Backend.postgis.freshDatabase(in: directory)
        let a = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("a.log"))
        defer { a.stop() }
        let b = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("b.log"))
        defer { b.stop() }
        let ann = try #require(try await a.call(.POST, "/v1/users", token: Self.admin, json: ["name": "ann"]).json?["token"]?.stringValue)
        let bob = try #require(try await a.call(.POST, "/v1/users", token: Self.admin, json: ["name": "bob"]).json?["token"]?.stringValue)
        let kiosk = try #require(try await a.call(.POST, "/v1/beacons", token: bob, json: feature(name: "kiosk")).json?["id"]?.stringValue)
        #expect(try await a.call(.POST, "/v1/beacons/\(kiosk)/followers", token: ann).status / 100 == 2)

        // Ann listens on B; Bob renames the kiosk through A: A's commit reaches B by NOTIFY.
        let stream = try await EventStreamTests.open(b.port, token: ann)
        #expect(stream.status == .ok)
        try await Task.sleep(for: .milliseconds(300)) // the stream has read the log and waits
        #expect(try await a.call(.PATCH, "/v1/beacons/\(kiosk)", token: bob, json: ["properties": ["name": "kiosk 2"]]).status == 200)
        let events = try await Self.read(stream, within: .seconds(10))
        #expect(events.contains { $0.type == "beacon.updated" }, "B's stream was not woken by A's commit: \(events)")
    }

    @Test func aServerStreamWakesForTheCLIsEventsOnItsFile() async throws {
        let directory = try Scratch.directory("dbeacon-wake-sl")
        let db = directory.appendingPathComponent("served.sqlite").path
        let server = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("serve.log"))
        defer { server.stop() }
        let ann = try #require(try await server.call(.POST, "/v1/users", token: Self.admin, json: ["name": "ann"]).json?["token"]?.stringValue)
        let bob = try #require(try await server.call(.POST, "/v1/users", token: Self.admin, json: ["name": "bob"]).json?["token"]?.stringValue)
        #expect(try await server.call(.POST, "/v1/beacons", token: bob, json: feature(name: "kiosk")).status == 201)

        let stream = try await EventStreamTests.open(server.port, token: ann)
        #expect(stream.status == .ok)
        try await Task.sleep(for: .milliseconds(300))
        // Ann's fix, reported by the CLI on the server's file: she enters the kiosk.
        let fix = try await CLI.run(["location", "--lat", "48.7784", "--lon", "9.18", "--as", "ann", "--db", db])
        #expect(fix.status == 0, "\(fix.err)")
        let events = try await Self.read(stream, within: .seconds(10))
        #expect(events.contains { $0.type == "beacon.entered" }, "the server's stream was not woken by the CLI's commit: \(events)")
    }

    /// The events that arrive on `stream` within `limit` (at least one, or none at the limit).
    static func read(_ stream: HTTPClientResponse, within limit: Duration) async throws -> [(id: String, type: String)] {
        try await withThrowingTaskGroup(of: [(id: String, type: String)].self) { group in
            group.addTask { try await EventStreamTests.read(stream, events: 1) }
            group.addTask {
                try await Task.sleep(for: limit)
                return []
            }
            let first = try await group.next() ?? []
            group.cancelAll()
            return first
        }
    }
}
