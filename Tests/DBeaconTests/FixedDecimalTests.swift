import CDigits
import DBeaconCore
import DBeaconGeo
import Foundation
import Testing

/// The fast fixed-notation writer behind large perimeters' GeoJSON (`FixedDecimal`): wherever it
/// takes a number, it writes exactly what `JSONWriter.writeNumber` (the standard library's
/// shortest round-tripping digits) writes, and it declines the numbers it cannot reproduce.
@Suite(.bounded) struct FixedDecimalTests {
    static func standard(_ v: Double) -> [UInt8] {
        var w = JSONWriter()
        w.writeNumber(v)
        return w.bytes
    }

    static func fast(_ v: Double, _ hint: UInt8) -> [UInt8]? {
        guard hint != FixedDecimal.unhinted else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: FixedDecimal.maxBytes) { buffer in
            FixedDecimal.write(v, fractionDigits: Int(hint), to: buffer.baseAddress!).map { Array(buffer.prefix($0)) }
        }
    }

    @Test func hintedNumbersAreWrittenAsTheStandardWriterDoes() {
        var rng = SystemRandomNumberGenerator()
        var values: [Double] = []
        for _ in 0..<200_000 {
            values.append(.random(in: -180...180, using: &rng))
            values.append(.random(in: -90...90, using: &rng))
            // Coordinates as apps send them: a few decimals.
            let digits = Double(Int.random(in: 0...9, using: &rng))
            values.append((Double.random(in: -180...180, using: &rng) * pow(10, digits)).rounded() / pow(10, digits))
        }
        values += [0, -0.0, 0.1, 0.3, -0.5, 1, 13, -180, 180, 13.405, 9.180000000000001, 179.99999999999997, 999.9999999999999,
                   0.0001, 0.00012345678901234, 0.001, 1e-5, 1e-7, 5e-324, 2.2250738585072014e-308, 1000.5, 123456.789,
                   .infinity, -.infinity, .nan, 1.0000000000000002, 0.9999999999999999, 99.99999999999999, 48.78,
                   // Around the binary exponents where the fraction's shift crosses 64 (2^-11, 2^-12, 2^-13).
                   0.00048828125, 0.000488281, 0.0004882812500000001, 0.000244140625, 0.000244140624, 0.0003,
                   0.0002441406250000001, 0.0001220703125, 0.000122070312, 0.00015, -0.000244140625, -0.00030517578125]
        var hinted = 0
        for v in values {
            let hint = FixedDecimal.hint(for: v)
            guard let fast = Self.fast(v, hint) else {
                // Declined: not finite, out of range, exponent notation, more than 16 fraction
                // digits, or negative zero (which the standard writer writes as 0).
                let text = Self.standard(v)
                let fraction = text.firstIndex(of: UInt8(ascii: ".")).map { text.count - $0 - 1 } ?? 0
                #expect(!v.isFinite || v.magnitude >= 1000 || text.contains(UInt8(ascii: "e")) || fraction > 16
                        || (v == 0 && v.sign == .minus), "\(v) declined")
                continue
            }
            hinted += 1
            #expect(fast == Self.standard(v), "\(v): \(String(decoding: fast, as: UTF8.self))")
            // And the text reads back as the same number.
            #expect(Double(String(decoding: fast, as: UTF8.self)) == v)
        }
        #expect(hinted > values.count * 9 / 10)
        // A wrong hint gives other digits (rounded from the exact binary value): the hint is what makes the text exact.
        #expect(Self.fast(13.405, 2) == Array("13.40".utf8) && Self.fast(13.405, 5) == Array("13.40500".utf8)) // 13.405 is 13.40499… in binary
    }

    /// The vector conversion of two 8-digit halves against decimal text: every value below
    /// 100,000 and a million random ones, in both halves.
    @Test func sixteenDigitsAreTheDecimalText() {
        var rng = SystemRandomNumberGenerator()
        func text(_ v: UInt32) -> [UInt8] {
            var digits = [UInt8](repeating: UInt8(ascii: "0"), count: 8), v = v
            for i in stride(from: 7, through: 0, by: -1) {
                digits[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
            return digits
        }
        var out = [UInt8](repeating: 0, count: 16)
        var wrong = 0
        let values = Array(0..<100_000) + (0..<1_000_000).map { _ in UInt32.random(in: 0..<100_000_000, using: &rng) } + [99_999_999]
        for (i, v) in values.enumerated() {
            let other = values[values.count - 1 - i]
            out.withUnsafeMutableBufferPointer { dbeacon_sixteen_digits(v, other, $0.baseAddress!) }
            if out != text(v) + text(other) { wrong += 1 }
        }
        #expect(wrong == 0)
    }

    /// Every digit in every one of the sixteen fraction places (the vector conversion handles
    /// each place in its own lane), behind whole parts of one, two and three digits.
    @Test func everyDigitInEveryPlaceIsWritten() {
        var checked = 0
        for whole in ["0", "7", "48", "179", "-9", "-123"] {
            for length in 1...16 {
                for offset in 0..<10 {
                    let digits = (0..<length).map { String(($0 * 7 + offset) % 10) }.joined()
                    guard let v = Double("\(whole).\(digits)") else { continue }
                    let hint = FixedDecimal.hint(for: v)
                    guard let fast = Self.fast(v, hint) else { continue }
                    #expect(fast == Self.standard(v), "\(v): \(String(decoding: fast, as: UTF8.self))")
                    checked += 1
                }
            }
        }
        #expect(checked > 800)
    }

    @Test func ringsFromHintsAreTheCodecsText() throws {
        var rng = SystemRandomNumberGenerator()
        // Two rings, with numbers the fast path declines among them.
        var lonLat: [Double] = []
        for i in 0..<500 {
            lonLat.append(9.18 + .random(in: -0.01...0.01, using: &rng))
            lonLat.append(48.78 + .random(in: -0.01...0.01, using: &rng))
            if i % 97 == 0 { lonLat[lonLat.count - 2] = [0.00001, 1e-7, -0.0, 2][i / 97 % 4] }
        }
        let starts = [0, 400, 500]
        var w = JSONWriter()
        lonLat.withUnsafeBufferPointer { GeoJSONCodec.writeRings(lonLat: $0.baseAddress!, ringStarts: starts, into: &w) }
        let text = w.bytes
        let hints = try #require(lonLat.withUnsafeBufferPointer {
            FixedDecimal.hints(ofRingsJSON: text, lonLat: $0.baseAddress!, count: lonLat.count)
        })
        #expect(hints.count == lonLat.count && hints.contains(FixedDecimal.unhinted))
        func write(size: Int) -> [UInt8]? {
            var out = [UInt8](repeating: 0, count: size)
            let ok = lonLat.withUnsafeBufferPointer { ll in
                hints.withUnsafeBufferPointer { h in
                    out.withUnsafeMutableBytes {
                        FixedDecimal.writeRings(lonLat: ll.baseAddress!, hints: h.baseAddress!, ringStarts: starts, to: $0)
                    }
                }
            }
            return ok ? out : nil
        }
        #expect(write(size: text.count) == text)
        // An answer is built at its final size: a text that does not fill it exactly is refused.
        #expect(write(size: text.count - 1) == nil && write(size: text.count + 1) == nil)
        // The hints of a text that is not the coordinates' are refused too.
        #expect(lonLat.withUnsafeBufferPointer { FixedDecimal.hints(ofRingsJSON: text, lonLat: $0.baseAddress!, count: lonLat.count - 2) } == nil)
    }
}
