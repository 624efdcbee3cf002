/// Decodes a `Decodable` type from a parsed `JSONValue` (`JSONParser`): the wire models' typed
/// form at the speed of the house parser. Foundation's `JSONDecoder` took 9 % of the CPU of an
/// OwnTracks post to read back a phone's small stored state.
///
/// Numbers are the parser's doubles: an integer type accepts a number with no fraction that it
/// can hold; a fraction or an out-of-range value is a `DecodingError`, as Foundation would say.
package enum JSONValueDecoder {
    /// `T` from `value`.
    package static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try T(from: ValueDecoder(value: value, codingPath: []))
    }

    /// `T` from JSON text.
    package static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        try decode(type, from: try JSONParser.parse(Array(text.utf8)))
    }
}

private struct Key: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

private func mismatch<T>(_ type: T.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(value.typeName)"))
}

/// The value as `T`: a Bool, a String, a number read as any numeric type, or `nil`.
private func scalar<T>(_ type: T.Type, _ value: JSONValue, _ path: [any CodingKey]) throws -> T {
    switch value {
    case .bool(let b) where T.self == Bool.self: return b as! T
    case .string(let s) where T.self == String.self: return s as! T
    case .number(let n):
        if T.self == Double.self { return n as! T }
        if T.self == Float.self { return Float(n) as! T }
        func exact<I: BinaryInteger>(_: I.Type) throws -> I {
            guard n.rounded() == n, let i = I(exactly: n) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(n) does not fit \(I.self)"))
            }
            return i
        }
        switch T.self {
        case is Int.Type: return try exact(Int.self) as! T
        case is Int64.Type: return try exact(Int64.self) as! T
        case is Int32.Type: return try exact(Int32.self) as! T
        case is Int16.Type: return try exact(Int16.self) as! T
        case is Int8.Type: return try exact(Int8.self) as! T
        case is UInt.Type: return try exact(UInt.self) as! T
        case is UInt64.Type: return try exact(UInt64.self) as! T
        case is UInt32.Type: return try exact(UInt32.self) as! T
        case is UInt16.Type: return try exact(UInt16.self) as! T
        case is UInt8.Type: return try exact(UInt8.self) as! T
        default: throw mismatch(type, value, path)
        }
    default:
        throw mismatch(type, value, path)
    }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> {
        guard let object = value.objectValue else { throw mismatch(JSONObject.self, value, codingPath) }
        return KeyedDecodingContainer(Keyed<K>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let array = value.arrayValue else { throw mismatch([JSONValue].self, value, codingPath) }
        return Unkeyed(array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(value: value, codingPath: codingPath) }
}

private struct Keyed<K: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]
    var allKeys: [K] { object.keys.compactMap(K.init(stringValue:)) }

    func contains(_ key: K) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: K) throws -> JSONValue {
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no \(key.stringValue)"))
        }
        return v
    }

    func decodeNil(forKey key: K) throws -> Bool { try value(key) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: K) throws -> T {
        let v = try value(key)
        let path = codingPath + [key]
        switch type {
        case is Bool.Type, is String.Type, is Double.Type, is Float.Type, is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type,
             is Int8.Type, is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type:
            return try scalar(type, v, path)
        default:
            return try T(from: ValueDecoder(value: v, codingPath: path))
        }
    }

    func nestedContainer<NK: CodingKey>(keyedBy type: NK.Type, forKey key: K) throws -> KeyedDecodingContainer<NK> {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: K) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ValueDecoder(value: .object(object), codingPath: codingPath) }
    func superDecoder(forKey key: K) throws -> any Decoder { ValueDecoder(value: try value(key), codingPath: codingPath + [key]) }
}

private struct Unkeyed: UnkeyedDecodingContainer {
    let array: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    init(array: [JSONValue], codingPath: [any CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    private mutating func next() throws -> (JSONValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: codingPath, debugDescription: "the array has ended"))
        }
        defer { currentIndex += 1 }
        return (array[currentIndex], codingPath + [Key(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, path) = try next()
        switch type {
        case is Bool.Type, is String.Type, is Double.Type, is Float.Type, is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type,
             is Int8.Type, is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type:
            return try scalar(type, v, path)
        default:
            return try T(from: ValueDecoder(value: v, codingPath: path))
        }
    }

    mutating func nestedContainer<NK: CodingKey>(keyedBy type: NK.Type) throws -> KeyedDecodingContainer<NK> {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (v, path) = try next()
        return ValueDecoder(value: v, codingPath: path)
    }
}

private struct Single: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is Bool.Type, is String.Type, is Double.Type, is Float.Type, is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type,
             is Int8.Type, is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type:
            return try scalar(type, value, codingPath)
        default:
            return try T(from: ValueDecoder(value: value, codingPath: codingPath))
        }
    }
}
