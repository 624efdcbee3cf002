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
    @Option(help: "Also measure the SQL lookups on this PostgreSQL + PostGIS database (postgres://…; a new schema per run).")
    var postgres: String?

    func validate() throws {
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }) else { throw ValidationError("--beacons must list positive counts") }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
    }

    var counts: [Int] { beacons.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; figures are meaningless (swift build -c release)\n".utf8))
        #endif
        var rows: [BenchResult] = []
        for n in counts {
            let result = try await BenchRun(command: self, count: n).run()
            rows.append(result)
            if json { print(result.json) }
        }
        if !json { print(BenchResult.table(rows)) }
    }
}

/// The figures of one N.
struct BenchResult {
    var beacons = 0
    var generateSec = 0.0
    var dbBytes = 0
    var loadSec = 0.0
    var avgResults = 0.0
    var lookups1 = 0.0, lookupP50us = 0.0, lookupP99us = 0.0
    var lookups2 = 0.0
    var full1 = 0.0, fullP50us = 0.0, fullP99us = 0.0
    var full2 = 0.0
    var sql1: Double?, sqlP50us: Double?, sqlP99us: Double?
    var sql2: Double?
    var pg1: Double?, pgP50us: Double?, pgP99us: Double?, pg2: Double?, pgLoadSec: Double?
    var fixes: Double?, fixEvents: Double?, fixP99ms: Double?
    var http: Double?, httpP50ms: Double?, httpP99ms: Double?, httpBytesPerResponse: Double?
    var httpLean: Double?, httpLeanP99ms: Double?, httpLeanBytesPerResponse: Double?
    var regions: Double?, regionsP50ms: Double?, regionsP99ms: Double?
    var httpFixes: Double?, httpFixesP99ms: Double?
    var startupSec: Double?
    /// Exec to healthy without a snapshot (every beacon read from the database).
    var startupColdSec: Double?
    /// Exec to every polygon's exact test prepared (the background warm-up done).
    var indexReadySec: Double?
    var rssBytes: Int?
    var idleCPUPercent: Double?, streams: Int?, streamsOpenSec: Double?, streamsCPUPercent: Double?
    var httpWithStreams: Double?, httpWithStreamsP99ms: Double?

    var json: String {
        func n(_ v: Double?) -> JSONValue { v.map { .number(($0 * 1000).rounded() / 1000) } ?? .null }
        func i(_ v: Int?) -> JSONValue { v.map { .number(Double($0)) } ?? .null }
        let o: JSONValue = .object(JSONObject([
            ("beacons", i(beacons)), ("lookups_per_sec", n(lookups1)), ("lookups_per_sec_2t", n(lookups2)),
            ("lookup_p50_us", n(lookupP50us)), ("lookup_p99_us", n(lookupP99us)), ("avg_results_per_lookup", n(avgResults)),
            ("lookups_with_beacons_per_sec", n(full1)), ("lookups_with_beacons_per_sec_2t", n(full2)),
            ("lookup_with_beacons_p50_us", n(fullP50us)), ("lookup_with_beacons_p99_us", n(fullP99us)),
            ("sql_lookups_per_sec", n(sql1)), ("sql_lookups_per_sec_2t", n(sql2)), ("sql_p50_us", n(sqlP50us)),
            ("sql_p99_us", n(sqlP99us)), ("speedup_vs_sql", n(sql1.map { lookups1 / $0 })),
            ("speedup_vs_sql_with_beacons", n(sql1.map { full1 / $0 })),
            ("postgis_sql_lookups_per_sec", n(pg1)), ("postgis_sql_lookups_per_sec_2t", n(pg2)),
            ("postgis_sql_p50_us", n(pgP50us)), ("postgis_sql_p99_us", n(pgP99us)), ("postgis_load_sec", n(pgLoadSec)),
            ("http_requests_per_sec", n(http)), ("http_p50_ms", n(httpP50ms)), ("http_p99_ms", n(httpP99ms)),
            ("http_bytes_per_response", n(httpBytesPerResponse)),
            ("http_no_perimeter_requests_per_sec", n(httpLean)), ("http_no_perimeter_p99_ms", n(httpLeanP99ms)),
            ("http_no_perimeter_bytes_per_response", n(httpLeanBytesPerResponse)),
            ("http_regions_requests_per_sec", n(regions)), ("http_regions_p50_ms", n(regionsP50ms)), ("http_regions_p99_ms", n(regionsP99ms)),
            ("http_fixes_per_sec", n(httpFixes)), ("http_fix_p99_ms", n(httpFixesP99ms)),
            ("fixes_per_sec", n(fixes)), ("fix_events_per_sec", n(fixEvents)), ("fix_p99_ms", n(fixP99ms)),
            ("startup_sec", n(startupSec)), ("startup_from_database_sec", n(startupColdSec)), ("index_ready_sec", n(indexReadySec)), ("index_load_sec", n(loadSec)), ("rss_bytes", i(rssBytes)),
            ("generate_sec", n(generateSec)), ("db_bytes", i(dbBytes)),
            ("server_idle_cpu_percent", n(idleCPUPercent)), ("idle_streams", i(streams)), ("streams_open_sec", n(streamsOpenSec)),
            ("server_cpu_percent_with_streams", n(streamsCPUPercent)),
            ("http_requests_per_sec_beside_streams", n(httpWithStreams)), ("http_p99_ms_beside_streams", n(httpWithStreamsP99ms)),
        ]))
        return JSONWriter.string(o)
    }

    static func table(_ rows: [BenchResult]) -> String {
        func f(_ v: Double?, _ digits: Int = 0) -> String {
            guard let v, v.isFinite else { return "—" }
            return String(format: "%.\(digits)f", v)
        }
        func count(_ v: Double?) -> String {
            guard let v, v.isFinite else { return "—" }
            return v >= 10_000 ? String(format: "%.0f", v) : String(format: "%.1f", v)
        }
        let lines: [(String, (BenchResult) -> String)] = [
            ("beacons", { "\($0.beacons)" }),
            ("avg. results per lookup", { f($0.avgResults, 1) }),
            ("lookups/s, 1 thread", { count($0.lookups1) }),
            ("  p50 / p99 (µs)", { "\(f($0.lookupP50us, 1)) / \(f($0.lookupP99us, 1))" }),
            ("lookups/s, 2 threads", { count($0.lookups2) }),
            ("… returning beacons, 1 thread", { count($0.full1) }),
            ("  p50 / p99 (µs)", { "\(f($0.fullP50us, 1)) / \(f($0.fullP99us, 1))" }),
            ("… returning beacons, 2 threads", { count($0.full2) }),
            ("SQL lookups/s, 1 thread", { count($0.sql1) }),
            ("  p50 / p99 (µs)", { "\(f($0.sqlP50us, 0)) / \(f($0.sqlP99us, 0))" }),
            ("SQL lookups/s, 2 threads", { count($0.sql2) }),
            ("memory ÷ SQL (1 thread)", { r in r.sql1.map { String(format: "%.0f×", r.lookups1 / $0) } ?? "—" }),
            ("  with beacons ÷ SQL", { r in r.sql1.map { String(format: "%.0f×", r.full1 / $0) } ?? "—" }),
            ("PostGIS SQL lookups/s, 1 task", { count($0.pg1) }),
            ("  p50 / p99 (µs)", { "\(f($0.pgP50us, 0)) / \(f($0.pgP99us, 0))" }),
            ("PostGIS SQL lookups/s, 2 tasks", { count($0.pg2) }),
            ("HTTP nearby req/s", { count($0.http) }),
            ("  p50 / p99 (ms)", { "\(f($0.httpP50ms, 2)) / \(f($0.httpP99ms, 2))" }),
            ("  mean response (KiB)", { f($0.httpBytesPerResponse.map { $0 / 1024 }, 1) }),
            ("… perimeter=none req/s", { count($0.httpLean) }),
            ("  p99 (ms), response (KiB)", { "\(f($0.httpLeanP99ms, 2)) / \(f($0.httpLeanBytesPerResponse.map { $0 / 1024 }, 1))" }),
            ("HTTP regions (max 20) req/s", { count($0.regions) }),
            ("  p50 / p99 (ms)", { "\(f($0.regionsP50ms, 2)) / \(f($0.regionsP99ms, 2))" }),
            ("HTTP fixes/s (durable)", { count($0.httpFixes) }),
            ("  p99 (ms)", { f($0.httpFixesP99ms, 1) }),
            ("idle event streams open", { $0.streams.map { "\($0)" } ?? "—" }),
            ("  server CPU, none / with (%)", { "\(f($0.idleCPUPercent, 1)) / \(f($0.streamsCPUPercent, 1))" }),
            ("  nearby beside them req/s", { count($0.httpWithStreams) }),
            ("  p99 (ms)", { f($0.httpWithStreamsP99ms, 2) }),
            ("location fixes/s (durable)", { count($0.fixes) }),
            ("  events/s, fix p99 (ms)", { "\(count($0.fixEvents)) / \(f($0.fixP99ms, 1))" }),
            ("server start-up, snapshot (s)", { f($0.startupSec, 2) }),
            ("… from the database (s)", { f($0.startupColdSec, 2) }),
            ("… index prepared (s)", { f($0.indexReadySec, 2) }),
            ("server resident memory (MiB)", { $0.rssBytes.map { "\($0 / (1 << 20))" } ?? "—" }),
            ("index load in-process (s)", { f($0.loadSec, 2) }),
            ("generate + insert (s)", { f($0.generateSec, 1) }),
            ("database size (MiB)", { "\($0.dbBytes / (1 << 20))" }),
        ]
        var out: [String] = []
        for (label, value) in lines {
            var cells = [label.padding(toLength: 30, withPad: " ", startingAt: 0)]
            for r in rows {
                let text = value(r)
                cells.append(String(repeating: " ", count: max(0, 16 - text.count)) + text)
            }
            out.append(cells.joined())
        }
        return out.joined(separator: "\n")
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

    // MARK: In-process

    func inProcess(into result: inout BenchResult) async throws {
        let store = try SpatiaLiteStore(path: path, synchronousFull: true)
        let engine = MemoryCoverageEngine(store: store)
        store.observeChanges { [weak engine] in engine?.apply($0) } // weak: the engine holds the store
        let loadStart = monotonicNanos()
        // The server's snapshot when it is current (read only), else every beacon from the database.
        let snapshots = IndexSnapshots(directory: snapshotFolder, write: false)
        if let stamp = try await store.changeStamp(), (try? engine.load(snapshotFrom: snapshots, stamp: stamp)) ?? nil != nil {
            result.loadSec = seconds(since: loadStart)
            log("index loaded from the snapshot in \(String(format: "%.2f", result.loadSec)) s")
        } else {
            engine.reset()
            try await engine.load()
            result.loadSec = seconds(since: loadStart)
            log("index loaded from the database in \(String(format: "%.2f", result.loadSec)) s")
        }
        await engine.warm()
        log("index memory: " + engine.memoryReport.enumerated().map { i, e in i < 4 ? "\(e.0) \(e.1)" : "\(e.0) \(e.1 >> 20) MiB" }
            .joined(separator: ", "))
        if let own = residentBytes() { log("bench process resident with its index: \(own >> 20) MiB") }
        releaseFreedMemory()
        if let own = residentBytes() { log("… after malloc_trim: \(own >> 20) MiB") }

        var city = BenchCity(seed: command.seed &+ 1, now: now)
        let queries = (0..<100_000).map { _ in city.query() }
        var total = 0
        for q in queries.prefix(10_000) { total += engine.countCovering(q) }
        result.avgResults = Double(total) / 10_000

        if !command.skipLookups {
            let one = Self.lookups(engine, queries, threads: 1, seconds: command.duration)
            result.lookups1 = one.rate
            result.lookupP50us = one.latencies.percentile(0.5) / 1000
            result.lookupP99us = one.latencies.percentile(0.99) / 1000
            result.lookups2 = Self.lookups(engine, queries, threads: 2, seconds: command.duration).rate
            log(String(format: "lookups: %.0f/s on 1 thread, %.0f/s on 2", result.lookups1, result.lookups2))
            // Whole beacons are rebuilt from the index's records and exact geometry.
            let full = try await Self.asyncLookups(engine, queries, tasks: 1, seconds: command.duration)
            result.full1 = full.rate
            result.fullP50us = full.latencies.percentile(0.5) / 1000
            result.fullP99us = full.latencies.percentile(0.99) / 1000
            result.full2 = try await Self.asyncLookups(engine, queries, tasks: 2, seconds: command.duration).rate
            log(String(format: "lookups returning beacons: %.0f/s on 1 thread, %.0f/s on 2", result.full1, result.full2))
        }
        if !command.skipSQL {
            let sql = SQLCoverageEngine(store: store)
            let s1 = try await Self.asyncLookups(sql, queries, tasks: 1, seconds: command.duration)
            result.sql1 = s1.rate
            result.sqlP50us = s1.latencies.percentile(0.5) / 1000
            result.sqlP99us = s1.latencies.percentile(0.99) / 1000
            result.sql2 = try await Self.asyncLookups(sql, queries, tasks: 2, seconds: command.duration).rate
            log(String(format: "SQL lookups: %.0f/s on 1 thread, %.0f/s on 2", s1.rate, result.sql2 ?? 0))
        }
        if !command.skipFixes {
            try await fixes(store: store, engine: engine, into: &result)
        }
    }

    /// Lookups: the set of covering beacons (slots).
    static func lookups(_ engine: MemoryCoverageEngine, _ queries: [CoverQuery], threads: Int, seconds: Double)
        -> (rate: Double, latencies: Latencies) {
        let results = UncheckedBox(Array(repeating: (0, Latencies()), count: threads))
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        let started = monotonicNanos()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            var n = 0
            var lat = Latencies()
            lat.samples.reserveCapacity(1 << 20)
            var i = t * 7919
            var sink = 0
            var slots: [Int32] = []
            slots.reserveCapacity(256)
            while true {
                let q = queries[i % queries.count]
                let t0 = monotonicNanos()
                engine.coveringSlots(q, into: &slots)
                sink &+= slots.count
                let t1 = monotonicNanos()
                if n & 7 == 0 { lat.add(t1 - t0) }
                n += 1
                i += 1
                if t1 >= deadline { break }
            }
            withExtendedLifetime(sink) {} // keep the answers' counts observable
            results.withLock { $0[t] = (n, lat) }
        }
        let elapsed = Double(monotonicNanos() - started) / 1e9
        let all = results.withLock { $0 }
        var lat = Latencies()
        for r in all { lat.merge(r.1) }
        return (Double(all.reduce(0) { $0 + $1.0 }) / elapsed, lat)
    }

    /// Lookups returning whole beacons (`covering`), on `tasks` concurrent tasks.
    static func asyncLookups(_ engine: any CoverageEngine, _ queries: [CoverQuery], tasks: Int, seconds: Double) async throws
        -> (rate: Double, latencies: Latencies) {
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        let started = monotonicNanos()
        let parts = try await withThrowingTaskGroup(of: (Int, Latencies).self) { group in
            for t in 0..<tasks {
                group.addTask {
                    var n = 0
                    var lat = Latencies()
                    var i = t * 7919
                    while true {
                        let t0 = monotonicNanos()
                        _ = try await engine.covering(queries[i % queries.count])
                        let t1 = monotonicNanos()
                        lat.add(t1 - t0)
                        n += 1
                        i += 1
                        if t1 >= deadline { break }
                    }
                    return (n, lat)
                }
            }
            var all: [(Int, Latencies)] = []
            for try await part in group { all.append(part) }
            return all
        }
        let elapsed = Double(monotonicNanos() - started) / 1e9
        var lat = Latencies()
        for p in parts { lat.merge(p.1) }
        return (Double(parts.reduce(0) { $0 + $1.0 }) / elapsed, lat)
    }

    /// Every fixes measurement starts from the same state: the events, states and locations of
    /// earlier runs (millions after a few) would make each run insert into larger indexes than the last.
    func clearFences(_ store: SpatiaLiteStore) async throws {
        let cleared = try await store.write { db, _ in
            let events = try await db.rows("SELECT count(*) AS n FROM events").first?.int("n") ?? 0
            for table in ["outbox", "events", "fence_states", "user_locations"] { _ = try await db.rows("DELETE FROM \(table)") }
            return events
        }
        if cleared > 0 { log("fixes: cleared \(cleared) events of earlier runs") }
    }

    /// Location fixes from many users at once (random walks through the region); each call
    /// returns once its fix, state changes and events are committed with synchronous=FULL.
    func fixes(store: SpatiaLiteStore, engine: MemoryCoverageEngine, into result: inout BenchResult) async throws {
        try await clearFences(store)
        let fences = FenceEngine(store: store, engine: engine, committer: GroupCommitter(store: store), clock: SystemClock(),
                                 config: FenceConfig())
        try await fences.reload()
        let concurrency = 256
        let seconds = command.duration
        let seed = command.seed
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        let started = monotonicNanos()
        let base = Timestamp.now()
        let parts = try await withThrowingTaskGroup(of: (Int, Int, Latencies).self) { group in
            for t in 0..<concurrency {
                group.addTask {
                    var city = BenchCity(seed: seed &+ 100 &+ UInt64(t), now: base)
                    // Each task walks its own users (users t, t+256, …), 8 m per fix.
                    let mine = Array(stride(from: t, to: BenchCity.userCount, by: concurrency))
                    var positions = mine.map { _ in city.point() }
                    var fixCount = 0, events = 0, step = 0
                    var lat = Latencies()
                    while monotonicNanos() < deadline {
                        let k = step % mine.count
                        let a = Double.random(in: 0..<(2 * .pi), using: &city.rng)
                        positions[k].lat += 8 * sin(a) / BenchCity.metersPerDegreeLat
                        positions[k].lon += 8 * cos(a) / (BenchCity.metersPerDegreeLat * 0.66)
                        let fix = LocationFix(position: positions[k], accuracyM: 10,
                                              timestamp: base.adding(seconds: Double(step) * 0.001))
                        let t0 = monotonicNanos()
                        let report = try await fences.report(user: BenchCity.user(mine[k]), fixes: [fix])
                        lat.add(monotonicNanos() - t0)
                        fixCount += 1
                        events += report.events.count
                        step += 1
                    }
                    return (fixCount, events, lat)
                }
            }
            var all: [(Int, Int, Latencies)] = []
            for try await part in group { all.append(part) }
            return all
        }
        let elapsed = Double(monotonicNanos() - started) / 1e9
        var lat = Latencies()
        for p in parts { lat.merge(p.2) }
        result.fixes = Double(parts.reduce(0) { $0 + $1.0 }) / elapsed
        result.fixEvents = Double(parts.reduce(0) { $0 + $1.1 }) / elapsed
        result.fixP99ms = lat.percentile(0.99) / 1e6
        log(String(format: "fixes: %.0f/s with %.0f events/s", result.fixes ?? 0, result.fixEvents ?? 0))
    }

    // MARK: Server

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

    func startServer() async throws -> (Process, Double) {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let executable = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("dbeacon")
        let process = Process()
        process.executableURL = executable
        process.arguments = ["serve", "--db", path, "--port", "\(command.port)", "--admin-token", "bench-admin-token",
                             "--log-level", "warning", "--perimeter-text", command.perimeterText,
                             // The idle streams and wrk all come from 127.0.0.1.
                             "--max-connections", "\(command.streams + 2_000)", "--max-connections-per-client", "0",
                             // POST /v1/me/location as fast as wrk sends them.
                             "--location-rate", "0", "--fixes-per-minute", "0", "--write-rate", "0"]
        let started = monotonicNanos()
        try process.run()
        let base = "http://127.0.0.1:\(command.port)"
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
    static func fixesScript(seed: UInt64) -> String {
        let c = BenchCity.center, m = BenchCity.metersPerDegreeLat
        return """
            math.randomseed(\(seed % 1_000_000))
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
              local body = string.format('{"lat":%.7f,"lon":%.7f,"accuracy_m":10}', p[1], p[2])
              return wrk.format("POST", "/v1/me/location",
                {["Authorization"] = "Bearer bench-token-" .. u, ["Content-Type"] = "application/json"}, body)
            end
            """
    }

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

    static func capture(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
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
