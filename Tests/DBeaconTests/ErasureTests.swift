import DBeaconCore
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Erasure is proven, not promised (issue 43), on both stores:
///
/// 1. **Nothing of the user remains.** U acts in every service (`ErasureScenario`), is erased,
///    and then no column of any table of the database holds U's id or the hash of any token
///    U or U's device had; the index's snapshot and coordinate files hold none of U's beacons;
///    the in-memory index answers none of them. Every table the migrations create has a rule in
///    `ErasurePlan` (or is exempt, with a reason), so a new table without one fails here.
/// 2. **A forgotten table is caught.** For every rule, the erasure runs without it (a mutant):
///    the sweep then finds U's rows, or the transaction fails on a reference to them and rolls
///    back. Every mutant must be caught.
/// 3. **Others cannot tell.** World *erased*: U acted and was erased. World *never*: U never
///    existed and everyone else acted the same. The noninterference script (every operation of
///    `schema/openapi.yaml`) runs as a stranger, the admin, a follower of U's beacon, a mate in a
///    group with U, the organiser who invited U, and the owners of the place, promotion and
///    wall U used; every answer must be the same in both worlds once ids are replaced by
///    placeholders. Documented differences, and nothing else, are left out: the notices the
///    erasure sends (`beacon.deleted` / `meeting.cancelled` to followers of U's beacons;
///    `group.member_left` without the member to U's groups), which are checked and then taken
///    out of the erased world's log before the script runs; the version, `ETag` and `updated_at` of the three beacons of
///    others that listed U or held U's content (the erasure changed them: a counter of edits,
///    nothing of U's); and the admin's `/metrics` (request counters).
@Suite(.bounded) struct ErasureTests {
    typealias Kind = ErasureScenario.Kind

    // MARK: 1. Nothing remains

    @Test(arguments: Backend.all) func anErasedUserLeavesNoRowNoFileAndNoAnswer(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { config in
            config.allowPrivateWebhooks = true
            if backend == .spatialite { config.indexSnapshots.mode = .readWrite }
        }
        let folder = h.services.indexSnapshots?.directory
        try await h.app().test(.router) { client in
            var uBeacons: [String] = []
            let s = try await ErasureScenario.build(.erased, h: h, client: client, sweep: true) {
                // Before the erasure the files hold U's beacons (so the check below can fail).
                guard let folder else { return }
                await h.services.writeIndexSnapshot()
                let files = Self.files(in: folder)
                let ursula = try await Self.user(named: "ursula", h)
                #expect(ursula.map { Self.contains(files, Array(BeaconID.namespace(of: $0).utf8)) } == true, "U's beacons are in the snapshot")
                #expect(Self.contains(files, Self.markerBytes), "U's large polygon is in the coordinate file")
            }
            let u = s.u
            uBeacons = ["secret", "future", "ended", "pub", "big"].map { BeaconID.namespace(of: u) + $0 }
            let report = try #require(s.erasure)
            #expect(report["beacons"]?.numberValue ?? 0 >= 8, "U's beacons, meeting, tour, promotion and group: \(report)")

            // No row, in any table, holds U's id or a hash of any token U or U's device had.
            let hashes = (s.uTokens + [s.uDeviceToken]).map(AuthService.hash)
            #expect(hashes.count == 3)
            let left = try await Self.leftovers(of: u, hashes: hashes, in: h)
            #expect(left == [], "rows still holding the erased user")
            // None of U's beacons in any table but the change log and their followers' notices.
            for id in uBeacons {
                let rows = try await Self.leftovers(of: id, hashes: [], in: h).filter { !$0.hasPrefix("beacon_changes.") && !$0.hasPrefix("events.") }
                #expect(rows == [], "rows still holding \(id)")
            }
            // Every table of the schema has an erasure rule or a reason to have none.
            try await Self.checkEveryTableHasARule(h)

            // The index answers none of U's beacons; its files hold none of them.
            let admin = TestHarness.adminToken
            for p in [ErasureScenario.spot, ErasureScenario.placeB, Walk.offset(ErasureScenario.placeB, north: 300)] {
                let r = try await client.call(.get, "/v1/nearby?lat=\(p.lat)&lon=\(p.lon)&limit=500", token: admin)
                #expect(r.status == .ok)
                #expect(Set(r.featureIDs).isDisjoint(with: uBeacons))
            }
            if let folder {
                let files = Self.files(in: folder)
                #expect(!files.isEmpty)
                #expect(!Self.contains(files, Array(BeaconID.namespace(of: u).utf8)), "a snapshot file names U's beacons")
                #expect(!Self.contains(files, Array(u.rawValue.utf8)), "a snapshot file names U")
                #expect(!Self.contains(files, Self.markerBytes), "a coordinate file keeps U's large polygon")
            }

            // The notices, and no more: followers of U's beacons hear of the deletion; U's groups,
            // that a member left, without who.
            let follower = try #require(s.people["follower"]?.token), mate = try #require(s.people["mate"]?.token)
            let followerEvents = try await client.eventList(follower)
            #expect(followerEvents.contains { $0["type"] == "beacon.deleted" && $0["data"]?["beacon"]?.stringValue == uBeacons[3] })
            for token in [mate, try #require(s.people["olga"]?.token)] {
                let left = try await client.eventList(token).filter { $0["type"] == "group.member_left" }
                #expect(left.count == 1)
                #expect(left.first?["data"]?["member"] == .null)
                #expect(left.first?["data"]?["reason"] == "account_deleted")
            }
            // U's tokens and device stop; the id is never issued again; erasing again is 404.
            for token in s.uTokens + [s.uDeviceToken] {
                #expect(try await client.call(.get, "/v1/me", token: token).status == .unauthorized)
            }
            #expect(try await h.store.isRetired(u))
            #expect(try await client.call(.delete, "/v1/users/\(u.rawValue)", token: admin).status == .notFound)
            await #expect(throws: DBeaconError.self) {
                try await h.store.createUser(User(id: u, name: "again", createdAt: h.clock.now()), tokenHash: AuthService.hash("x"))
            }
        }
    }

    /// What was decided before an erasure and lands after it leaves nothing: an event for the
    /// erased user (a group alert computed from the members as they were) is dropped, their fix
    /// is refused, and a delivery attempt for their vanished webhook is not recorded.
    @Test(arguments: Backend.all) func lateWritesForAnErasedUserLeaveNothing(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (u, _) = try await h.user("ursula")
        let (v, _) = try await h.user("vera")
        _ = try await h.fix(u, lat: 48.7784, lon: 9.18)
        #expect(try await h.services.accounts.erase(u) != nil)
        let late = [u, v].map { Event(type: .memberOutOfRange, createdAt: h.clock.now(), recipient: $0, beacon: nil, data: ["member": "x"]) }
        try await h.store.appendEvents(late)
        #expect(try await h.events(u).isEmpty)
        #expect(try await h.events(v).count == 1)
        await #expect(throws: DBeaconError.self) { try await h.fix(u, lat: 48.7785, lon: 9.18) }
        #expect(try await Self.leftovers(of: u, hashes: [], in: h) == [])
        try await h.store.recordDeliveryAttempt(seq: 999_999, attempt: DeliveryAttempt(attempt: 1, startedAt: h.clock.now(), durationMs: 1,
                                                                                       statusCode: 200, error: nil),
                                                outcome: .delivered, disableWebhook: nil)
    }

    // MARK: 2. Mutants

    @Test(arguments: Backend.all) func anErasureThatForgetsATableIsCaught(_ backend: Backend) async throws {
        var caught: [String] = [], survived: [String] = []
        for rule in ErasurePlan.rules {
            let h = try await TestHarness.make(backend: backend) { $0.allowPrivateWebhooks = true }
            let killed = try await h.app().test(.router) { client in
                let s = try await ErasureScenario.build(.erased, h: h, client: client, sweep: true, mutant: rule.table)
                let hashes = (s.uTokens + [s.uDeviceToken]).map(AuthService.hash)
                let left = try await Self.leftovers(of: s.u, hashes: hashes, in: h)
                return s.erasureError != nil || !left.isEmpty
            }
            if killed { caught.append(rule.table) } else { survived.append(rule.table) }
        }
        #expect(survived == [], "erasures without these tables' rules left nothing behind: the scenario gives them no rows")
        #expect(caught.count == ErasurePlan.rules.count)
    }

    // MARK: 3. Two worlds

    @Test(arguments: Backend.all) func othersCannotTellAnErasedUserFromOneWhoNeverWas(_ backend: Backend) async throws {
        var transcripts: [Kind: [(String, String)]] = [:]
        for kind in Kind.allCases { transcripts[kind] = try await Self.transcript(kind, backend: backend) }
        let erased = transcripts[.erased] ?? [], never = transcripts[.never] ?? []
        #expect(erased.count == never.count)
        #expect(erased.count > 7 * 150, "every viewer runs the whole script")
        for (a, b) in zip(erased, never) where a.1 != b.1 {
            Issue.record("\(a.0) answers differently once U is erased:\n\(NoninterferenceTests.difference(a.1, b.1, "erased", "never"))")
        }
        // The comparison can fail: an erasure that keeps the events naming U, or keeps U in
        // others' member lists, is told apart (on SpatiaLite; the store makes no difference here).
        if backend == .spatialite {
            for mutant in ["events", "beacon_members"] {
                let leaky = try await Self.transcript(.erased, backend: backend, mutant: mutant)
                #expect(zip(leaky, never).contains { $0.1 != $1.1 }, "an erasure without its \(mutant) rule goes unnoticed")
            }
        }
        let operations = try NoninterferenceTests.documentedOperations()
        let covered = Set(erased.map { NoninterferenceTests.operation(of: $0.0.drop { $0 != "]" }.dropFirst(2).description, in: operations) ?? "unmatched \($0.0)" })
        #expect(Set(operations.values).subtracting(covered).sorted() == [], "operations without a step")
    }

    /// The viewers, in the order they run the script (each erases their own account at its end).
    static let viewers = ["admin", "stranger", "follower", "mate", "org", "olga", "tess"]

    /// Every viewer's answers to the script, in one world.
    static func transcript(_ kind: Kind, backend: Backend, mutant: String? = nil) async throws -> [(String, String)] {
        let h = try await TestHarness.make(backend: backend) { $0.allowPrivateWebhooks = true }
        return try await h.app().test(.router) { client in
            let s = try await ErasureScenario.build(kind, h: h, client: client, mutant: mutant)
            let touched = s.touched
            if kind == .erased && mutant == nil { try await Self.takeOutNotices(s, h: h) }
            var vars = s.vars
            var transcript: [(String, String)] = []
            try await IDSource.$seeded.withValue(SeededIDs(seed: 26)) {
                for viewer in viewers {
                    let (id, token) = viewer == "admin" ? (UserID(uncheckedRawValue: "usr_nobody"), TestHarness.adminToken)
                        : try #require(s.people[viewer])
                    vars["me"] = id.rawValue
                    vars["mine"] = BeaconID.namespace(of: id) + "x"
                    vars["newToken"] = nil
                    for step in NoninterferenceTests.script() {
                        let bearer = step.tokenVar.flatMap { vars[$0] } ?? (step.token ? token : nil)
                        let r = try await NoninterferenceTests.call(client, step, token: bearer, vars: &vars)
                        var answer = "\(r.status.code)"
                        for header in [HTTPField.Name.eTag, .location, .retryAfter, .allow] {
                            if let v = r.headers[header] { answer += " \(header.rawName)=\(v)" }
                        }
                        if viewer == "admin" && step.path == "/metrics" {
                            answer = "\(r.status.code) (request counters differ: not compared)"
                        } else {
                            if ErasureScenario.touchedNames.contains(where: { step.path.contains("{\($0)}") }) {
                                answer = answer.replacingOccurrences(of: #"ETag="\d+""#, with: "ETag=<version>", options: .regularExpression)
                            }
                            answer += " " + Self.comparable(r.json, text: r.text, touched: touched)
                        }
                        transcript.append(("[\(viewer)] \(step.method.rawValue) \(step.path)", answer))
                    }
                }
            }
            return NoninterferenceTests.normalised(transcript)
        }
    }

    /// The notices U's erasure sent, the documented difference between the worlds, after
    /// checking them: the follower of U's stall heard of its deletion, olga (the guide) and the
    /// mate that a member of walkers left, without who. Then they are taken out of the erased
    /// world's log, so the script compares everything else (pages and cursors included).
    static func takeOutNotices(_ s: ErasureScenario, h: TestHarness) async throws {
        let store = try #require(h.store as? any SQLStore)
        let events = try await store.events(recipient: nil, after: nil, limit: 100_000).items.filter { $0.createdAt == s.erasedAt }
        let uPub = BeaconID.namespace(of: s.u) + "pub"
        let deletions = events.filter { $0.type == .deleted || $0.type == .meetingCancelled }
        let left = events.filter { $0.type == .memberLeft }
        #expect(deletions.map(\.recipient) == [s.people["follower"]?.id], "one follower of U's beacons: \(deletions)")
        #expect(deletions.first?.data["beacon"]?.stringValue == uPub)
        #expect(Set(left.map(\.recipient)) == Set([s.people["olga"]?.id, s.people["mate"]?.id].compactMap { $0 }))
        #expect(left.allSatisfy { $0.data["member"] == .null && $0.data["member_name"] == .null && $0.data["reason"] == "account_deleted" })
        #expect(events.count == deletions.count + left.count, "the erasure wrote nothing else: \(events.map(\.type))")
        let ids = events.map(\.id.rawValue)
        try await store.write { db, _ in
            try await db.rows("DELETE FROM events WHERE \(db.dialect.contains("id", "$1"))", [ids])
        }
    }

    /// The answer without the version and time of update of the beacons of others the erasure
    /// changed (the documented difference that stays in view).
    static func comparable(_ json: JSONValue?, text: String, touched: Set<String>) -> String {
        guard let json else { return text }
        func clean(_ v: JSONValue) -> JSONValue {
            switch v {
            case .array(let items):
                return .array(items.map(clean))
            case .object(var o):
                let id = o["id"]?.stringValue ?? o["beacon"]?.stringValue ?? ""
                if touched.contains(id) {
                    if case .object(var p)? = o["properties"] {
                        if p["version"] != nil { p["version"] = "<version>" }
                        if p["updated_at"] != nil { p["updated_at"] = "<updated>" }
                        o["properties"] = .object(p)
                    }
                    if o["version"] != nil { o["version"] = "<version>" }
                }
                var out = JSONObject()
                for (k, value) in o.members { out[k] = clean(value) }
                return .object(out)
            default:
                return v
            }
        }
        return JSONWriter.string(clean(json))
    }

    // MARK: The sweep

    /// `table.column: rows` for every column of every table that holds `needle` (as text) or one
    /// of `hashes` (as bytes).
    static func leftovers(of needle: String, hashes: [[UInt8]], in h: TestHarness) async throws -> [String] {
        let store = try #require(h.store as? any SQLStore)
        let hexes = hashes.map { $0.map { String(format: "%02x", $0) }.joined() }
        return try await store.read { db in
            var found: [String] = []
            for (table, columns) in try await Self.tablesAndColumns(db) {
                for column in columns {
                    var s = SQLStatement()
                    let text = db.dialect == .sqlite ? "CAST(\"\(column)\" AS TEXT)" : "CAST(\"\(column)\" AS TEXT)"
                    var tests = ["\(db.dialect.containsText(text, s.bind(needle)))"]
                    for hex in hexes {
                        // SQLite: a blob's hex; PostgreSQL: bytea as text is \x and its hex.
                        tests.append(db.dialect == .sqlite ? "instr(lower(hex(\"\(column)\")), \(s.bind(hex))) > 0"
                                                           : "strpos(CAST(\"\(column)\" AS TEXT), \(s.bind(hex))) > 0")
                    }
                    let rows: Int
                    do {
                        rows = try await db.row("SELECT count(*) AS n FROM \"\(table)\" WHERE \(tests.joined(separator: " OR "))",
                                                s.arguments)?.int("n") ?? 0
                    } catch {
                        continue  // a virtual table that cannot be scanned (SpatiaLite's KNN, …): it stores nothing
                    }
                    if rows > 0 { found.append("\(table).\(column): \(rows)") }
                }
            }
            return found
        }
    }

    static func leftovers(of u: UserID, hashes: [[UInt8]], in h: TestHarness) async throws -> [String] {
        try await leftovers(of: u.rawValue, hashes: hashes, in: h)
    }

    /// Every table of the database with its columns.
    static func tablesAndColumns(_ db: any SQLSession) async throws -> [(String, [String])] {
        var out: [(String, [String])] = []
        if db.dialect == .sqlite {
            for table in try await db.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map({ try $0.string("name") }) {
                guard let columns = try? await db.rows("PRAGMA table_info(\"\(table)\")").map({ try $0.string("name") }) else { continue }
                out.append((table, columns))
            }
        } else {
            var columns: [String: [String]] = [:]
            for row in try await db.rows("""
                SELECT c.table_name, c.column_name FROM information_schema.columns c
                JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position
                """) {
                columns[try row.string("table_name"), default: []].append(try row.string("column_name"))
            }
            out = columns.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
        return out
    }

    /// The tables the migrations create (the schema itself) each have a rule or an exemption,
    /// and the database holds no table of DBeacon's beyond them.
    static func checkEveryTableHasARule(_ h: TestHarness) async throws {
        let store = try #require(h.store as? any SQLStore)
        let sqlite = store.dialect == .sqlite
        let migrations = sqlite ? SpatiaLiteSchema.migrations : PostGISSchema.migrations
        var created = Set<String>()
        let pattern = try NSRegularExpression(pattern: #"CREATE TABLE (?:IF NOT EXISTS )?(\w+)"#)
        for (_, sql) in migrations {
            let ns = sql as NSString
            for m in pattern.matches(in: sql, range: NSRange(location: 0, length: ns.length)) {
                created.insert(ns.substring(with: m.range(at: 1)))
            }
        }
        let ruled = Set(ErasurePlan.rules.map(\.table)).union(ErasurePlan.cascades.keys).union(ErasurePlan.exempt.keys)
        #expect(created.subtracting(ruled).sorted() == [], "tables without an erasure rule (ErasurePlan)")
        #expect(Set(ErasurePlan.rules.map(\.table)).subtracting(created).sorted() == [], "rules for tables the schema does not have")
        let live = Set(try await store.read { db in try await Self.tablesAndColumns(db).map(\.0) })
        // The database's own: SpatiaLite's metadata and spatial index, the migrations' record.
        let system = live.filter { t in
            t.hasPrefix("sqlite_") || t.hasPrefix("idx_") || t.contains("geometry_columns") || t.hasPrefix("spatial")
                || ["spatialite_history", "sql_statements_log", "data_licenses", "grdb_migrations", "dbeacon_migrations",
                    "SpatialIndex", "ElementaryGeometries", "KNN", "KNN2"].contains(t)
        }
        #expect(live.subtracting(system).subtracting(created).sorted() == [], "tables in the database that no migration names")
    }

    // MARK: Files

    static func files(in folder: String) -> [Data] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0 != "lock" }.compactMap { FileManager.default.contents(atPath: "\(folder)/\($0)") }
    }

    static func contains(_ files: [Data], _ bytes: [UInt8]) -> Bool {
        files.contains { $0.range(of: Data(bytes)) != nil }
    }

    static var markerBytes: [UInt8] { withUnsafeBytes(of: ErasureScenario.bigMarker.bitPattern.littleEndian) { Array($0) } }

    static func user(named name: String, _ h: TestHarness) async throws -> UserID? {
        try await h.store.users(named: name).first?.id
    }
}
