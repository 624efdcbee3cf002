import DBeaconCore
import DBeaconServices
import DBeaconIndex
import DBeaconStore
import Foundation
import Logging

/// `dbeacon bench --postgres URL`: the SQL-path lookups on PostGIS next to SpatiaLite's.
extension BenchRun {
    /// `url` with its `schema` parameter set to `schema` (a schema of its own for one run).
    static func url(_ url: String, schema: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
    }

    /// Generates the same synthetic city (same seed and distribution) into a fresh schema of
    /// `url` through the store's bulk insert, then measures the same SQL lookups (GiST on
    /// perimeters + ST_Covers, geodesic circle test) on 1 and 2 concurrent tasks.
    func postgis(url: String, into result: inout BenchResult) async throws {
        let schema = "bench_\(count)_\(command.seed)_\(UInt32.random(in: 0...UInt32.max))"
        let target = Self.url(url, schema: schema)
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let started = monotonicNanos()
        let store = try await PostgresStore.connect(url: target, listen: false, logger: logger)
        for i in 0..<BenchCity.userCount {
            try await store.createUser(User(id: BenchCity.user(i), name: "bench \(i)", createdAt: now),
                                       tokenHash: AuthService.hash(BenchCity.token(i)))
        }
        var generator = BenchCity(seed: command.seed, now: now)
        var done = 0
        while done < count {
            let batch = (done..<min(count, done + 2000)).map { generator.beacon($0) }
            try await DatabaseDeadline.$bulk.withValue(.bulkWork) { try await store.insertBeacons(batch) }
            done += batch.count
        }
        result.pgLoadSec = seconds(since: started)
        log(String(format: "PostGIS: generated %d beacons in %.1f s (schema %@)", count, result.pgLoadSec ?? 0, schema))
        var city = BenchCity(seed: command.seed &+ 1, now: now)
        let queries = (0..<100_000).map { _ in city.query() }
        let sql = SQLCoverageEngine(store: store)
        let one = try await Self.asyncLookups(sql, queries, tasks: 1, seconds: command.duration)
        let two = try await Self.asyncLookups(sql, queries, tasks: 2, seconds: command.duration)
        result.pg1 = one.rate
        result.pg2 = two.rate
        result.pgP50us = one.latencies.percentile(0.5) / 1000
        result.pgP99us = one.latencies.percentile(0.99) / 1000
        log(String(format: "PostGIS SQL lookups: %.0f/s on 1 task (p50 %.0f µs, p99 %.0f µs), %.0f/s on 2",
                   one.rate, one.latencies.percentile(0.5) / 1000, one.latencies.percentile(0.99) / 1000, two.rate))
        await store.shutdown()
    }
}
