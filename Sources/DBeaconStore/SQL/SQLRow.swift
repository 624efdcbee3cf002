package import DBeaconCore

/// The column names of a result, shared by its rows.
package final class SQLColumns: Sendable {
    package let names: [String]
    private let index: [String: Int]

    package init(_ names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (i, name) in names.enumerated() where index[name] == nil { index[name] = i }
        self.index = index
    }

    func position(of name: String) -> Int? { index[name] }
}

/// One result row, read by column name. Both databases produce the same values for the same
/// schema: integers (booleans as 0/1), reals, text, blobs and NULL.
package struct SQLRow: Sendable {
    package let columns: SQLColumns
    package let values: [SQLValue]

    package init(columns: SQLColumns, values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    package subscript(_ name: String) -> SQLValue {
        get throws {
            guard let i = columns.position(of: name) else {
                throw DBeaconError.internalError("database error", cause: "no column \(name) in \(columns.names)")
            }
            return values[i]
        }
    }

    private func mismatch(_ name: String, _ value: SQLValue, _ expected: String) -> DBeaconError {
        DBeaconError.internalError("database error", cause: "column \(name) holds \(value), expected \(expected)")
    }

    package func optionalString(_ name: String) throws -> String? {
        switch try self[name] {
        case .null: return nil
        case .text(let s): return s
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case let other: throw mismatch(name, other, "text")
        }
    }

    package func optionalInt64(_ name: String) throws -> Int64? {
        switch try self[name] {
        case .null: return nil
        case .integer(let i): return i
        case .real(let d) where d == d.rounded() && abs(d) < 9e18: return Int64(d)
        case .bool(let b): return b ? 1 : 0
        case .text(let s) where Int64(s) != nil: return Int64(s)
        case let other: throw mismatch(name, other, "an integer")
        }
    }

    package func optionalDouble(_ name: String) throws -> Double? {
        switch try self[name] {
        case .null: return nil
        case .real(let d): return d
        case .integer(let i): return Double(i)
        case let other: throw mismatch(name, other, "a number")
        }
    }

    package func optionalBytes(_ name: String) throws -> [UInt8]? {
        switch try self[name] {
        case .null: return nil
        case .blob(let b): return b
        case .text(let s): return Array(s.utf8)
        case let other: throw mismatch(name, other, "a blob")
        }
    }

    package func string(_ name: String) throws -> String { try required(name, optionalString(name)) }
    package func int64(_ name: String) throws -> Int64 { try required(name, optionalInt64(name)) }
    package func int(_ name: String) throws -> Int { Int(try int64(name)) }
    package func optionalInt(_ name: String) throws -> Int? { try optionalInt64(name).map(Int.init) }
    package func double(_ name: String) throws -> Double { try required(name, optionalDouble(name)) }
    package func bool(_ name: String) throws -> Bool { try int64(name) != 0 }
    package func optionalBool(_ name: String) throws -> Bool? { try optionalInt64(name).map { $0 != 0 } }
    package func bytes(_ name: String) throws -> [UInt8] { try required(name, optionalBytes(name)) }
    package func timestamp(_ name: String) throws -> Timestamp { Timestamp(millis: try int64(name)) }
    package func optionalTimestamp(_ name: String) throws -> Timestamp? { try optionalInt64(name).map(Timestamp.init(millis:)) }

    private func required<T>(_ name: String, _ value: T?) throws -> T {
        guard let value else { throw DBeaconError.internalError("database error", cause: "column \(name) is NULL") }
        return value
    }
}
