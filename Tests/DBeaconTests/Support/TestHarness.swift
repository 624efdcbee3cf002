import DBeaconApp
import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconHTTP
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// A fresh database in a temporary folder with the services wired as in production.
struct TestHarness {
    static let adminToken = "test-admin-token"
    let directory: URL
    let services: AppServices
    let clock: ManualClock

    static func make(backend: Backend = .spatialite, engine: AppConfig.Engine = .memory,
                     start: Timestamp = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!,
                     configure: (inout AppConfig) -> Void = { _ in }) async throws -> TestHarness {
        let directory = try Scratch.directory("dbeacon-test")
        var config = AppConfig()
        config.databasePath = try backend.freshDatabase(in: directory)
        config.adminToken = adminToken
        config.engine = engine
        config.port = 0
        config.synchronousFull = false
        config.runBackgroundServices = false
        // Tests drive many requests per second with one token; limits are tested on their own.
        config.rateLimits = .off
        // The whole suite runs in parallel on two cores against one PostgreSQL: a transaction may
        // queue for seconds, and on a machine at a third of its speed three PostGIS tests waited
        // past 60 s. The deadline itself is tested on its own (DatabaseFaultTests,
        // scripts/fault-test.py); each test stays bounded (.bounded, 12 min).
        config.databaseTimeoutSeconds = Backend.testDeadlineSeconds
        config.readinessTimeoutSeconds = Backend.testDeadlineSeconds
        // A live test's client keeps one connection; on a loaded machine it may wait longer than
        // the 10 s keep-alive idle limit between two requests, and the server would close it
        // under the test ("I/O on closed channel"). The limits are tested on their own
        // (ConnectionLimitTests, against a real `dbeacon serve`).
        config.connections.headerTimeoutSeconds = 300
        configure(&config)
        let clock = ManualClock(start)
        let services = try await AppServices.make(config, clock: clock, logger: Self.logger)
        return TestHarness(directory: directory, services: services, clock: clock)
    }

    static var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        return logger
    }

    var store: any AppStore { services.store }
    var beacons: BeaconService { services.beacons }
    var fences: FenceEngine { services.fences }

    /// Reports one fix at the clock's current time (or `at`).
    @discardableResult
    func fix(_ user: UserID, lat: Double, lon: Double, accuracy: Double = 5, at: Timestamp? = nil) async throws -> FixReport {
        try await fences.report(user: user, fixes: [LocationFix(position: Position(lon: lon, lat: lat), accuracyM: accuracy,
                                                               timestamp: at ?? clock.now())])
    }

    /// The events addressed to a user, oldest first.
    func events(_ user: UserID) async throws -> [Event] {
        try await store.events(recipient: user, after: nil, limit: 10_000).items
    }

    func app() -> some ApplicationProtocol {
        buildApplication(services, logger: Self.logger)
    }

    /// Creates a user; returns its id and token.
    func user(_ name: String = "user") async throws -> (id: UserID, token: String) {
        let (user, token) = try await services.auth.createUser(name: name)
        return (user.id, token)
    }

    /// Creates a beacon from a Feature built by `feature(...)`.
    @discardableResult
    func beacon(_ feature: JSONValue, owner: UserID) async throws -> Beacon {
        try await beacons.create(try BeaconFeatureCodec.decodeDraft(feature), owner: owner)
    }
}

/// Builds a beacon Feature for tests.
func feature(name: String = "b", lat: Double = 48.7784, lon: Double = 9.18, perimeter: JSONValue? = nil,
             tags: [String] = [], lifetime: (String?, String?)? = nil, members: [UserID]? = nil,
             relationships: [JSONValue] = [], extra: [(String, JSONValue)] = []) -> JSONValue {
    var properties: JSONObject = ["name": .string(name), "tags": .array(tags.map(JSONValue.string))]
    properties["perimeter"] = perimeter ?? circle(100)
    if let lifetime { properties["lifetime"] = .object(["start": .optional(lifetime.0), "end": .optional(lifetime.1)]) }
    if let members { properties["visibility"] = .object(["members": .array(members.map { .string($0.rawValue) })]) }
    if !relationships.isEmpty { properties["relationships"] = .array(relationships) }
    for (k, v) in extra { properties[k] = v }
    return .object(JSONObject([
        ("type", "Feature"),
        ("geometry", .object(["type": "Point", "coordinates": [.number(lon), .number(lat)]])),
        ("properties", .object(properties)),
    ]))
}

func circle(_ r: Double) -> JSONValue { .object(["type": "Circle", "radius_m": .number(r)]) }

/// A GeoJSON Polygon from rings of (lon, lat).
func polygon(_ rings: [[(Double, Double)]]) -> JSONValue {
    .object(["type": "Polygon", "coordinates": .array(rings.map { ring in .array(ring.map { [.number($0.0), .number($0.1)] }) })])
}

/// An axis-aligned rectangle ring (closed, counter-clockwise).
func box(_ w: Double, _ s: Double, _ e: Double, _ n: Double) -> [(Double, Double)] {
    [(w, s), (e, s), (e, n), (w, n), (w, s)]
}

/// A test HTTP response with its JSON body.
struct JSONResponse {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let json: JSONValue?
    let text: String

    var errorCode: String? { json?["error"]?["code"]?.stringValue }
    var errorPath: String? { json?["error"]?["path"]?.stringValue }
    var features: [JSONValue] { json?["features"]?.arrayValue ?? [] }
    var featureIDs: [String] { features.compactMap { $0["id"]?.stringValue } }
}

extension TestClientProtocol {
    /// Sends a request with an optional bearer token and JSON (or raw) body.
    func call(_ method: HTTPRequest.Method, _ uri: String, token: String? = nil, json: JSONValue? = nil,
              raw: String? = nil, headers extra: HTTPFields = [:]) async throws -> JSONResponse {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if let json { body = ByteBuffer(bytes: JSONWriter.serialize(json)) }
        if let raw { body = ByteBuffer(string: raw) }
        if body != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: body) { response in
            let text = String(buffer: response.body)
            return JSONResponse(status: response.status, headers: response.headers,
                                json: text.isEmpty ? nil : try? JSONParser.parse(text), text: text)
        }
    }
}

/// The repository's root folder.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// Runs a Python script of the repository with the test Python (`DBEACON_PYTHON`), its JSON
/// `input` (if any) on standard input, and returns its JSON output; a failure names `what`.
/// Awaited: the wait never blocks a thread of the cooperative pool.
func runPython(_ path: String, _ arguments: [String] = [], input: JSONValue? = nil, what: String) async throws -> JSONValue {
    let capture = CapturedOutput()
    let inputURL = capture.base.appendingPathExtension("in")
    if let input { try Data(JSONWriter.serialize(input)).write(to: inputURL) }
    defer {
        capture.remove()
        try? FileManager.default.removeItem(at: inputURL)
    }
    let python = ProcessInfo.processInfo.environment["DBEACON_PYTHON"] ?? "python3"
    let status = try await ChildProcess("/usr/bin/env", [python, repositoryRoot.appendingPathComponent(path).path] + arguments,
                                        stdin: input == nil ? nil : inputURL, stdout: capture.outURL, stderr: capture.errURL).exit()
    let (output, errors) = capture.read()
    guard status == 0 else { throw DBeaconError.internalError("\(what) failed: " + String(decoding: errors, as: UTF8.self)) }
    return try JSONParser.parse(Array(output))
}

/// Runs a Python reference script with a JSON input and returns its JSON output. The
/// reference libraries (shapely, geographiclib, standardwebhooks) come from PyPI; see
/// Tests/Reference/requirements.txt (installed by scripts/test.sh).
func runReference(_ script: String, input: JSONValue) async throws -> JSONValue {
    try await runPython("Tests/Reference/\(script)", input: input,
                        what: "reference script \(script) (pip install -r Tests/Reference/requirements.txt)")
}

/// A deterministic random generator (SplitMix64) so property tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
