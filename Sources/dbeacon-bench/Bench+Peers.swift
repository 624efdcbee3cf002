import ArgumentParser
import AsyncHTTPClient
import DBeaconCore
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// One speed target as a ratio: side A measured against side B in the same run, alternating
/// (A, B, A, B, …) so that the machine's drift cancels (issue 46).
struct PeerRatio {
    /// Its key for `--ratios` (`PeerRatioKey`).
    var key = ""
    var name: String
    var a: String
    var b: String
    /// The target (A ÷ B at least this), if the issue set one.
    var target: Double?
    var aRates: [Double] = []
    var bRates: [Double] = []
    var aP99ms: [Double] = []
    var bP99ms: [Double] = []
    /// Bytes per answer of A (nil: not measured).
    var aBytes: Double?

    var ratio: Double? {
        let b = bRates.reduce(0, +)
        return b > 0 ? aRates.reduce(0, +) / b : nil
    }

    static func mean(_ v: [Double]) -> Double? { v.isEmpty ? nil : v.reduce(0, +) / Double(v.count) }

    var json: JSONValue {
        func n(_ v: Double?) -> JSONValue { v.map { .number(($0 * 1000).rounded() / 1000) } ?? .null }
        return .object(JSONObject([
            ("key", .string(key)), ("name", .string(name)), ("a", .string(a)), ("b", .string(b)), ("ratio", n(ratio)), ("target", n(target)),
            ("met", target.flatMap { t in ratio.map { .bool($0 >= t) } } ?? .null),
            ("a_requests_per_sec", .array(aRates.map { n($0) })), ("b_requests_per_sec", .array(bRates.map { n($0) })),
            ("a_p99_ms", n(Self.mean(aP99ms))), ("b_p99_ms", n(Self.mean(bP99ms))), ("a_bytes_per_answer", n(aBytes)),
        ]))
    }
}

/// `dbeacon bench --peers`: the ratios of issue 46 for one N.
struct PeerResult {
    var beacons: Int
    var rounds: Int
    var duration: Double
    var ratios: [PeerRatio] = []

    var json: String {
        JSONWriter.string(.object(JSONObject([
            ("beacons", .number(Double(beacons))), ("rounds", .number(Double(rounds))), ("seconds_per_run", .number(duration)),
            ("ratios", .array(ratios.map(\.json))),
        ])))
    }

    static func table(_ results: [PeerResult]) -> String {
        var out = "| N | ratio | A req/s (mean) | B req/s (mean) | A ÷ B | target | A p99 |\n|---|---|---:|---:|---:|---:|---:|\n"
        for r in results {
            for p in r.ratios {
                let target = p.target.map { String(format: "≥ %.2f", $0) } ?? "—"
                let met = p.target.flatMap { t in p.ratio.map { $0 >= t ? " ✓" : " ✗" } } ?? ""
                out += String(format: "| %@ | %@ | %.0f | %.0f | **%.2f**%@ | %@ | %.1f ms |\n",
                              r.beacons.formatted() as NSString, p.name as NSString, PeerRatio.mean(p.aRates) ?? 0,
                              PeerRatio.mean(p.bRates) ?? 0, p.ratio ?? 0, met as NSString, target as NSString,
                              PeerRatio.mean(p.aP99ms) ?? 0)
            }
        }
        return out
    }
}

extension BenchRun {
    /// Points the recorded answers are for (the same for the server and nginx).
    static let peerPoints = 300

    /// Measures every ratio: the server under test (started from its snapshot, its index
    /// prepared) against nginx serving the very answers it gave, and against its own cheaper
    /// endpoints. Each pair runs `--peer-rounds` times, alternating.
    func peers() async throws -> PeerResult {
        var data = BenchResult()
        try await generate(into: &data)
        guard let wrk = Self.which("wrk") else { throw ValidationError("--peers needs wrk (apt-get install wrk)") }
        guard let nginx = Self.which("nginx") ?? ["/usr/sbin/nginx"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw ValidationError("--peers needs nginx (apt-get install nginx-light)")
        }
        let process = try await startPreparedServer()
        defer {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
        let base = "http://127.0.0.1:\(command.port)"

        // The answers for a few hundred random points, recorded from the server for nginx.
        let folder = URL(fileURLWithPath: "\(command.workdir)/peers-\(count)").standardizedFileURL.path
        try? FileManager.default.removeItem(atPath: folder)
        for sub in ["full", "lean", "logs", "tmp"] {
            try FileManager.default.createDirectory(atPath: "\(folder)/\(sub)", withIntermediateDirectories: true)
        }
        var rng = SplitMix64(seed: command.seed ^ 0x9e37_79b9)
        var points: [(query: String, token: String)] = []
        for i in 0..<Self.peerPoints {
            let lat = BenchCity.center.lat + .random(in: -BenchCity.halfLat...BenchCity.halfLat, using: &rng)
            let lon = BenchCity.center.lon + .random(in: -BenchCity.halfLon...BenchCity.halfLon, using: &rng)
            points.append((String(format: "lat=%.6f&lon=%.6f", lat, lon), BenchCity.token(i % 50)))
        }
        var fullBytes = 0, leanBytes = 0
        for (i, p) in points.enumerated() {
            fullBytes += try await record(base + "/v1/nearby?\(p.query)&limit=20", token: p.token, to: "\(folder)/full/\(i).json")
            leanBytes += try await record(base + "/v1/nearby?\(p.query)&limit=20&perimeter=none", token: p.token,
                                          to: "\(folder)/lean/\(i).json")
        }
        _ = try await record(base + "/healthz", token: nil, to: "\(folder)/healthz")
        log(String(format: "recorded %d answers: full %.0f KiB, perimeter=none %.1f KiB on average", points.count,
                   Double(fullBytes) / Double(points.count) / 1024, Double(leanBytes) / Double(points.count) / 1024))

        // nginx on the next port: the same bytes from files, as a static server sends them.
        let nginxPort = command.port + 1
        try """
            daemon off;
            user root;
            worker_processes auto;
            pid \(folder)/nginx.pid;
            error_log \(folder)/logs/error.log warn;
            events { worker_connections 4096; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                keepalive_requests 1000000;
                keepalive_timeout 120s;
                client_body_temp_path \(folder)/tmp;
                proxy_temp_path \(folder)/tmp;
                fastcgi_temp_path \(folder)/tmp;
                uwsgi_temp_path \(folder)/tmp;
                scgi_temp_path \(folder)/tmp;
                default_type application/json;
                server {
                    listen 127.0.0.1:\(nginxPort);
                    root \(folder);
                }
            }
            """.write(toFile: "\(folder)/nginx.conf", atomically: true, encoding: .utf8)
        let server = try Spawn.start(nginx, ["-c", "\(folder)/nginx.conf", "-p", folder], capture: false)
        defer { server.stop() }
        let nginxBase = "http://127.0.0.1:\(nginxPort)"
        var nginxUp = false
        for _ in 0..<100 where !nginxUp {
            if let r = try? await HTTPClient.shared.execute(HTTPClientRequest(url: nginxBase + "/healthz"), timeout: .seconds(1)),
               r.status == .ok {
                nginxUp = true
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        guard nginxUp else { throw ValidationError("nginx did not start (see \(folder)/logs/error.log and its output above)") }

        // The wrk scripts: the same points for both sides.
        func pathsScript(_ paths: [(path: String, token: String?)]) -> String {
            let list = paths.map { p in "{\"\(p.path)\", \(p.token.map { "\"Bearer \($0)\"" } ?? "nil")}" }.joined(separator: ",\n")
            return """
                math.randomseed(\(command.seed % 1_000_000))
                local paths = {
                \(list)
                }
                request = function()
                  local p = paths[math.random(#paths)]
                  if p[2] then return wrk.format("GET", p[1], {["Authorization"] = p[2]}) end
                  return wrk.format("GET", p[1])
                end
                """
        }
        let scripts: [String: String] = [
            "full": pathsScript(points.map { ("/v1/nearby?\($0.query)&limit=20", $0.token) }),
            "lean": pathsScript(points.map { ("/v1/nearby?\($0.query)&limit=20&perimeter=none", $0.token) }),
            "regions": pathsScript(points.map { ("/v1/regions?\($0.query)&max=20", $0.token) }),
            "nginx-full": pathsScript(points.indices.map { ("/full/\($0).json", nil) }),
            "nginx-lean": pathsScript(points.indices.map { ("/lean/\($0).json", nil) }),
            "healthz": pathsScript([("/healthz", nil)]),
            "fixes": Self.walksScript(seed: command.seed, ownTracks: false),
            "owntracks": Self.walksScript(seed: command.seed, ownTracks: true),
        ]
        for (name, text) in scripts { try text.write(toFile: "\(folder)/\(name).lua", atomically: true, encoding: .utf8) }

        let rounds = max(1, command.peerRounds)
        var result = PeerResult(beacons: count, rounds: rounds, duration: command.duration)
        func pair(_ name: String, _ a: PeerSide, _ b: PeerSide, connections: Int, target: Double?) throws -> PeerRatio {
            try measure(name, a, b, connections: connections, target: target, wrk: wrk, folder: folder, rounds: rounds)
        }
        func side(_ label: String, _ script: String, _ base: String) -> PeerSide { PeerSide(label: label, script: script, bases: [base]) }
        let c = command.wrkConnections
        let wanted = command.peerRatios
        func add(_ key: PeerRatioKey, _ ratio: () async throws -> PeerRatio) async throws {
            guard wanted.contains(key) else { return }
            var measured = try await ratio()
            measured.key = key.rawValue
            result.ratios.append(measured)
        }
        try await add(.full) {
            try pair("nearby, full Features ÷ nginx, same bytes", side("DBeacon", "full", base),
                     side("nginx", "nginx-full", nginxBase), connections: c, target: 0.6)
        }
        try await add(.lean) {
            try pair("nearby, perimeter=none ÷ nginx, same bytes", side("DBeacon", "lean", base),
                     side("nginx", "nginx-lean", nginxBase), connections: c, target: 0.45)
        }
        try await add(.healthz) {
            try pair("GET /healthz ÷ nginx, same bytes (the framework's floor)", side("DBeacon", "healthz", base),
                     side("nginx", "healthz", nginxBase), connections: c, target: nil)
        }
        try await add(.regions) {
            try pair("GET /v1/regions?max=20 ÷ nearby perimeter=none", side("regions", "regions", base),
                     side("nearby", "lean", base), connections: c, target: 0.25)
        }
        if !command.skipFixes {
            try await add(.fixes) {
                try pair("POST /v1/me/location (durable) ÷ GET /healthz", side("fixes", "fixes", base),
                         side("healthz", "healthz", base), connections: 256, target: 0.5)
            }
            try await add(.owntracks) {
                try pair("OwnTracks location ÷ POST /v1/me/location, same walks", side("OwnTracks", "owntracks", base),
                         side("fixes", "fixes", base), connections: 64, target: 0.7)
            }
            if let url = command.postgres {
                try await add(.nodes) {
                    // The scale-out path: the same city copied into PostgreSQL + PostGIS, two nodes
                    // on it, the same walks with the same total connections as the one embedded node.
                    let nodes = try await startPostgresNodes(url: url, firstPort: command.port + 2)
                    defer { for node in nodes where node.isRunning { node.terminate(); node.waitUntilExit() } }
                    let bases = (0..<nodes.count).map { "http://127.0.0.1:\(command.port + 2 + $0)" }
                    return try pair("two PostgreSQL nodes ÷ one embedded node, POST /v1/me/location (durable)",
                                    PeerSide(label: "2 nodes on PostgreSQL", script: "fixes", bases: bases),
                                    side("embedded", "fixes", base), connections: 256, target: 0.7)
                }
            }
        }
        return result
    }

    /// Alternates A and B `rounds` times with `connections` connections each (split evenly over a
    /// side's servers, one wrk per server, all at once), after a short warm-up of each.
    func measure(_ name: String, _ a: PeerSide, _ b: PeerSide, connections: Int, target: Double?,
                 wrk: String, folder: String, rounds: Int) throws -> PeerRatio {
        var ratio = PeerRatio(name: name, a: a.label, b: b.label, target: target)
        func run(_ side: PeerSide, seconds: Int, latency: Bool) throws -> (rate: Double, p99: Double, transfer: Double) {
            let each = max(1, connections / side.bases.count)
            let children = try side.bases.map { base in
                try Spawn.start(wrk, ["-t1", "-c\(each)", "-d\(seconds)s"] + (latency ? ["--latency"] : [])
                                + ["-s", "\(folder)/\(side.script).lua", base], capture: true)
            }
            var rate = 0.0, p99 = 0.0, transfer = 0.0
            for (child, base) in zip(children, side.bases) {
                let output = child.finish()
                let figures = Self.parseWrk(output)
                if figures.errors > 0 { log("wrk reported \(figures.errors) errors on \(side.label) (\(base)):\n\(output)") }
                rate += figures.rate ?? 0
                p99 = max(p99, figures.p99 ?? 0)
                transfer += figures.transfer ?? 0
            }
            return (rate, p99, transfer)
        }
        for side in [a, b] { _ = try run(side, seconds: 1, latency: false) }
        var transfer = 0.0
        for round in 0..<rounds {
            // A, B in odd rounds and B, A in even ones: neither side always runs first.
            for isA in round % 2 == 0 ? [true, false] : [false, true] {
                let figures = try run(isA ? a : b, seconds: Int(command.duration.rounded(.up)), latency: true)
                if isA {
                    ratio.aRates.append(figures.rate)
                    ratio.aP99ms.append(figures.p99)
                    if figures.rate > 0 { transfer += figures.transfer / figures.rate }
                } else {
                    ratio.bRates.append(figures.rate)
                    ratio.bP99ms.append(figures.p99)
                }
            }
        }
        ratio.aBytes = transfer / Double(rounds)
        log(String(format: "%@: %.0f vs %.0f req/s = %.2f (A p99 %.1f ms)", name, PeerRatio.mean(ratio.aRates) ?? 0,
                   PeerRatio.mean(ratio.bRates) ?? 0, ratio.ratio ?? 0, PeerRatio.mean(ratio.aP99ms) ?? 0))
        return ratio
    }

    /// Copies the bench's database (as it now is) into a new schema of `url` with
    /// `dbeacon migrate`, and starts two `dbeacon serve` nodes on it, ports `firstPort` and the
    /// next, returned once both have prepared their index.
    func startPostgresNodes(url: String, firstPort: Int) async throws -> [Process] {
        let schema = "bench_nodes_\(count)_\(UInt32.random(in: 0...UInt32.max))"
        let target = Self.url(url, schema: schema)
        let started = monotonicNanos()
        let migrate = try Spawn.start(Self.dbeaconExecutable, ["migrate", "--from", path, "--to", target], capture: true)
        guard migrate.finishWithStatus().status == 0 else { throw ValidationError("dbeacon migrate into \(schema) failed (see above)") }
        log(String(format: "PostgreSQL: the city copied into schema %@ in %.1f s", schema, seconds(since: started)))
        var nodes: [Process] = []
        for port in [firstPort, firstPort + 1] {
            nodes.append(try await startPreparedServer(db: target, port: port))
        }
        return nodes
    }
}

/// The ratios `--peers` measures, by the key `--ratios` selects them with.
enum PeerRatioKey: String, CaseIterable {
    case full, lean, healthz, regions, fixes, owntracks, nodes
}

/// One side of a ratio: what wrk runs (its script) against which servers (one wrk each).
struct PeerSide {
    var label: String
    var script: String
    var bases: [String]
}

extension BenchRun {

    /// GETs `url` and writes the answer's body to `file`; returns its size.
    func record(_ url: String, token: String?, to file: String) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 28)
        guard response.status == .ok else { throw ValidationError("\(url) answered \(response.status.code)") }
        try Data(body.readableBytesView).write(to: URL(fileURLWithPath: file))
        return body.readableBytes
    }

    /// The server started (from its snapshot when there is one), once its index is prepared.
    func startPreparedServer(db: String? = nil, port: Int? = nil) async throws -> Process {
        let started = monotonicNanos()
        let (process, up): (Process, Double) = try await startServer(db: db, port: port)
        log(String(format: "server up in %.2f s", up))
        let base = "http://127.0.0.1:\(port ?? command.port)"
        while seconds(since: started) < 900 && process.isRunning {
            var metrics = HTTPClientRequest(url: base + "/metrics")
            metrics.headers.add(name: "Authorization", value: "Bearer bench-admin-token")
            if let response = try? await HTTPClient.shared.execute(metrics, timeout: .seconds(5)),
               let body = try? await response.body.collect(upTo: 1 << 24),
               let line = String(buffer: body).split(separator: "\n").first(where: { $0.hasPrefix("dbeacon_index_pending_polygons") }),
               let value = line.split(separator: " ").last.flatMap({ Double($0) }), value == 0 {
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        log(String(format: "index prepared %.2f s after start", seconds(since: started)))
        return process
    }

    /// Random walks of the city's users, 8 m a fix, each with their own token: as
    /// `POST /v1/me/location`, or as an OwnTracks app posts them (`_type: location`, HTTP Basic
    /// with the user's id and token).
    static func walksScript(seed: UInt64, ownTracks: Bool) -> String {
        let c = BenchCity.center, m = BenchCity.metersPerDegreeLat
        let basic = (0..<BenchCity.userCount).map {
            "\"Basic \(Data("\(BenchCity.user($0).rawValue):\(BenchCity.token($0))".utf8).base64EncodedString())\""
        }.joined(separator: ",")
        let request = ownTracks
            ? """
              local body = string.format('{"_type":"location","lat":%.7f,"lon":%.7f,"acc":10}', p[1], p[2])
              return wrk.format("POST", "/v1/owntracks", {["Authorization"] = basic[u + 1], ["Content-Type"] = "application/json"}, body)
            """
            : """
              local body = string.format('{"lat":%.7f,"lon":%.7f,"accuracy_m":10}', p[1], p[2])
              return wrk.format("POST", "/v1/me/location",
                {["Authorization"] = "Bearer bench-token-" .. u, ["Content-Type"] = "application/json"}, body)
            """
        return """
            math.randomseed(\(seed % 1_000_000))
            local basic = {\(ownTracks ? basic : "")}
            local pos = {}
            request = function()
              local u = math.random(0, \(BenchCity.userCount - 1))
              local p = pos[u]
              if p == nil then
                p = {\(c.lat) + (math.random() * 2 - 1) * \(BenchCity.halfLat), \(c.lon) + (math.random() * 2 - 1) * \(BenchCity.halfLon)}
                pos[u] = p
              end
              local a = math.random() * 2 * math.pi
              p[1] = p[1] + 8 / \(m) * math.sin(a)
              p[2] = p[2] + 8 / \(m * cos(c.lat * .pi / 180)) * math.cos(a)
            \(request)
            end
            """
    }
}
