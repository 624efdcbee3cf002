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

/// The in-process measurements: lookups on the index and through SQL, and durable fixes.
extension BenchRun {
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
}
