import ArgumentParser
import AsyncHTTPClient
import DBeaconCore
import DBeaconServices
import DBeaconIndex
import DBeaconStore
import Dispatch
import Foundation
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The server measurements: start-up, HTTP through wrk (nearby, regions, fixes), and the helpers that run wrk.
extension BenchRun {
    /// The folder of the index snapshot `dbeacon serve` keeps next to the database.
    var snapshotFolder: String { path + ".index" }

    /// Starts `dbeacon serve` (built next to this executable) on the database; returns it and
    /// the seconds from exec to its first healthy answer.
    /// Reads files through once (bytes read, seconds), so that what follows finds them in the
    /// page cache; unreadable files are skipped.
    static func readThrough(_ paths: [String]) -> (Int, Double) {
        let started = monotonicNanos()
        var total = 0
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        for path in paths {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            while true {
                let n = read(fd, buffer, 1 << 20)
                if n <= 0 { break }
                total += n
            }
        }
        return (total, Double(monotonicNanos() - started) / 1e9)
    }

    /// The `dbeacon` executable beside this one.
    static var dbeaconExecutable: String {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("dbeacon").path
    }

    /// Starts `dbeacon serve` on `db` (the bench's database by default) and `port` (`--port`).
    func startServer(db: String? = nil, port: Int? = nil) async throws -> (Process, Double) {
        let port = port ?? command.port
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.dbeaconExecutable)
        process.arguments = ["serve", "--db", db ?? path, "--port", "\(port)", "--admin-token", "bench-admin-token",
                             "--log-level", "warning", "--perimeter-text", command.perimeterText,
                             // The idle streams and wrk all come from 127.0.0.1.
                             "--max-connections", "\(command.streams + 2_000)", "--max-connections-per-client", "0",
                             // POST /v1/me/location as fast as wrk sends them.
                             "--location-rate", "0", "--fixes-per-minute", "0", "--write-rate", "0",
                             // Whatever happens to the bench (a crash, a kill), its server ends with it.
                             "--exit-with-parent"]
        let started = monotonicNanos()
        try process.run()
        let base = "http://127.0.0.1:\(port)"
        while seconds(since: started) < 300 && process.isRunning {
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/healthz"), timeout: .seconds(1)),
               response.status == .ok {
                return (process, seconds(since: started))
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { process.terminate() }
        throw ValidationError("the server did not start (see its output above)")
    }

    func server(into result: inout BenchResult) async throws {
        // First from the database alone (no snapshot): the server loads every beacon, builds the
        // rasters, then writes its snapshot; then stopped and started again from the snapshot,
        // as a restart is. HTTP and memory are measured on the second.
        try? FileManager.default.removeItem(atPath: snapshotFolder)
        // The fixes through HTTP start from no events, states or locations, as those in process.
        if !command.skipFixes { try await clearFences(try SpatiaLiteStore(path: path, synchronousFull: false)) }
        // Measured with the database in the page cache, as a restarted server finds it (on a
        // machine that pages idle files out, a database idle for a minute is read from disk).
        let (warmed, warmSeconds0) = Self.readThrough([path])
        log(String(format: "page cache: %d MiB of the database read in %.2f s", warmed >> 20, warmSeconds0))
        let (cold, coldSeconds) = try await startServer()
        result.startupColdSec = coldSeconds
        log(String(format: "server up in %.2f s from the database", coldSeconds))
        let snapshotFile = snapshotFolder + "/index.snapshot"
        let coldStart = monotonicNanos()
        while cold.isRunning && !FileManager.default.fileExists(atPath: snapshotFile) && seconds(since: coldStart) < 600 {
            try await Task.sleep(for: .milliseconds(100))
        }
        log(String(format: "index snapshot written %.2f s after start", coldSeconds + seconds(since: coldStart)))
        cold.terminate()
        cold.waitUntilExit()

        let started = monotonicNanos()
        let (process, warmSeconds) = try await startServer()
        defer {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
        let client = HTTPClient.shared
        let base = "http://127.0.0.1:\(command.port)"
        result.startupSec = warmSeconds
        log(String(format: "server up in %.2f s from its snapshot", warmSeconds))
        if let rss = residentBytes(pid: process.processIdentifier) { log("server resident when up: \(rss >> 20) MiB") }
        // Polygons' exact tests are prepared in the background after start-up: measure HTTP
        // (and memory) once they are, as a server that has been up a while would be.
        while seconds(since: started) < 600 && process.isRunning {
            // /metrics needs the admin (or metrics) token.
            var metrics = HTTPClientRequest(url: base + "/metrics")
            metrics.headers.add(name: "Authorization", value: "Bearer bench-admin-token")
            if let response = try? await client.execute(metrics, timeout: .seconds(5)),
               let body = try? await response.body.collect(upTo: 1 << 24),
               let line = String(buffer: body).split(separator: "\n").first(where: { $0.hasPrefix("dbeacon_index_pending_polygons") }),
               let value = line.split(separator: " ").last.flatMap({ Double($0) }) {
                if value == 0 { break }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        result.indexReadySec = seconds(since: started)
        log(String(format: "index prepared %.2f s after start", result.indexReadySec ?? 0))

        guard let wrk = Self.which("wrk") else {
            log("wrk not found (apt-get install wrk): HTTP figures skipped")
            result.rssBytes = residentBytes(pid: process.processIdentifier)
            return
        }
        // The index folder's files in the page cache, as a server that has been answering has them.
        let folderFiles = ((try? FileManager.default.contentsOfDirectory(atPath: snapshotFolder)) ?? []).map { snapshotFolder + "/" + $0 }
        let (read, readSeconds) = Self.readThrough(folderFiles)
        log(String(format: "page cache: %d MiB of the index folder read in %.2f s", read >> 20, readSeconds))
        let script = "\(command.workdir)/nearby.lua"
        try Self.luaScript(seed: command.seed).write(toFile: script, atomically: true, encoding: .utf8)
        _ = try Self.capture(wrk, ["-t1", "-c8", "-d2s", "-s", script, base]) // warm-up
        let (output, parsed) = try load(wrk, script, base)
        result.rssBytes = residentBytes(pid: process.processIdentifier)
        result.http = parsed.rate
        result.httpP50ms = parsed.p50
        result.httpP99ms = parsed.p99
        if let rate = parsed.rate, let transfer = parsed.transfer, rate > 0 { result.httpBytesPerResponse = transfer / rate }
        if parsed.errors > 0 { log("wrk reported \(parsed.errors) non-2xx or socket errors:\n\(output)") }
        log(String(format: "HTTP: %.0f req/s, p99 %.2f ms", parsed.rate ?? 0, parsed.p99 ?? 0))

        let leanScript = "\(command.workdir)/nearby-no-perimeter.lua"
        try Self.luaScript(seed: command.seed, extra: "&limit=20&perimeter=none").write(toFile: leanScript, atomically: true, encoding: .utf8)
        let (_, lean) = try load(wrk, leanScript, base)
        result.httpLean = lean.rate
        result.httpLeanP99ms = lean.p99
        if let rate = lean.rate, let transfer = lean.transfer, rate > 0 { result.httpLeanBytesPerResponse = transfer / rate }
        log(String(format: "HTTP, perimeter=none: %.0f req/s, p99 %.2f ms", lean.rate ?? 0, lean.p99 ?? 0))

        // GET /v1/regions: the 20 regions a phone monitors, from the same random points.
        let regionsScript = "\(command.workdir)/regions.lua"
        try Self.luaScript(seed: command.seed, path: "/v1/regions", extra: "&max=20").write(toFile: regionsScript, atomically: true, encoding: .utf8)
        let (regionsOutput, regions) = try load(wrk, regionsScript, base)
        result.regions = regions.rate
        result.regionsP50ms = regions.p50
        result.regionsP99ms = regions.p99
        if regions.errors > 0 { log("wrk reported \(regions.errors) non-2xx or socket errors on regions:\n\(regionsOutput)") }
        log(String(format: "HTTP regions: %.0f req/s, p50 %.2f ms, p99 %.2f ms", regions.rate ?? 0, regions.p50 ?? 0, regions.p99 ?? 0))

        // POST /v1/me/location: the 1,000 users' random walks (8 m a fix, as in process), each
        // answered once durable, from the state the server started with (cleared before it).
        if !command.skipFixes {
            let fixesScript = "\(command.workdir)/fixes.lua"
            try Self.fixesScript(seed: command.seed).write(toFile: fixesScript, atomically: true, encoding: .utf8)
            let (fixesOutput, fixes) = try load(wrk, fixesScript, base)
            result.httpFixes = fixes.rate
            result.httpFixesP99ms = fixes.p99
            if fixes.errors > 0 { log("wrk reported \(fixes.errors) non-2xx or socket errors on fixes:\n\(fixesOutput)") }
            log(String(format: "HTTP fixes: %.0f/s, p99 %.2f ms", fixes.rate ?? 0, fixes.p99 ?? 0))
        }

        try await streams(server: process, base: base, wrk: wrk, script: script, into: &result)
    }

    /// One measured wrk run of `script` against `base` (the bench's threads, connections and
    /// duration): its output and what `parseWrk` reads in it.
    func load(_ wrk: String, _ script: String, _ base: String) throws -> (output: String, parsed: WrkFigures) {
        let output = try Self.capture(wrk, ["-t\(command.wrkThreads)", "-c\(command.wrkConnections)",
                                            "-d\(Int(command.duration.rounded(.up)))s", "--latency", "-s", script, base])
        return (output, Self.parseWrk(output))
    }

    typealias WrkFigures = (rate: Double?, p50: Double?, p99: Double?, transfer: Double?, errors: Int)

    /// Random walks of the city's users, 8 m a fix, each with their own token.
    static func fixesScript(seed: UInt64) -> String { walksScript(seed: seed, ownTracks: false) }

    /// Random points in the region, 50 users' tokens, one tag filter in five.
    static func luaScript(seed: UInt64, path: String = "/v1/nearby", extra: String = "&limit=20") -> String {
        let c = BenchCity.center
        return """
            math.randomseed(\(seed % 1_000_000))
            local tags = {"food", "shopping", "landmark", "meeting", "culture", "sport", "nightlife", "transport"}
            request = function()
              local lat = \(c.lat) + (math.random() * 2 - 1) * \(BenchCity.halfLat)
              local lon = \(c.lon) + (math.random() * 2 - 1) * \(BenchCity.halfLon)
              local path = string.format("\(path)?lat=%.6f&lon=%.6f\(extra)", lat, lon)
              if math.random() < 0.2 then path = path .. "&tag=" .. tags[math.random(#tags)] end
              local token = "bench-token-" .. math.random(0, 49)
              return wrk.format("GET", path, {["Authorization"] = "Bearer " .. token})
            end
            """
    }

    static func parseWrk(_ text: String) -> WrkFigures {
        func ms(_ s: Substring) -> Double? {
            let units: [(String, Double)] = [("us", 0.001), ("ms", 1), ("s", 1000)]
            for (u, f) in units where s.hasSuffix(u) { return Double(s.dropLast(u.count)).map { $0 * f } }
            return nil
        }
        func bytes(_ s: Substring) -> Double? {
            let units: [(String, Double)] = [("GB", 1_073_741_824), ("MB", 1_048_576), ("KB", 1024), ("B", 1)]
            for (u, f) in units where s.hasSuffix(u) { return Double(s.dropLast(u.count)).map { $0 * f } }
            return nil
        }
        var rate: Double?, p50: Double?, p99: Double?, transfer: Double?, errors = 0
        for raw in text.split(separator: "\n") {
            let parts = raw.split(separator: " ", omittingEmptySubsequences: true)
            if raw.contains("Requests/sec:"), let last = parts.last { rate = Double(last) }
            if raw.contains("Transfer/sec:"), let last = parts.last { transfer = bytes(last) }
            if parts.count == 2 && parts[0] == "50%" { p50 = ms(parts[1]) }
            if parts.count == 2 && parts[0] == "99%" { p99 = ms(parts[1]) }
            if raw.contains("Non-2xx") || raw.contains("Socket errors") { errors += Int(parts.last ?? "0") ?? 1 }
        }
        return (rate, p50, p99, transfer, errors)
    }

    static func which(_ tool: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs a tool to its end (`Spawn`: safe with thousands of descriptors open) and returns its output.
    static func capture(_ executable: String, _ arguments: [String]) throws -> String {
        try Spawn.capture(executable, arguments)
    }
}
