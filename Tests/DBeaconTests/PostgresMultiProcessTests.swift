import AsyncHTTPClient
import DBeaconCore
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Two real `dbeacon serve` processes on one PostgreSQL database (needs
/// `DBEACON_POSTGRES_URL`): writes made through one are seen by the other's in-memory index
/// within a second (LISTEN/NOTIFY), and the shared outbox delivers each event once.
@Suite(.serialized, .bounded) struct PostgresMultiProcessTests {
    static let adminToken = "multi-process-admin"

    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func twoServersShareOneDatabase() async throws {
        let directory = try Scratch.directory("dbeacon-mp")
        let db = try Backend.postgis.freshDatabase(in: directory)
        let receiver = try await WebhookReceiver.start()
        let a = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("a.log"))
        defer { a.stop() }
        let b = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("b.log"))
        defer { b.stop() }

        // Given users created through A and a webhook of ann's registered through B.
        let owner = try await a.call(.POST, "/v1/users", token: Self.adminToken, json: ["name": "owner"])
        let ann = try await a.call(.POST, "/v1/users", token: Self.adminToken, json: ["name": "ann"])
        let ownerToken = try #require(owner.json?["token"]?.stringValue)
        let annToken = try #require(ann.json?["token"]?.stringValue)
        let hook = try await b.call(.POST, "/v1/webhooks", token: annToken, json: ["url": .string(receiver.url), "events": ["*"]])
        #expect(hook.status == 201, "\(hook.json.map(JSONWriter.string) ?? "")")

        // When a beacon is created through A…
        let created = try await a.call(.POST, "/v1/beacons", token: ownerToken, json: feature(name: "kiosk", lat: 48.7784, lon: 9.18))
        #expect(created.status == 201)
        let id = try #require(created.json?["id"]?.stringValue)

        // …then B's nearby finds it within a second.
        let clock = ContinuousClock()
        let start = clock.now
        var foundOnB = false
        while clock.now - start < .seconds(1) {
            let nearby = try await b.call(.GET, "/v1/nearby?lat=48.7784&lon=9.1801", token: annToken)
            if nearby.json?["features"]?.arrayValue?.contains(where: { $0["id"]?.stringValue == id }) == true {
                foundOnB = true
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(foundOnB, "B's index did not learn of the beacon created through A within a second")

        // A deletion through B disappears from A's index too.
        let temporary = try await b.call(.POST, "/v1/beacons", token: ownerToken, json: feature(name: "stall", lat: 48.7784, lon: 9.18))
        let temporaryID = try #require(temporary.json?["id"]?.stringValue)
        #expect(try await a.eventually { try await $0.nearbyIDs(token: annToken).contains(temporaryID) })
        #expect(try await b.call(.DELETE, "/v1/beacons/\(temporaryID)", token: ownerToken).status == 204)
        #expect(try await a.eventually { try await !$0.nearbyIDs(token: annToken).contains(temporaryID) })

        // When ann follows and the owner edits the beacon through both servers, each event is
        // delivered exactly once although both servers run a deliverer on the same outbox.
        #expect(try await b.call(.POST, "/v1/beacons/\(id)/followers", token: annToken).status < 300)
        let edits = 12
        for i in 0..<edits {
            let server = i % 2 == 0 ? a : b
            let patch = try await server.call(.PATCH, "/v1/beacons/\(id)", token: ownerToken,
                                              json: ["properties": ["name": .string("kiosk \(i)")]])
            #expect(patch.status == 200)
        }
        let deadline = clock.now + .seconds(15)
        while receiver.received.count < edits && clock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .milliseconds(1500)) // time for any duplicate to arrive
        let ids = receiver.received.compactMap { $0.headers["webhook-id"] }
        #expect(ids.count == edits, "deliveries: \(ids.count), expected \(edits)")
        #expect(Set(ids).count == ids.count, "an event was delivered twice")
    }
}

extension PostgresMultiProcessTests {
    /// Fence state without sticky routing: one user's fixes land on alternate servers, yet each
    /// entry and exit is reported exactly once; a beacon edited through the server that did not
    /// receive the user's last fix still enters the standing user, once.
    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func fencesNeedNoStickyRouting() async throws {
        let directory = try Scratch.directory("dbeacon-mpf")
        let db = try Backend.postgis.freshDatabase(in: directory)
        let a = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("a.log"))
        defer { a.stop() }
        let b = try await ServerProcess.start(db: db, log: directory.appendingPathComponent("b.log"))
        defer { b.stop() }
        let owner = try #require(try await a.call(.POST, "/v1/users", token: Self.adminToken, json: ["name": "owner"]).json?["token"]?.stringValue)
        let ann = try #require(try await a.call(.POST, "/v1/users", token: Self.adminToken, json: ["name": "ann"]).json?["token"]?.stringValue)
        let created = try await a.call(.POST, "/v1/beacons", token: owner, json: feature(name: "kiosk", perimeter: circle(50)))
        let id = try #require(created.json?["id"]?.stringValue)
        #expect(try await b.eventually { try await $0.nearbyIDs(token: ann).contains(id) })

        // Inside, inside, outside, outside, inside, outside: alternating servers.
        let walk: [(ServerProcess, Double)] = [(a, 48.7784), (b, 48.7785), (a, 48.79), (b, 48.791), (a, 48.7784), (b, 48.792)]
        for (server, lat) in walk {
            let fix = try await server.call(.POST, "/v1/me/location", token: ann, json: ["lat": .number(lat), "lon": 9.18, "accuracy_m": 5])
            #expect(fix.status == 200, "\(fix.json.map(JSONWriter.string) ?? "")")
            try await Task.sleep(for: .milliseconds(5))
        }
        func fenceEvents() async throws -> [String] {
            try await a.call(.GET, "/v1/events?limit=100", token: ann).json?["events"]?.arrayValue?
                .compactMap { $0["type"]?.stringValue }.filter { $0.hasPrefix("beacon.") } ?? []
        }
        #expect(try await fenceEvents() == ["beacon.entered", "beacon.exited", "beacon.entered", "beacon.exited"])

        // Ann stands at 48.792 (her last fix went to B); the owner moves the beacon there through A.
        let moved = try await a.call(.PATCH, "/v1/beacons/\(id)", token: owner,
                                     json: ["geometry": ["type": "Point", "coordinates": [9.18, 48.792]]])
        #expect(moved.status == 200, "\(moved.json.map(JSONWriter.string) ?? "")")
        try await Task.sleep(for: .milliseconds(1500)) // time for a second node to (wrongly) re-evaluate too
        #expect(try await fenceEvents() == ["beacon.entered", "beacon.exited", "beacon.entered", "beacon.exited", "beacon.entered"])
        // And the next fix through B, still there, changes nothing; one step away exits once.
        _ = try await b.call(.POST, "/v1/me/location", token: ann, json: ["lat": 48.792, "lon": 9.18, "accuracy_m": 5])
        _ = try await a.call(.POST, "/v1/me/location", token: ann, json: ["lat": 48.80, "lon": 9.18, "accuracy_m": 5])
        #expect(try await fenceEvents() == ["beacon.entered", "beacon.exited", "beacon.entered", "beacon.exited", "beacon.entered",
                                            "beacon.exited"])

        // Concurrently, through both servers at once: fixes in and out of the beacon (in blocks of
        // five, 10 ms apart, arriving in any order). Whatever order they are decided in, entries
        // and exits strictly alternate: no node decides on a state another node already changed.
        let start = Date().addingTimeInterval(0.5)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                let server = i % 2 == 0 ? a : b
                let lat = (i / 5) % 2 == 0 ? 48.792 : 48.80
                let at = Timestamp(millis: Int64(start.timeIntervalSince1970 * 1000) + Int64(i) * 10).rfc3339
                group.addTask {
                    let fix = try await server.call(.POST, "/v1/me/location", token: ann,
                                                    json: ["lat": .number(lat), "lon": 9.18, "accuracy_m": 5, "timestamp": .string(at)])
                    #expect(fix.status == 200, "\(fix.json.map(JSONWriter.string) ?? "")")
                }
            }
            try await group.waitForAll()
        }
        let all = try await fenceEvents()
        #expect(all.count > 6, "\(all)")
        for (i, type) in all.enumerated() {
            #expect(type == (i % 2 == 0 ? "beacon.entered" : "beacon.exited"), "\(all)")
        }
    }
}

/// A `dbeacon serve` child process on a free loopback port.
struct ServerProcess: @unchecked Sendable {
    let process: ChildProcess
    let port: Int

    static func start(db: String, log: URL, extra: [String] = []) async throws -> ServerProcess {
        let port = try freePort()
        // A test's client may idle longer than the 10 s keep-alive limit on a loaded machine;
        // the tests of the limits give their own. So may a transaction take longer than the
        // 5 s database deadline there (a CI machine running the whole suite on two cores once
        // took that long for a batch of fence decisions): these tests are about what the nodes
        // decide, not how fast (the deadline's own tests are `DatabaseFaultTests`).
        let idle = extra.contains("--header-timeout") ? [] : ["--header-timeout", "300"]
        let database = extra.contains("--db-timeout") ? [] : ["--db-timeout", "30"]
        let process = try ChildProcess(CLI.executable.path,
                                       ["serve", "--db", db, "--port", String(port), "--admin-token", PostgresMultiProcessTests.adminToken,
                                        "--allow-private-webhooks", "--log-level", "warning"] + idle + database + extra,
                                       stdout: log, stderr: log)
        let server = ServerProcess(process: process, port: port)
        for _ in 0..<300 {
            if let health = try? await server.call(.GET, "/healthz"), health.status == 200 { return server }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        server.stop()
        throw DBeaconError.internalError("server did not start; log: " + ((try? String(contentsOf: log, encoding: .utf8)) ?? ""))
    }

    /// SIGTERM, and the server must be gone within 30 s (a graceful shutdown that hangs is a
    /// failure, then killed, never a hung test).
    func stop() {
        process.terminate()
        if process.wait(within: 30) == nil {
            Issue.record("the server (pid \(process.pid)) did not exit within 30 s of SIGTERM; killed")
            process.terminate(SIGKILL)
            process.wait()
        }
    }

    func call(_ method: HTTPMethod, _ path: String, token: String? = nil, json: JSONValue? = nil) async throws -> (status: Int, json: JSONValue?) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: JSONWriter.serialize(json)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 22)
        let text = String(buffer: body)
        return (Int(response.status.code), text.isEmpty ? nil : try? JSONParser.parse(text))
    }

    func nearbyIDs(token: String) async throws -> [String] {
        try await call(.GET, "/v1/nearby?lat=48.7784&lon=9.1801", token: token).json?["features"]?.arrayValue?
            .compactMap { $0["id"]?.stringValue } ?? []
    }

    /// Polls `condition` for up to a second.
    func eventually(_ condition: (ServerProcess) async throws -> Bool) async throws -> Bool {
        for _ in 0..<50 {
            if try await condition(self) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}

/// A TCP port that is free right now on 127.0.0.1.
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw DBeaconError.internalError("socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw DBeaconError.internalError("bind() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}
