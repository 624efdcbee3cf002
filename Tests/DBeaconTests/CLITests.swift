import AsyncHTTPClient
import DBeaconCore
import Foundation
import HummingbirdTesting
import Testing

/// Runs the built `dbeacon` executable.
struct CLI {
    static var executable: URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("dbeacon"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("dbeacon"),
            Bundle.main.bundleURL.appendingPathComponent("dbeacon"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Exit status, stdout and stderr. Waiting for the child sleeps between looks and never
    /// blocks a thread of the cooperative pool: a server under test in this process (or any
    /// other test's work) may need every one of them, and a two-core machine has two.
    @discardableResult
    static func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, out: String, err: String) {
        let capture = CapturedOutput()
        defer { capture.remove() }
        let status = try await spawn(arguments, environment, capture).exit()
        return capture.result(status)
    }

    /// The CLI with this process's environment, less the server and token, plus `environment`.
    private static func spawn(_ arguments: [String], _ environment: [String: String], _ capture: CapturedOutput) throws -> ChildProcess {
        var env = ProcessInfo.processInfo.environment
        env["DBEACON_SERVER"] = nil
        env["DBEACON_TOKEN"] = nil
        for (k, v) in environment { env[k] = v }
        return try ChildProcess(executable.path, arguments, environment: env, stdout: capture.outURL, stderr: capture.errURL)
    }
}

/// Two temporary files standing in for a child process's stdout and stderr.
struct CapturedOutput {
    let base = Scratch.root.appendingPathComponent("dbeacon-out-\(UUID().uuidString)")
    var outURL: URL { base.appendingPathExtension("out") }
    var errURL: URL { base.appendingPathExtension("err") }

    func read() -> (Data, Data) {
        ((try? Data(contentsOf: outURL)) ?? Data(), (try? Data(contentsOf: errURL)) ?? Data())
    }

    /// The child's status with what it wrote, as text.
    func result(_ status: Int32) -> (status: Int32, out: String, err: String) {
        let (o, e) = read()
        return (status, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    func remove() {
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
    }
}

@Suite(.bounded) struct CLITests {
    /// A new database for the CLI's `--db`: a SpatiaLite file, or a fresh PostGIS schema.
    func tempDB(_ backend: Backend) throws -> String {
        let dir = try Scratch.directory("dbeacon-cli")
        return try backend.freshDatabase(in: dir)
    }

    @Test func helpIsWrittenForNewcomers() async throws {
        let root = try await CLI.run(["--help"])
        #expect(root.status == 0)
        for command in ["serve", "user", "import", "nearby", "beacon"] { #expect(root.out.contains(command)) }
        let nearby = try await CLI.run(["nearby", "--help"])
        #expect(nearby.out.contains("--lat") && nearby.out.contains("--tag") && nearby.out.contains("Example"))
    }

    @Test(arguments: Backend.all) func worksOnTheLocalDatabase(_ backend: Backend) async throws {
        let db = try tempDB(backend)
        let user = try await CLI.run(["user", "add", "ann", "--db", db, "--json"])
        #expect(user.status == 0, "\(user.err)")
        let created = try JSONParser.parse(user.out)
        #expect(created["id"]?.stringValue?.hasPrefix("usr_") == true)
        #expect(created["token"]?.stringValue?.isEmpty == false)

        let file = Scratch.file("import", ext: "geojson")
        let collection: JSONValue = .object(["type": "FeatureCollection", "features": [
            feature(name: "Currywurst stand", lat: 48.7786, lon: 9.1802, perimeter: circle(200), tags: ["food"]),
            feature(name: "Bakery", lat: 48.7790, lon: 9.1790, perimeter: circle(300), tags: ["food", "cafe"],
                    lifetime: (nil, "2099-01-01T00:00:00Z")),
            feature(name: "Bookshop", lat: 48.7784, lon: 9.1800, perimeter: circle(100), tags: ["shopping"]),
        ]])
        try Data(JSONWriter.serialize(collection)).write(to: file)
        let imported = try await CLI.run(["import", file.path, "--owner", "ann", "--db", db])
        #expect(imported.status == 0, "\(imported.err)")
        #expect(imported.out.contains("imported 3 beacons"))

        let table = try await CLI.run(["nearby", "--lat", "48.7784", "--lon", "9.1800", "--tag", "food", "--db", db])
        #expect(table.status == 0, "\(table.err)")
        let lines = table.out.split(separator: "\n")
        #expect(lines.first?.contains("NAME") == true && lines.first?.contains("ENDS IN") == true)
        #expect(lines.count == 4)
        #expect(lines[2].contains("Currywurst stand") && lines[2].contains("m"))
        #expect(lines[3].contains("Bakery") && lines[3].contains("food,cafe"))
        #expect(!table.out.contains("Bookshop"))

        let json = try await CLI.run(["nearby", "--lat", "48.7784", "--lon", "9.1800", "--json", "--db", db])
        let features = try JSONParser.parse(json.out)["features"]?.arrayValue ?? []
        #expect(features.count == 3)
        #expect(features.first?["properties"]?["name"] == "Bookshop")

        let list = try await CLI.run(["beacon", "list", "--tag", "food", "--json", "--db", db])
        let ids = (try JSONParser.parse(list.out)["features"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
        #expect(ids.count == 2)
        let one = try await CLI.run(["beacon", "get", ids[0], "--db", db])
        #expect(one.out.contains("Currywurst stand"))
        let made = try await CLI.run(["beacon", "create", "--name", "Kiosk", "--lat", "48.7", "--lon", "9.1", "--tag", "food",
                                "--owner", "ann", "--json", "--db", db])
        #expect(made.status == 0, "\(made.err)")
        let madeID = try JSONParser.parse(made.out)["id"]?.stringValue ?? ""
        #expect(try await CLI.run(["beacon", "delete", madeID, "--db", db]).status == 0)
        let gone = try await CLI.run(["beacon", "get", madeID, "--db", db])
        #expect(gone.status == 1)
        #expect(gone.err.contains("not found"))
    }

    @Test(arguments: Backend.all) func reportsBadInputClearly(_ backend: Backend) async throws {
        let db = try tempDB(backend)
        let bad = try await CLI.run(["nearby", "--lat", "95", "--lon", "9", "--db", db])
        #expect(bad.status != 0)
        #expect(bad.err.contains("--lat"))
        let file = Scratch.file("bad", ext: "geojson")
        try Data(#"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[9,48]},"properties":{}}]}"#.utf8).write(to: file)
        _ = try await CLI.run(["user", "add", "ann", "--db", db])
        let imported = try await CLI.run(["import", file.path, "--owner", "ann", "--db", db])
        #expect(imported.status == 1)
        #expect(imported.err.contains("features[0].properties.name"))
        // A server that is not there: say which, and what to try (not the HTTP client's words)
        let asked = Date()
        let away = try await CLI.run(["nearby", "--lat", "48.78", "--lon", "9.18", "--server", "http://127.0.0.1:1", "--token", "t"])
        // At once, not after the request's deadline (the HTTP client used to retry the refused
        // connection for 60 s); 30 s leaves room for a loaded machine.
        #expect(Date().timeIntervalSince(asked) < 30, "a refused connection reported after \(Date().timeIntervalSince(asked)) s")
        #expect(away.status == 1 && away.err.contains("cannot reach the DBeacon server at http://127.0.0.1:1")
                && away.err.contains("./scripts/run.sh") && !away.err.contains("errno"), "\(away.err)")
        let tokenless = try await CLI.run(["nearby", "--lat", "48.78", "--lon", "9.18"], environment: ["DBEACON_SERVER": "http://127.0.0.1:1"])
        #expect(tokenless.err.contains("export DBEACON_TOKEN"), "\(tokenless.err)")
        // --db on the command line wins over $DBEACON_SERVER
        #expect(try await CLI.run(["nearby", "--lat", "48.78", "--lon", "9.18", "--db", db],
                            environment: ["DBEACON_SERVER": "http://127.0.0.1:1", "DBEACON_TOKEN": "t"]).status == 0)
        // An empty --db (an unset shell variable) is refused before anything is opened or made.
        for arguments in [["nearby", "--lat", "48.78", "--lon", "9.18", "--db", ""], ["serve", "--db", "", "--port", "18998"]] {
            let empty = try await CLI.run(arguments)
            #expect(empty.status != 0 && empty.err.contains("--db must name a database file"), "\(arguments): \(empty.err)")
        }
    }

    @Test(arguments: Backend.all) func worksThroughTheAPI(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        try await h.app().test(.live) { client in
            let server = "http://127.0.0.1:\(client.port!)"
            let user = try await CLI.run(["user", "add", "ann", "--server", server, "--token", TestHarness.adminToken, "--json"])
            #expect(user.status == 0, "\(user.err)")
            let token = try JSONParser.parse(user.out)["token"]?.stringValue ?? ""
            let made = try await CLI.run(["beacon", "create", "--name", "Food truck", "--lat", "48.7784", "--lon", "9.18", "--radius", "80",
                                    "--tag", "food", "--server", server, "--token", token, "--json"])
            #expect(made.status == 0, "\(made.err)")
            let nearby = try await CLI.run(["nearby", "--lat", "48.7784", "--lon", "9.18", "--tag", "food"],
                                     environment: ["DBEACON_SERVER": server, "DBEACON_TOKEN": token])
            #expect(nearby.status == 0, "\(nearby.err)")
            #expect(nearby.out.contains("Food truck"))
            let denied = try await CLI.run(["user", "add", "eve", "--server", server, "--token", token])
            #expect(denied.status == 1)
            #expect(denied.err.contains("403"))
        }
    }

    /// The CLI reads every answer with DBeaconKit's schemas, so an answer that drifts from
    /// `schema/openapi.yaml` fails a command. Through the API, the commands the other CLI tests do
    /// not run, each with something in its list (a webhook delivery with a failed attempt too:
    /// the document once described a delivery the server never sent), and `--json` prints the
    /// server's own bytes.
    @Test(arguments: Backend.all) func everyListReadsWithTheDocumentsSchemas(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { c in
            c.allowPrivateWebhooks = true
        }
        try await h.app().test(.live) { client in
            let server = "http://127.0.0.1:\(client.port!)"
            let user = try await CLI.run(["user", "add", "ann", "--server", server, "--token", TestHarness.adminToken, "--json"])
            let env = ["DBEACON_SERVER": server, "DBEACON_TOKEN": try JSONParser.parse(user.out)["token"]?.stringValue ?? ""]
            func run(_ arguments: [String]) async throws -> String {
                let r = try await CLI.run(arguments, environment: env)
                #expect(r.status == 0, "dbeacon \(arguments.joined(separator: " ")): \(r.err)")
                return r.out
            }
            let made = try JSONParser.parse(try await run(["beacon", "create", "--name", "Food truck", "--lat", "48.7784", "--lon", "9.18",
                                                     "--radius", "80", "--tag", "food", "--json"]))
            let beacon = try #require(made["id"]?.stringValue)
            // Nothing listens on port 1 of loopback: every attempt is refused.
            let hook = try JSONParser.parse(try await run(["webhook", "add", "http://127.0.0.1:1/hook", "--event", "beacon.*", "--json"]))
            let webhook = try #require(hook["id"]?.stringValue)

            let fix = try await run(["location", "--lat", "48.7784", "--lon", "9.18"])
            #expect(fix.contains("inside: \(beacon)") && fix.contains("beacon.entered  Food truck  \(beacon)"), "\(fix)")
            #expect(try await run(["events"]).contains("beacon.entered"))
            #expect(try await run(["tags", "list"]).contains("food"))
            #expect(try await run(["tags", "follow", "food", "--radius", "1500"]).contains("\"radius_m\": 1500"))
            #expect(try await run(["tags", "following"]).contains("1500"))
            #expect(try await run(["tags", "unfollow", "food"]).contains("no longer following food"))
            #expect(!(try await run(["tags", "following"])).contains("food"))
            #expect(try await run(["regions", "--lat", "48.7784", "--lon", "9.18", "--max", "5"]).contains(beacon))
            #expect(try await run(["webhook", "list"]).contains(webhook))

            // The delivery of the entry, after its first attempt failed.
            #expect(try await h.services.deliverer.runOnce() == 1)
            let deliveries = try await run(["webhook", "deliveries", webhook])
            #expect(deliveries.contains("dlv_") && deliveries.contains("beacon.entered") && deliveries.contains("pending  1"),
                    "\(deliveries)")

            // --json: the very bytes the server answered.
            let json = try await run(["webhook", "deliveries", webhook, "--json"])
            var request = HTTPClientRequest(url: "\(server)/v1/webhooks/\(webhook)/deliveries?limit=20")
            request.headers.add(name: "Authorization", value: "Bearer \(env["DBEACON_TOKEN"]!)")
            let direct = try await HTTPClient.shared.execute(request, timeout: .seconds(30)).body.collect(upTo: 1 << 20)
            #expect(json == String(buffer: direct) + "\n")
        }
    }
}

/// Every example in every `--help` can be pasted as it is printed (issue 15): it is whole on its
/// lines (continued only by a trailing backslash), names no placeholder, and parses.
@Suite(.bounded) struct CLIHelpExamplesTests {
    static let commands: [[String]] = [
        [], ["serve"], ["user"], ["user", "add"], ["import"], ["nearby"], ["beacon"], ["beacon", "create"], ["beacon", "list"],
        ["beacon", "get"], ["beacon", "delete"], ["location"], ["events"], ["webhook"], ["webhook", "add"], ["meeting"],
        ["meeting", "create"], ["meeting", "list"], ["meeting", "nearby"], ["group"], ["group", "status"], ["tour"], ["tour", "show"],
        ["promo"], ["promo", "pick"], ["registry"], ["registry", "add"], ["registry", "list"], ["registry", "resolve"], ["sighting"],
        ["bench"], ["migrate"], ["user", "list"], ["user", "show"], ["user", "disable"], ["user", "enable"], ["user", "rotate-token"],
        ["user", "delete"], ["export"],
    ]

    @Test func everyExampleCanBePasted() async throws {
        var examples = 0
        for command in Self.commands {
            let help = try await CLI.run(command + ["--help"], environment: ["COLUMNS": "80"])
            #expect(help.status == 0, "\(command): \(help.err)")
            let lines = help.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            var i = 0
            while i < lines.count {
                defer { i += 1 }
                guard let start = lines[i].range(of: "dbeacon "), lines[i][..<start.lowerBound].allSatisfy({ $0 == " " })
                        || lines[i][..<start.lowerBound].hasSuffix("Example: ") else { continue }
                var text = String(lines[i][start.lowerBound...])
                while text.hasSuffix("\\"), i + 1 < lines.count {
                    i += 1
                    text = String(text.dropLast()) + " " + lines[i].trimmingCharacters(in: .whitespaces)
                }
                guard text.hasPrefix("dbeacon ") && !text.hasPrefix("dbeacon <") else { continue }
                examples += 1
                #expect(!text.contains("…"), "\(command): a placeholder in \(text)")
                let words = text.split(separator: " ").map { $0.replacingOccurrences(of: "'", with: "") }.dropFirst()
                let parsed = try await CLI.run(Array(words), environment: ["DBEACON_PARSE_ONLY": "1", "DBEACON_SERVER": "http://127.0.0.1:1",
                                                                     "DBEACON_TOKEN": "t"])
                #expect(parsed.status == 0, "\(command): `\(text)` does not parse: \(parsed.err)")
            }
        }
        #expect(examples >= 20, "found \(examples) examples")
    }
}
