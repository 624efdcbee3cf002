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

/// A column named in a result: by its name (`row.string("id")`), or found once by name and read
/// by position in every row of the result (`SQLColumn`), for results of many rows.
package protocol SQLColumnReference {
    var columnName: String { get }
    func position(in columns: SQLColumns) -> Int?
}

extension String: SQLColumnReference {
    package var columnName: String { self }
    package func position(in columns: SQLColumns) -> Int? { columns.position(of: self) }
}

/// A column's position in one result, looked up once (rows of a result share their columns);
/// read from a row of another result, it is looked up by name there.
package struct SQLColumn: SQLColumnReference, Sendable {
    package let columnName: String
    let columns: SQLColumns
    let position: Int?

    package init(_ name: String, in columns: SQLColumns) {
        columnName = name
        self.columns = columns
        position = columns.position(of: name)
    }

    package func position(in columns: SQLColumns) -> Int? {
        columns === self.columns ? position : columns.position(of: columnName)
    }
}

/// A column's position in one result, found once by a name known at compile time: read by
/// position with no lookup and nothing retained (a load reads twenty columns of a million rows).
package struct SQLColumnPosition: SQLColumnReference, Sendable {
    let name: StaticString
    /// -1: no such column (reading it throws, naming it).
    let position: Int

    package init(_ name: StaticString, in columns: SQLColumns) {
        self.name = name
        position = columns.position(of: name.description) ?? -1
    }

    package var columnName: String { name.description }
    package func position(in columns: SQLColumns) -> Int? {
        position >= 0 && position < columns.names.count ? position : nil
    }
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

    package subscript(_ name: some SQLColumnReference) -> SQLValue {
        get throws {
            guard let i = name.position(in: columns) else {
                throw DBeaconError.internalError("database error", cause: "no column \(name.columnName) in \(columns.names)")
            }
            return values[i]
        }
    }

    private func mismatch(_ name: String, _ value: SQLValue, _ expected: String) -> DBeaconError {
        DBeaconError.internalError("database error", cause: "column \(name) holds \(value), expected \(expected)")
    }

    package func optionalString(_ name: some SQLColumnReference) throws -> String? {
        switch try self[name] {
        case .null: return nil
        case .text(let s): return s
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case let other: throw mismatch(name.columnName, other, "text")
        }
    }

    package func optionalInt64(_ name: some SQLColumnReference) throws -> Int64? {
        switch try self[name] {
        case .null: return nil
        case .integer(let i): return i
        case .real(let d) where d == d.rounded() && abs(d) < 9e18: return Int64(d)
        case .bool(let b): return b ? 1 : 0
        case .text(let s) where Int64(s) != nil: return Int64(s)
        case let other: throw mismatch(name.columnName, other, "an integer")
        }
    }

    package func optionalDouble(_ name: some SQLColumnReference) throws -> Double? {
        switch try self[name] {
        case .null: return nil
        case .real(let d): return d
        case .integer(let i): return Double(i)
        case let other: throw mismatch(name.columnName, other, "a number")
        }
    }

    package func optionalBytes(_ name: some SQLColumnReference) throws -> [UInt8]? {
        switch try self[name] {
        case .null: return nil
        case .blob(let b): return b
        case .text(let s): return Array(s.utf8)
        case let other: throw mismatch(name.columnName, other, "a blob")
        }
    }

    package func string(_ name: some SQLColumnReference) throws -> String { try required(name.columnName, optionalString(name)) }
    package func int64(_ name: some SQLColumnReference) throws -> Int64 { try required(name.columnName, optionalInt64(name)) }
    package func int(_ name: some SQLColumnReference) throws -> Int { Int(try int64(name)) }
    package func optionalInt(_ name: some SQLColumnReference) throws -> Int? { try optionalInt64(name).map(Int.init) }
    package func double(_ name: some SQLColumnReference) throws -> Double { try required(name.columnName, optionalDouble(name)) }
    package func bool(_ name: some SQLColumnReference) throws -> Bool { try int64(name) != 0 }
    package func optionalBool(_ name: some SQLColumnReference) throws -> Bool? { try optionalInt64(name).map { $0 != 0 } }
    package func bytes(_ name: some SQLColumnReference) throws -> [UInt8] { try required(name.columnName, optionalBytes(name)) }
    package func timestamp(_ name: some SQLColumnReference) throws -> Timestamp { Timestamp(millis: try int64(name)) }
    package func optionalTimestamp(_ name: some SQLColumnReference) throws -> Timestamp? { try optionalInt64(name).map(Timestamp.init(millis:)) }

    // (The name is read only for the error: a load reads twenty columns of a million rows.)
    private func required<T>(_ name: @autoclosure () -> String, _ value: T?) throws -> T {
        guard let value else { throw DBeaconError.internalError("database error", cause: "column \(name()) is NULL") }
        return value
    }
}
