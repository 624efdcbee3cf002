import DBeaconCore

/// A value bound to a statement or read from a row, in the types both databases share.
/// Booleans are read back as integers (0/1); arrays are bound only (PostgreSQL arrays,
/// JSON arrays on SQLite: see `SQLDialect.list` and `SQLDialect.elements`).
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case bool(Bool)
    case textArray([String])
    case integerArray([Int64])
}

/// Something that can be bound to a `$n` placeholder.
package protocol SQLArgument: Sendable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLArgument {
    package var sqlValue: SQLValue { self }
}

extension String: SQLArgument {
    package var sqlValue: SQLValue { .text(self) }
}

extension Int: SQLArgument {
    package var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int64: SQLArgument {
    package var sqlValue: SQLValue { .integer(self) }
}

extension Double: SQLArgument {
    package var sqlValue: SQLValue { .real(self) }
}

extension Bool: SQLArgument {
    package var sqlValue: SQLValue { .bool(self) }
}

extension Optional: SQLArgument where Wrapped: SQLArgument {
    package var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

extension Array: SQLArgument where Element: SQLArrayElement {
    package var sqlValue: SQLValue { Element.arrayValue(self) }
}

/// Elements of arrays bound as one parameter (`IN` lists, bulk inserts).
package protocol SQLArrayElement: Sendable {
    static func arrayValue(_ values: [Self]) -> SQLValue
}

extension String: SQLArrayElement {
    package static func arrayValue(_ values: [String]) -> SQLValue { .textArray(values) }
}

extension Int64: SQLArrayElement {
    package static func arrayValue(_ values: [Int64]) -> SQLValue { .integerArray(values) }
}

/// Bytes bound as a BLOB / BYTEA (WKB geometries, token hashes).
package struct SQLBlob: SQLArgument {
    package var bytes: [UInt8]
    package init(_ bytes: [UInt8]) { self.bytes = bytes }
    package var sqlValue: SQLValue { .blob(bytes) }
}

extension SQLValue {
    /// A JSON array literal of the array's elements (how SQLite receives arrays, for `json_each`).
    var jsonArray: String? {
        switch self {
        case .textArray(let values):
            // Written straight from the strings (a load binds 20,000 ids per query: no tree of
            // `JSONValue`s built and walked for each).
            var w = JSONWriter(capacity: values.reduce(2) { $0 + $1.utf8.count + 3 })
            w.appendASCII("[")
            for (i, value) in values.enumerated() {
                if i > 0 { w.appendASCII(",") }
                w.writeString(value)
            }
            w.appendASCII("]")
            return String(decoding: w.bytes, as: UTF8.self)
        case .integerArray(let values): return "[" + values.map(String.init).joined(separator: ",") + "]"
        default: return nil
        }
    }
}
