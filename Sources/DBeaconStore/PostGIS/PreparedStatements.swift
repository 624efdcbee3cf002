import DBeaconCore
import NIOCore
import PostgresNIO
import Synchronization

/// The statements a node runs again and again, run as PostgreSQL prepared statements: each is
/// prepared once per connection (`PREPARE name(types) AS …`) and then run as `EXECUTE
/// name(…)` with its arguments written as literals, so PostgreSQL parses, analyses and plans it
/// once per connection instead of on every run. On two nodes taking location fixes, parsing and planning were about 40 % of
/// PostgreSQL's CPU (`perf`; `pg_stat_statements` put the token check's plan at 0.4 ms a run).
///
/// Prepared with SQL (`PREPARE`/`EXECUTE` through the connection's ordinary query path) and not
/// with the wire protocol's named statements: postgres-nio keeps a failed preparation as the
/// statement's answer for the rest of the connection, and streams a named statement's rows with
/// back-pressure, the path `PostgresSession.rows` avoids. `PREPARE` is not transactional: a
/// statement prepared in a transaction that is rolled back stays prepared.
///
/// Which statements: those starting `SELECT`, `INSERT`, `UPDATE`, `DELETE` or `WITH` (all
/// `PREPARE` takes), with at most `maxParameters` arguments (a multi-row `VALUES` list of many
/// rows is a text of its own for each length), once the same text with the same argument types
/// has run `threshold` times in this process (a statement run once would pay a round trip more
/// and gain nothing), and while fewer than `capacity` texts are prepared. A prepared statement's
/// name is new each time it is prepared, so forgetting one (below) can never collide with a
/// statement the server still holds.
///
/// The arguments being literals, PostgreSQL's log shows them when it logs a failing `EXECUTE`
/// (a plain statement's shows `$1`, …): `docs/scaling.md` says so, and `prepare=off` in the
/// database URL turns all of this off.
final class PreparedStatements: Sendable {
    /// A statement text with the PostgreSQL types of its arguments.
    struct Key: Hashable, Sendable {
        let sql: String
        let types: [String]
    }

    /// What `PostgresSession.rows` sends.
    enum Plan: Equatable {
        /// The statement itself (not prepared, or not yet).
        case plain
        /// `EXECUTE name(…)`, after `PREPARE` (the SQL given) when `prepare` is set; `index`
        /// is the text's, for `prepared`.
        case execute(name: String, prepare: String?, index: Int)
    }

    private struct State {
        /// How many times each text not yet prepared ran (at most `counted` texts).
        var runs: [Key: Int] = [:]
        /// The texts being prepared, each with its index.
        var chosen: [Key: Int] = [:]
        /// Per connection, the name of each text prepared on it.
        var prepared: [PostgresConnection.ID: [Int: String]] = [:]
        var nextName = 0
    }

    private let state = Mutex(State())
    let threshold: Int
    let capacity: Int
    let maxParameters: Int
    /// The most texts counted before they are chosen; beyond it a new text is not counted.
    private let counted = 4096

    init(threshold: Int = 3, capacity: Int = 256, maxParameters: Int = 32) {
        self.threshold = threshold
        self.capacity = capacity
        self.maxParameters = maxParameters
    }

    /// How many texts are chosen to be prepared (for tests).
    var chosenCount: Int { state.withLock { $0.chosen.count } }

    /// How many connections have statements prepared (for tests: a closed connection's are forgotten).
    var connectionCount: Int { state.withLock { $0.prepared.count } }

    /// What to send for `sql` with `arguments` on `connection`.
    func plan(_ sql: String, _ arguments: [SQLValue], on connection: PostgresConnection) -> Plan {
        let (plan, isNew) = plan(sql, arguments, connection: connection.id)
        if isNew {
            // A connection's statements end with it.
            let id = connection.id
            connection.closeFuture.whenComplete { [weak self] _ in self?.closed(id) }
        }
        return plan
    }

    /// `plan` on the connection numbered `connection`, and whether it is new here.
    func plan(_ sql: String, _ arguments: [SQLValue], connection: PostgresConnection.ID) -> (Plan, isNew: Bool) {
        guard arguments.count <= maxParameters, Self.isPreparable(sql) else { return (.plain, false) }
        let key = Key(sql: sql, types: arguments.map(Self.type))
        return state.withLock { s -> (Plan, Bool) in
            let index: Int
            if let chosen = s.chosen[key] {
                index = chosen
            } else {
                if s.chosen.count >= capacity { return (.plain, false) }
                let runs = (s.runs[key] ?? 0) + 1
                if runs < threshold {
                    if s.runs[key] != nil || s.runs.count < counted { s.runs[key] = runs }
                    return (.plain, false)
                }
                s.runs[key] = nil
                index = s.chosen.count
                s.chosen[key] = index
            }
            let known = s.prepared[connection]
            if let name = known?[index] { return (.execute(name: name, prepare: nil, index: index), false) }
            if known == nil { s.prepared[connection] = [:] }
            s.nextName += 1
            let name = "dbeacon_s\(s.nextName)"
            let types = key.types.isEmpty ? "" : "(" + key.types.joined(separator: ", ") + ")"
            return (.execute(name: name, prepare: "PREPARE \(name)\(types) AS \(sql)", index: index), known == nil)
        }
    }

    /// Forgets what was prepared on a connection that closed.
    func closed(_ connection: PostgresConnection.ID) {
        state.withLock { _ = $0.prepared.removeValue(forKey: connection) }
    }

    /// Records that `name`, the text numbered `index`, is now prepared on `connection` (a
    /// connection that closed meanwhile is not recorded again).
    func prepared(_ name: String, index: Int, on connection: PostgresConnection.ID) {
        state.withLock { s in s.prepared[connection]?[index] = name }
    }

    /// Forgets the statement `name` on `connection` (it failed in a way preparing it again
    /// mends: PostgreSQL no longer has it, or a table it reads changed its columns).
    func forget(_ name: String, on connection: PostgresConnection.ID) {
        state.withLock { s in
            guard let index = s.prepared[connection]?.first(where: { $0.value == name })?.key else { return }
            s.prepared[connection]?[index] = nil
        }
    }

    /// Whether `PREPARE` takes the statement: it starts `SELECT`, `INSERT`, `UPDATE`, `DELETE`
    /// or `WITH`.
    static func isPreparable(_ sql: String) -> Bool {
        var word: [UInt8] = []
        for byte in sql.utf8 {
            let lower = byte | 0x20
            if lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z") {
                word.append(lower)
                if word.count > 6 { return false }
            } else if word.isEmpty && (byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")) {
                continue
            } else {
                break
            }
        }
        switch String(decoding: word, as: UTF8.self) {
        case "select", "insert", "update", "delete", "with": return true
        default: return false
        }
    }

    /// The PostgreSQL type `PostgresSession` binds a value as (`unknown` for NULL: PostgreSQL
    /// infers it, as it does for a NULL bound to a plain statement).
    static func type(_ value: SQLValue) -> String {
        switch value {
        case .null: "unknown"
        case .integer: "int8"
        case .real: "float8"
        case .bool: "bool"
        case .text: "text"
        case .blob: "bytea"
        case .textArray: "text[]"
        case .integerArray: "int8[]"
        }
    }

    /// `EXECUTE name(…)` with the arguments written as literals, or nil when one cannot be (a
    /// text holding NUL, which PostgreSQL refuses anyway): PostgreSQL takes no `$n` parameters
    /// in `EXECUTE` sent through the extended protocol ("there is no parameter $1"). Strings are
    /// written with `standard_conforming_strings` on, which `PostgresStore` sets for its
    /// connections: a quote is doubled, and nothing else is special.
    ///
    /// Written as UTF-8 bytes, one `String` at the end: appending the texts scalar by scalar
    /// to a `String` was 2.5 % of a PostgreSQL node's CPU under location fixes (now 0.3 %).
    static func execute(_ name: String, _ arguments: [SQLValue]) -> String? {
        if arguments.isEmpty { return "EXECUTE \(name)" }
        var out: [UInt8] = []
        out.reserveCapacity(16 + name.utf8.count + 24 * arguments.count)
        out.append(contentsOf: "EXECUTE ".utf8)
        out.append(contentsOf: name.utf8)
        out.append(UInt8(ascii: "("))
        for (i, argument) in arguments.enumerated() {
            if i > 0 { out.append(contentsOf: ", ".utf8) }
            guard appendLiteral(argument, to: &out) else { return nil }
        }
        out.append(UInt8(ascii: ")"))
        return String(decoding: out, as: UTF8.self)
    }

    /// A value as a typed SQL literal (the types of `type`), or nil for a text holding NUL.
    static func literal(_ value: SQLValue) -> String? {
        var out: [UInt8] = []
        guard appendLiteral(value, to: &out) else { return nil }
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `value` as a typed SQL literal to `out`; false for a text holding NUL. The bytes
    /// that matter (quote, backslash, double quote, NUL) are ASCII, and no byte of a multi-byte
    /// UTF-8 sequence is, so the texts are escaped byte by byte.
    static func appendLiteral(_ value: SQLValue, to out: inout [UInt8]) -> Bool {
        switch value {
        case .null: out.append(contentsOf: "NULL".utf8)
        case .integer(let v): // quoted: -9223372036854775808::int8 negates a number out of range
            out.append(UInt8(ascii: "'"))
            out.append(contentsOf: String(v).utf8)
            out.append(contentsOf: "'::int8".utf8)
        case .real(let v):
            // Swift's shortest text that reads back as the same double; PostgreSQL reads `inf`
            // and `-inf` too (a NaN, whatever its sign or payload, is written as PostgreSQL's).
            out.append(UInt8(ascii: "'"))
            out.append(contentsOf: (v.isNaN ? "NaN" : v.description).utf8)
            out.append(contentsOf: "'::float8".utf8)
        case .bool(let v): out.append(contentsOf: (v ? "true" : "false").utf8)
        case .text(let v):
            guard appendQuoted(v, to: &out) else { return false }
            out.append(contentsOf: "::text".utf8)
        case .blob(let v):
            out.append(contentsOf: "'\\x".utf8)
            Hex.append(v, to: &out)
            out.append(contentsOf: "'::bytea".utf8)
        case .textArray(let v):
            // One array literal (read by array_in, where ARRAY[…] would be an expression per
            // element): each element in double quotes, `\` and `"` escaped with a backslash.
            out.append(contentsOf: "'{".utf8)
            for (i, element) in v.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "\""))
                for byte in element.utf8 {
                    switch byte {
                    case 0: return false
                    case UInt8(ascii: "\\"), UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(byte)
                    case UInt8(ascii: "'"): out.append(byte); out.append(byte)
                    default: out.append(byte)
                    }
                }
                out.append(UInt8(ascii: "\""))
            }
            out.append(contentsOf: "}'::text[]".utf8)
        case .integerArray(let v):
            out.append(contentsOf: "'{".utf8)
            for (i, element) in v.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: String(element).utf8)
            }
            out.append(contentsOf: "}'::int8[]".utf8)
        }
        return true
    }

    /// Appends `'text'` with each quote doubled; false for a text holding NUL.
    static func appendQuoted(_ text: String, to out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "'"))
        for byte in text.utf8 {
            if byte == 0 { return false }
            out.append(byte)
            if byte == UInt8(ascii: "'") { out.append(byte) }
        }
        out.append(UInt8(ascii: "'"))
        return true
    }
}
