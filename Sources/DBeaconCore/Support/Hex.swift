/// Lower-case hexadecimal text of bytes, two digits a byte, and back: token hashes bound to PostgreSQL,
/// the admin token's stored hash, sighting batch fingerprints, beacon frame identifiers.
///
/// One pass into one buffer: the form it replaced (`String(byte, radix: 16)`, padded, then
/// joined) made strings per byte, and was 1 % of a PostgreSQL node's CPU in the token check.
package enum Hex {
    package static func string(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: 2 * bytes.count) { out in
            var i = 0
            for b in bytes {
                out[i] = digit(b >> 4)
                out[i + 1] = digit(b & 0x0F)
                i += 2
            }
            return i
        }
    }

    /// The same digits appended to `out` (text being assembled as bytes).
    package static func append(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        out.reserveCapacity(out.count + 2 * bytes.count)
        for b in bytes {
            out.append(digit(b >> 4))
            out.append(digit(b & 0x0F))
        }
    }

    /// The bytes of `text` written as `string` writes them (either case accepted); nil when it
    /// is not an even number of hexadecimal digits.
    package static func bytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ nibble &- 10
    }
}
