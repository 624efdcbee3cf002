import DBeaconServices
import DBeaconStore
import Foundation
import Logging

/// `dbeacon bench --postgres URL`: the SQL-path lookups on PostGIS next to SpatiaLite's.
extension BenchRun {
    /// Copies the generated city into a fresh schema of `url` (with `dbeacon migrate`'s
    /// copier) and measures the same SQL lookups (GiST on perimeters + ST_Covers, geodesic
    /// circle test) on 1 and 2 concurrent tasks.
    func postgis(url: String) async throws {
        let schema = "bench_\(count)_\(command.seed)_\(UInt32.random(in: 0...UInt32.max))"
        let target = url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let started = monotonicNanos()
        _ = try await StoreCopier.copy(from: path, to: target, logger: logger)
        log(String(format: "PostGIS: copied %d beacons in %.1f s (schema %@)", count, seconds(since: started), schema))
        let store = try await PostgresStore.connect(url: target, listen: false, logger: logger)
        var city = BenchCity(seed: command.seed &+ 1, now: now)
        let queries = (0..<100_000).map { _ in city.query() }
        let sql = SQLCoverageEngine(store: store)
        let one = try await Self.sqlLookups(sql, queries, tasks: 1, seconds: command.duration)
        let two = try await Self.sqlLookups(sql, queries, tasks: 2, seconds: command.duration)
        log(String(format: "PostGIS SQL lookups: %.0f/s on 1 task (p50 %.0f µs, p99 %.0f µs), %.0f/s on 2",
                   one.rate, one.latencies.percentile(0.5) / 1000, one.latencies.percentile(0.99) / 1000, two.rate))
        await store.shutdown()
    }
}
