/// A strict RFC 8259 JSON parser with two deliberate extensions: the bare tokens `NaN`,
/// `Infinity` and `-Infinity` (which Python's `json` and JavaScript's loose encoders emit)
/// are read as non-finite numbers, and numbers that overflow a Double become infinite.
/// Both are then rejected by validation with a 422 that names the field, which tells the
/// client far more than "malformed JSON" would.
package struct JSONParser {
    /// Nesting deeper than this is refused: GeoJSON needs about 8 levels, so 64 leaves
    /// plenty of room while keeping recursion bounded for hostile input.
    package static let maxDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Parses a complete JSON text; trailing non-whitespace is an error.
    package static func parse(_ data: some Collection<UInt8>) throws(DBeaconError) -> JSONValue {
        let array = Array(data)
        return try array.withUnsafeBufferPointer { buffer throws(DBeaconError) -> JSONValue in
            var parser = JSONParser(bytes: buffer)
            parser.skipWhitespace()
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            if parser.index != buffer.count {
                throw parser.error("unexpected data after the JSON value")
            }
            return value
        }
    }

    /// Parses a JSON text given as a string.
    package static func parse(_ string: String) throws(DBeaconError) -> JSONValue {
        try parse(Array(string.utf8))
    }

    private func error(_ message: String) -> DBeaconError {
        DBeaconError(.badRequest, code: "malformed_json", message: "Malformed JSON at byte \(index): \(message)")
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(DBeaconError) -> JSONValue {
        guard depth < Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "N"): try expectLiteral("NaN"); return .number(.nan)
        case UInt8(ascii: "I"): try expectLiteral("Infinity"); return .number(.infinity)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character '\(Character(Unicode.Scalar(bytes[index])))'")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(DBeaconError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let lit = literal.utf8Start
        for i in 0..<count where bytes[index + i] != lit[i] {
            throw error("invalid literal")
        }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(DBeaconError) -> JSONValue {
        index += 1
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject())
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth + 1)
            members.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input in an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(JSONObject(members))
            }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int) throws(DBeaconError) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array([])
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input in an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            throw error("expected ',' or ']'")
        }
    }

    private mutating func parseNumber() throws(DBeaconError) -> Double {
        let start = index
        if bytes[index] == UInt8(ascii: "-") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "I") {
                try expectLiteral("Infinity")
                return -.infinity
            }
        }
        guard index < bytes.count else { throw error("unexpected end of input in a number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        } else {
            throw error("invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number: digit expected after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number: digit expected in exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text) else { throw error("invalid number") }
        return value
    }

    @inline(__always) private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private mutating func parseString() throws(DBeaconError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                guard let s = String(validating: slice, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error("control character in a string") }
            index += 1
        }
        var scalars: [UInt8] = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                guard let s = String(validating: scalars, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
                return s
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input in a string") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try parseHex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate in a string") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in a string") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw error("unpaired surrogate in a string")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid unicode escape") }
                    scalars.append(contentsOf: UTF8.encode(scalar)!)
                default:
                    throw error("invalid escape sequence")
                }
            default:
                if b < 0x20 { throw error("control character in a string") }
                scalars.append(b)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(DBeaconError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of input in a unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default: throw error("invalid hex digit in a unicode escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
