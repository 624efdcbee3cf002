/// Lower-case hexadecimal text of bytes, two digits a byte: token hashes bound to PostgreSQL,
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

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ nibble &- 10
    }
}
