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

/// `dbeacon-bench` (also `dbeacon bench`): the reproducible performance figures of
/// BENCHMARKS.md. Its own executable, so the server's binary does not carry it.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dbeacon-bench",
        abstract: "Measure lookups, SQL lookups, HTTP nearby, location fixes, start-up time and memory.",
        discussion: """
            For each N, generates N synthetic beacons (see BENCHMARKS.md: 70% circles, 25% polygons, 5% \
            complex polygons with holes, lifetimes, private groups, 8 tags) into a SpatiaLite file under \
            --workdir, then measures:
              • in-process lookups (in-memory engine) on 1 and 2 threads, with p50/p99 latency;
              • the same lookups on the SQL path (SpatiaLite R*Tree + ST_Covers);
              • location fixes per second through the fence engine, each acknowledged once durable;
              • a `dbeacon serve` child process: start-up time, resident memory, and GET /v1/nearby,
                GET /v1/regions and POST /v1/me/location (durable fixes, rate limits off) under load from wrk
                (Debian package `wrk`; skipped with a note when missing);
              • --streams idle event streams on that server: its CPU at rest and with them, and nearby beside them.
            Build with `swift build -c release` first: debug builds are many times slower.
            """
    )

    @Option(help: "Comma-separated beacon counts.") var beacons = "100000,1000000"
    @Option(help: "Seconds per measurement.") var duration = 5.0
    @Option(help: "Folder for the generated databases (reused with --reuse).") var workdir = "./data/bench"
    @Option(help: "Seed of the synthetic city.") var seed: UInt64 = 2026
    @Flag(help: "Reuse a database generated earlier for the same N and seed.") var reuse = false
    @Flag(name: .customLong("skip-http"), help: "Skip the server measurements.") var skipHTTP = false
    @Flag(name: .customLong("skip-sql"), help: "Skip the SQL path.") var skipSQL = false
    @Flag(name: .customLong("skip-fixes"), help: "Skip the location-fix measurement.") var skipFixes = false
    @Flag(name: .customLong("skip-lookups"), help: "Skip the in-process lookup measurements (e.g. to profile fixes alone).")
    var skipLookups = false
    @Option(name: .customLong("wrk-connections"), help: "Concurrent HTTP connections.") var wrkConnections = 32
    @Option(name: .customLong("wrk-threads"), help: "wrk threads.") var wrkThreads = 1
    @Option(help: "Port of the server under test.") var port = 18_090
    @Option(name: .customLong("perimeter-text"), help: "The server's --perimeter-text (hinted or formatted).") var perimeterText = "hinted"
    @Option(help: "Idle event streams to open on the server (then its CPU, and HTTP nearby beside them); 0 skips.")
    var streams = 10_000
    @Flag(help: "Print one JSON object per N instead of a table.") var json = false
    @Flag(help: "Measure the speed targets as ratios instead (BENCHMARKS.md): the server against nginx serving the very answers it gave, and against its own cheaper endpoints, alternating the two sides in one run.")
    var peers = false
    @Option(name: .customLong("peer-rounds"), help: "With --peers: runs of each side per ratio.") var peerRounds = 3
    @Option(help: "With --peers: the ratios to measure, comma-separated, of full, lean, healthz, regions, fixes, owntracks, nodes (default: all; nodes needs --postgres).")
    var ratios = PeerRatioKey.allCases.map(\.rawValue).joined(separator: ",")
    @Option(help: "Also measure the SQL lookups on this PostgreSQL + PostGIS database (postgres://…; a new schema per run). With --peers: two nodes on it (the city copied into a new schema) against the one embedded node; give it fsync on, as scripts/bench.sh does.")
    var postgres: String?

    func validate() throws {
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }) else { throw ValidationError("--beacons must list positive counts") }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        let unknown = ratioNames.filter { PeerRatioKey(rawValue: $0) == nil }
        guard unknown.isEmpty else {
            throw ValidationError("--ratios: unknown \(unknown.joined(separator: ", ")); choose from \(PeerRatioKey.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    /// The names `--ratios` lists, and the ratios they name (`validate` refuses unknown names).
    var ratioNames: [String] { ratios.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
    var peerRatios: Set<PeerRatioKey> { Set(ratioNames.compactMap(PeerRatioKey.init(rawValue:))) }

    var counts: [Int] { beacons.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; figures are meaningless (swift build -c release)\n".utf8))
        #endif
        if peers {
            var results: [PeerResult] = []
            for n in counts {
                let result = try await BenchRun(command: self, count: n).peers()
                results.append(result)
                if json { print(result.json) }
            }
            if !json { print(PeerResult.table(results)) }
            return
        }
        var rows: [BenchResult] = []
        for n in counts {
            let result = try await BenchRun(command: self, count: n).run()
            rows.append(result)
            if json { print(result.json) }
        }
        if !json { print(BenchResult.table(rows)) }
    }
}

struct BenchRun {
    let command: BenchCommand
    let count: Int
    let now = Timestamp.now()

    var path: String { "\(command.workdir)/bench-\(count)-\(command.seed).sqlite" }

    func log(_ message: String) {
        FileHandle.standardError.write(Data("[bench \(count)] \(message)\n".utf8))
    }

    func run() async throws -> BenchResult {
        var result = BenchResult()
        result.beacons = count
        try await generate(into: &result)
        // The server under test first, while this process holds no index of its own (an index
        // freed here keeps gigabytes resident in malloc, and the server would start next to them).
        if let own = residentBytes() { log("bench process resident before the server: \(own >> 20) MiB") }
        if !command.skipHTTP { try await server(into: &result) }
        try await inProcess(into: &result)
        if let url = command.postgres { try await postgis(url: url, into: &result) }
        return result
    }

    // MARK: Data

    func generate(into result: inout BenchResult) async throws {
        try FileManager.default.createDirectory(atPath: command.workdir, withIntermediateDirectories: true)
        if command.reuse, FileManager.default.fileExists(atPath: path) {
            let store = try SpatiaLiteStore(path: path, synchronousFull: false)
            if try await store.beaconCount() == count {
                log("reusing \(path)")
                result.dbBytes = fileSize(path)
                return
            }
        }
        for suffix in ["", "-wal", "-shm", ".index"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let started = monotonicNanos()
        let store = try SpatiaLiteStore(path: path, synchronousFull: false)
        for i in 0..<BenchCity.userCount {
            try await store.createUser(User(id: BenchCity.user(i), name: "bench \(i)", createdAt: now),
                                       tokenHash: AuthService.hash(BenchCity.token(i)))
        }
        var city = BenchCity(seed: command.seed, now: now)
        var done = 0
        while done < count {
            let batch = (done..<min(count, done + 5000)).map { city.beacon($0) }
            try await store.insertBeacons(batch)
            done += batch.count
            if done % 100_000 == 0 { log("generated \(done)") }
        }
        result.generateSec = seconds(since: started)
        result.dbBytes = fileSize(path)
        log("generated \(count) beacons in \(String(format: "%.1f", result.generateSec)) s")
    }

    func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? Int) ?? 0
    }

    func seconds(since start: UInt64) -> Double { Double(monotonicNanos() - start) / 1e9 }
}

/// A value shared between the threads of a measurement.
final class UncheckedBox<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ value: T) { self.value = value }
    func withLock<R>(_ body: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
