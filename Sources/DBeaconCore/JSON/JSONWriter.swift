/// Serialises `JSONValue` into compact UTF-8 JSON.
///
/// Whole numbers are written without a fraction (`"version":3`, not `3.0`); other numbers
/// use Swift's shortest round-tripping representation, so a coordinate read from a request
/// is written back exactly as the same Double.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    package static func serialize(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.bytes
    }

    package static func string(_ value: JSONValue) -> String {
        String(decoding: serialize(value), as: UTF8.self)
    }

    package mutating func write(_ value: JSONValue) {
        switch value {
        case .null: appendASCII("null")
        case .bool(let b): appendASCII(b ? "true" : "false")
        case .number(let n): writeNumber(n)
        case .string(let s): writeString(s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (i, element) in a.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            bytes.append(UInt8(ascii: "{"))
            for (i, member) in o.members.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends already-serialised JSON (used to splice cached fragments).
    package mutating func appendRaw(_ raw: some Sequence<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    /// Bytes written so far.
    package var count: Int { bytes.count }

    package mutating func appendASCII(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    package mutating func writeNumber(_ n: Double) {
        guard n.isFinite else {
            // Never produced by validated data; null keeps the output valid JSON regardless.
            appendASCII("null")
            return
        }
        if n == n.rounded(), abs(n) < 9.007_199_254_740_992e15 {
            bytes.append(contentsOf: String(Int64(n)).utf8)
        } else {
            // `n.description`'s characters, written by `Double.write(to:)` from its stack buffer
            // (`description` allocates a String for the 17 digits of most coordinates).
            var sink = ASCIISink(bytes: bytes)
            bytes = []
            n.write(to: &sink)
            bytes = sink.bytes
        }
    }

    /// Where `Double.write(to:)` puts its characters: straight into the bytes.
    private struct ASCIISink: TextOutputStream {
        var bytes: [UInt8]
        mutating func write(_ string: String) { bytes.append(contentsOf: string.utf8) }
        mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: buffer) }
    }

    /// An integer, exactly (`writeNumber` takes a Double: exact only up to 2^53).
    package mutating func writeInteger(_ n: some BinaryInteger) {
        bytes.append(contentsOf: String(n).utf8)
    }

    /// `"key":`, for objects written member by member.
    package mutating func writeKey(_ key: StaticString) {
        bytes.append(UInt8(ascii: "\""))
        appendASCII(key)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// `writeString(t.rfc3339)` without making the String.
    package mutating func writeTimestamp(_ t: Timestamp) {
        let done: Bool? = t.withRFC3339Bytes { b in
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: b)
            bytes.append(UInt8(ascii: "\""))
            return true
        }
        if done == nil { writeString(t.rfc3339) }
    }

    package mutating func writeString(_ s: String) {
        var s = s
        s.withUTF8 { writeString(utf8: $0) }
    }

    /// A string from its UTF-8 bytes (valid UTF-8).
    package mutating func writeString(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        // Runs of bytes that need no escape are copied at once.
        var start = 0
        for i in 0..<utf8.count {
            let b = utf8[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
            writeEscaped(b)
            start = i + 1
        }
        if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscaped(_ b: UInt8) {
        switch b {
        case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
        case 0..<0x20:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]])
        default: bytes.append(0x5C); bytes.append(b) // quote and backslash
        }
    }
}

extension JSONValue {
    /// Compact JSON text of this value.
    package var jsonString: String { JSONWriter.string(self) }
}
