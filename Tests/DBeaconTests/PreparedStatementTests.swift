import DBeaconCore
@testable import DBeaconStore
import Foundation
import Testing

/// On PostgreSQL, statements run again and again are prepared once per connection and then
/// run with `EXECUTE`, their arguments written as literals (`PreparedStatements`): the same
/// answers as the statement sent with bound arguments, whatever the values.
@Suite(.bounded) struct PreparedStatementTests {
    /// Which statements are prepared: those `PREPARE` takes, of few arguments, once run
    /// `threshold` times, while fewer than `capacity` are; each connection prepares its own
    /// under a name never used before.
    @Test func onlyStatementsRunAgainArePrepared() {
        let statements = PreparedStatements(threshold: 3, capacity: 2, maxParameters: 4)
        let select = "SELECT id FROM users WHERE id = $1"
        func plan(_ sql: String, _ args: [SQLValue] = [.text("u")], on connection: Int = 1) -> PreparedStatements.Plan {
            statements.plan(sql, args, connection: connection).0
        }
        #expect(plan(select) == .plain)
        #expect(plan(select) == .plain)
        guard case .execute(let name, let prepare?, let index) = plan(select) else { Issue.record("not prepared on the third run"); return }
        #expect(prepare == "PREPARE \(name)(text) AS \(select)")
        // Not yet recorded as prepared (its PREPARE may have failed): prepared again, new name.
        guard case .execute(let again, _?, _) = plan(select), again != name else { Issue.record("no new name"); return }
        statements.prepared(again, index: index, on: 1)
        #expect(plan(select) == .execute(name: again, prepare: nil, index: index))
        // Another connection prepares it for itself; other argument types are another statement.
        guard case .execute(let other, _?, _) = plan(select, on: 2) else { Issue.record("not prepared on connection 2"); return }
        #expect(other != again)
        #expect(plan(select, [.integer(1)]) == .plain)
        // Forgotten (a table it reads changed): prepared again, under a new name.
        statements.forget(again, on: 1)
        guard case .execute(let renewed, _?, _) = plan(select) else { Issue.record("not prepared again"); return }
        #expect(![name, again, other].contains(renewed))
        // A closed connection's statements are forgotten.
        #expect(statements.connectionCount == 2)
        statements.closed(2)
        #expect(statements.connectionCount == 1)
        // Statements PREPARE does not take, or with too many arguments, never are.
        for sql in ["BEGIN", "COMMIT", "SET LOCAL statement_timeout = 5", "DECLARE c NO SCROLL CURSOR FOR SELECT 1",
                    "FETCH FORWARD 10 FROM c", "PREPARE x AS SELECT 1", "-- a comment\nSELECT 1", "SELECTED"] {
            for _ in 0..<4 { #expect(plan(sql, []) == .plain, "\(sql)") }
        }
        let many = "SELECT $1, $2, $3, $4, $5"
        for _ in 0..<4 { #expect(plan(many, Array(repeating: .integer(1), count: 5)) == .plain) }
        // Full: a second text is taken, a third is not.
        for _ in 0..<3 { _ = plan("  with x AS (SELECT $1 AS v) SELECT v FROM x") }
        #expect(statements.chosenCount == 2)
        for _ in 0..<5 { #expect(plan("UPDATE users SET name = $1") == .plain) }
    }

    /// Literals as PostgreSQL must read them: quotes doubled, nothing else escaped, a text
    /// holding NUL refused (the statement is then sent with bound arguments, and PostgreSQL
    /// refuses the NUL itself).
    @Test func argumentsAreWrittenAsTypedLiterals() {
        #expect(PreparedStatements.literal(.text("it's")) == "'it''s'::text")
        #expect(PreparedStatements.literal(.text("a\\b")) == "'a\\b'::text")
        #expect(PreparedStatements.literal(.text("a\0b")) == nil)
        // Written as UTF-8 bytes: multi-byte characters pass whole, a quote after one is doubled.
        #expect(PreparedStatements.literal(.text("é'😀ß")) == "'é''😀ß'::text")
        #expect(PreparedStatements.literal(.textArray(["😀\"", "ü'"])) == #"'{"😀\"","ü''"}'::text[]"#)
        #expect(PreparedStatements.literal(.real(0.1)) == "'0.1'::float8")
        #expect(PreparedStatements.literal(.real(-.infinity)) == "'-inf'::float8")
        #expect(PreparedStatements.literal(.bool(true)) == "true")
        #expect(PreparedStatements.literal(.integer(-9_223_372_036_854_775_808)) == "'-9223372036854775808'::int8")
        #expect(PreparedStatements.literal(.blob([0, 0xab, 0xff])) == "'\\x00abff'::bytea")
        #expect(PreparedStatements.literal(.textArray(["a", "b'c", "d\\\"e"])) == #"'{"a","b''c","d\\\"e"}'::text[]"#)
        #expect(PreparedStatements.literal(.textArray([])) == "'{}'::text[]")
        #expect(PreparedStatements.literal(.integerArray([1, -2])) == "'{1,-2}'::int8[]")
        #expect(PreparedStatements.literal(.null) == "NULL")
        #expect(PreparedStatements.literal(.real(-.signalingNaN)) == "'NaN'::float8")
        #expect(PreparedStatements.literal(.real(-0.0)) == "'-0.0'::float8")
        #expect(PreparedStatements.execute("s1", [.integer(1), .text("x")]) == "EXECUTE s1('1'::int8, 'x'::text)")
        #expect(PreparedStatements.execute("s1", []) == "EXECUTE s1")
        #expect(PreparedStatements.execute("s1", [.textArray(["\0"])]) == nil)
    }

    /// Every kind of value reads back the same through a prepared statement as through the
    /// statement sent with bound arguments (the first runs, before it is prepared): texts with
    /// quotes, backslashes, `{`, `"`, commas and any Unicode, the extreme integers, doubles that
    /// need all their digits, every byte, arrays.
    @Test func valuesReadBackTheSameThroughPreparedStatements() async throws {
        guard Backend.postgresURL != nil else { return }
        let h = try await TestHarness.make(backend: .postgis)
        let store = try #require(h.store as? PostgresStore)
        let texts = ["", "plain", "it's", "''", "a\\b", "\\x41", "E'\\n'", "{\"a\",b}", "NULL", "$1", "$$ $q$", "🛰️ Zürich ĳ 東京",
                     "line\nbreak\ttab\r", String(repeating: "x'", count: 500), "--", "/*", "); DROP TABLE users; --"]
        let integers: [Int64] = [0, 1, -1, .max, .min, 1_700_000_000_000]
        let doubles: [Double] = [0, -0.0, 0.1, 1e-5, -1e-300, 5e-324, .greatestFiniteMagnitude, 47.376_887_123_456_78,
                                 -122.419_415_999_999_99, .infinity, -.infinity]
        let bytes: [[UInt8]] = [[], [0], Array(0...255), [0x5c, 0x27, 0x78]]
        let arrays: [[String]] = [[], ["a"], ["a,b", "{c}", "\"d\"", "it's", "\\", "NULL", ""], texts]
        let (read, prepared) = try await store.read { db in
            var read: [String] = []
            func one(_ sql: String, _ value: SQLValue) async throws -> SQLValue {
                try #require(try await db.rows(sql, [value]).first)["v"]
            }
            // Each statement runs five times first, so the values after run prepared.
            for _ in 0..<5 { _ = try await one("SELECT $1 AS v", .text("warm")) }
            for t in texts {
                if try await one("SELECT $1 AS v", .text(t)) != .text(t) { read.append("text \(t.debugDescription)") }
            }
            for _ in 0..<5 { _ = try await one("SELECT $1 AS v", .integer(7)) }
            for i in integers {
                if try await one("SELECT $1 AS v", .integer(i)) != .integer(i) { read.append("integer \(i)") }
            }
            for _ in 0..<5 { _ = try await one("SELECT $1 AS v", .real(1)) }
            for d in doubles {
                guard case .real(let back) = try await one("SELECT $1 AS v", .real(d)), back.bitPattern == d.bitPattern else {
                    read.append("double \(d)"); continue
                }
            }
            if case .real(let back) = try await one("SELECT $1 AS v", .real(.nan)), back.isNaN {} else { read.append("nan") }
            for _ in 0..<5 { _ = try await one("SELECT $1 AS v", .blob([1])) }
            for b in bytes {
                if try await one("SELECT $1 AS v", .blob(b)) != .blob(b) { read.append("bytes \(b.count)") }
            }
            for _ in 0..<5 { _ = try await one("SELECT $1 AS v", .bool(true)) }
            for b in [true, false] {
                if try await one("SELECT $1 AS v", .bool(b)) != .integer(b ? 1 : 0) { read.append("bool \(b)") }
            }
            let unnest = "SELECT x FROM unnest($1::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i"
            for _ in 0..<5 { _ = try await db.rows(unnest, [SQLValue.textArray(["warm"])]) }
            for a in arrays {
                if try await db.rows(unnest, [SQLValue.textArray(a)]).map({ try $0.string("x") }) != a { read.append("array \(a.prefix(3))") }
            }
            let numbers = "SELECT x FROM unnest($1::int8[]) WITH ORDINALITY AS u(x, i) ORDER BY i"
            for _ in 0..<5 { _ = try await db.rows(numbers, [SQLValue.integerArray([1])]) }
            for a: [Int64] in [[], [.min, 0, .max]] {
                if try await db.rows(numbers, [SQLValue.integerArray(a)]).map({ try $0.int64("x") }) != a { read.append("integers \(a)") }
            }
            // A NULL is a statement of its own (its type is PostgreSQL's to infer).
            let nullable = "SELECT CAST($1 AS TEXT) AS v"
            for value: SQLValue in [.null, .null, .null, .null, .text("x"), .null] {
                if try await one(nullable, value) != value { read.append("null \(value)") }
            }
            let prepared = try await db.rows("SELECT statement FROM pg_prepared_statements").map { try $0.string("statement") }
            return (read, prepared)
        }
        #expect(read == [], "values that did not read back the same")
        // The values above did run prepared (this session's connection holds the statements).
        for sql in ["SELECT $1 AS v", "SELECT x FROM unnest($1::text[])", "SELECT x FROM unnest($1::int8[])", "SELECT CAST($1 AS TEXT)"] {
            #expect(prepared.contains { $0.contains(sql) }, "\(sql) was not prepared: \(prepared)")
        }
    }

    /// A prepared `SELECT *` whose table gains a column fails once on each connection that had
    /// it prepared ("cached plan must not change result type"), as a retryable 503, and is
    /// prepared anew: the reads after it see the new column.
    @Test func aStatementWhoseTableChangedIsPreparedAgain() async throws {
        guard Backend.postgresURL != nil else { return }
        let h = try await TestHarness.make(backend: .postgis)
        let store = try #require(h.store as? PostgresStore)
        try await store.write { db, _ in
            try await db.rows("CREATE TABLE prepared_probe (a BIGINT)")
            try await db.rows("INSERT INTO prepared_probe (a) VALUES (1)")
        }
        for _ in 0..<6 { _ = try await store.read { db in try await db.rows("SELECT * FROM prepared_probe", []) } }
        #expect(try #require(store.statements).chosenCount > 0)
        try await store.write { db, _ in
            try await db.rows("ALTER TABLE prepared_probe ADD COLUMN b BIGINT NOT NULL DEFAULT 5")
        }
        var failures: [String] = [], outcomes: [Int64?] = []
        for _ in 0..<40 {
            do {
                let rows = try await store.read { db in try await db.rows("SELECT * FROM prepared_probe", []) }
                outcomes.append(try rows.first?.int64("b") ?? -1)
            } catch let error as DBeaconError {
                failures.append(error.code)
                outcomes.append(nil)
            }
        }
        #expect(Set(failures).isSubset(of: ["database_busy"]), "\(failures)")
        #expect(failures.count <= 16, "at most once per pooled connection")
        #expect(outcomes.suffix(20) == Array(repeating: 5, count: 20))
    }

    /// `prepare=off` in the database URL sends every statement as it is; another value is refused.
    @Test func theURLCanTurnPreparingOff() async throws {
        #expect(try PostgresURL("postgres://u@h/db?schema=x&prepare=off").prepares == false)
        #expect(try PostgresURL("postgres://u@h/db?prepare=on").prepares == true)
        #expect(try PostgresURL("postgres://u@h/db").prepares == true)
        #expect { try PostgresURL("postgres://u@h/db?prepare=yes") } throws: { ($0 as? DBeaconError)?.code == "invalid_database_url" }
        guard Backend.postgresURL != nil else { return }
        let location = try Backend.postgis.freshDatabase(in: FileManager.default.temporaryDirectory) + "&prepare=off"
        let store = try #require(try await StoreLocation.open(location, listen: false, deadline: Backend.testDeadline,
                                                             logger: TestHarness.logger) as? PostgresStore)
        #expect(store.statements == nil)
        let prepared = try await store.read { db in
            for _ in 0..<6 { _ = try await db.rows("SELECT $1 AS v", [SQLValue.integer(1)]) }
            return try await db.rows("SELECT count(*) AS n FROM pg_prepared_statements").first?.int("n")
        }
        #expect(prepared == 0)
        await store.shutdown()
    }
}
