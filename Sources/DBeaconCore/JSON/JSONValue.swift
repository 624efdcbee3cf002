/// A JSON document held in memory, with object keys kept in their original order.
///
/// DBeacon parses request bodies into `JSONValue` itself (instead of `Codable`) so that
/// every validation error can name the exact path of the offending value, and so that
/// `NaN`/`Infinity` sent by lenient clients reach validation (and a 422 naming the field)
/// instead of failing as unreadable JSON.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// A short name of the JSON type, for error messages ("expected a number, got a string").
    package var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    package var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    package var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    package var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    package var numberValue: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    package var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    package subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}

/// An ordered JSON object. Lookups are linear, which is fastest for the small objects
/// of this API; duplicate keys keep the last value, as most JSON parsers do.
package struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    package private(set) var members: [(key: String, value: JSONValue)]

    package init() { members = [] }

    package init(_ members: [(String, JSONValue)]) {
        self.members = []
        self.members.reserveCapacity(members.count)
        for (k, v) in members { self[k] = v }
    }

    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }

    package var keys: [String] { members.map(\.key) }
    package var count: Int { members.count }
    package var isEmpty: Bool { members.isEmpty }

    package subscript(key: String) -> JSONValue? {
        get {
            for m in members where m.key == key { return m.value }
            return nil
        }
        set {
            if let i = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (k, v) in lhs.members where rhs[k] != v { return false }
        return true
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByFloatLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByNilLiteral, ExpressibleByDictionaryLiteral
{
    package init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
    package init(stringLiteral value: String) { self = .string(value) }
    package init(floatLiteral value: Double) { self = .number(value) }
    package init(integerLiteral value: Int) { self = .number(Double(value)) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
    /// `.string` for a value, `.null` for nil.
    package static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
    /// `.number` for a value, `.null` for nil.
    package static func optional(_ n: Double?) -> JSONValue { n.map(JSONValue.number) ?? .null }
    /// A number from an integer.
    package static func int(_ i: Int) -> JSONValue { .number(Double(i)) }
    /// A number from an integer, or null.
    package static func int(_ i: Int?) -> JSONValue { i.map { .number(Double($0)) } ?? .null }
}

extension JSONValue {
    /// RFC 7396 JSON merge patch: objects merge recursively, `null` removes a member,
    /// anything else replaces the target.
    package func mergePatched(with patch: JSONValue) -> JSONValue {
        guard case .object(let patchObject) = patch else { return patch }
        var result = self.objectValue ?? JSONObject()
        for (key, value) in patchObject.members {
            if value.isNull {
                result[key] = nil
            } else {
                result[key] = (result[key] ?? .null).mergePatched(with: value)
            }
        }
        return .object(result)
    }
}

extension Double {
    /// A number written in decimal (`-12.5`, `4e-3`, `.5`): what a JSON number or a query
    /// parameter holds. Swift's `Double(String)` also reads hexadecimal (`0x10`, `0x1p4`), `nan`
    /// and `inf`, which no client means by a coordinate.
    package init?(decimal text: some StringProtocol) {
        let bytes = Array(text.utf8)
        var i = 0, digits = 0
        if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
        while i < bytes.count, (48...57).contains(bytes[i]) { i += 1; digits += 1 }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            while i < bytes.count, (48...57).contains(bytes[i]) { i += 1; digits += 1 }
        }
        guard digits > 0 else { return nil }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            var exponent = 0
            while i < bytes.count, (48...57).contains(bytes[i]) { i += 1; exponent += 1 }
            guard exponent > 0 else { return nil }
        }
        guard i == bytes.count, let value = Double(String(decoding: bytes, as: UTF8.self)) else { return nil }
        self = value
    }
}
