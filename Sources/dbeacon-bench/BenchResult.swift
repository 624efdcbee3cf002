import DBeaconCore
import Foundation

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
