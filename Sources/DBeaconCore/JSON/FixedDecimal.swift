import CDigits

/// Writes a Double in fixed notation with a known number of fraction digits, fast: one 128-bit
/// multiplication and integer digits, instead of the standard library's shortest-digits search.
///
/// A large polygon's coordinates are stored as Doubles with one byte each, the number of
/// fraction digits of their shortest round-tripping text (`hint(for:)`); an answer then writes
/// their GeoJSON from these (`write`) at several times the speed of `Double.description`, and
/// needs no stored text (which took 2.3 times the coordinates' disk at 1M beacons).
///
/// The hint is taken only when `write` gives exactly the bytes `JSONWriter.writeNumber` gives
/// (checked when the hint is made); otherwise it is `unhinted` and that number is written by
/// `JSONWriter.writeNumber`, so the output never differs from the standard path.
package enum FixedDecimal {
    /// The hint of a number `write` does not reproduce (exponent notation, tiny, huge).
    package static let unhinted: UInt8 = 0xFF
    /// The most fraction digits `write` takes (16 digits fit the two words it stores).
    static let maxFractionDigits = 16
    /// The room `write` needs at its output: sign, three whole digits, point, two words.
    package static let maxBytes = 21

    // Written once, then only read.
    nonisolated(unsafe) private static let powersOfTen: UnsafePointer<UInt64> = {
        let p = UnsafeMutablePointer<UInt64>.allocate(capacity: 20)
        p[0] = 1
        for k in 1..<20 { p[k] = p[k - 1] * 10 }
        return UnsafePointer(p)
    }()

    /// "00" … "99" as 16-bit words (two digits per division).
    nonisolated(unsafe) private static let pairs: UnsafePointer<UInt16> = {
        let p = UnsafeMutablePointer<UInt16>.allocate(capacity: 100)
        for i in 0..<100 {
            let tens = UInt16(truncatingIfNeeded: 48 + i / 10), ones = UInt16(truncatingIfNeeded: 48 + i % 10)
            p[i] = (ones << 8 | tens).littleEndian
        }
        return UnsafePointer(p)
    }()

    /// The hint for `v`: its number of fraction digits when `write` gives the same bytes as
    /// `JSONWriter.writeNumber`, else `unhinted`.
    package static func hint(for v: Double) -> UInt8 {
        var w = JSONWriter(capacity: 32)
        w.writeNumber(v)
        return w.bytes.withUnsafeBufferPointer { hint(for: v, text: $0) }
    }

    /// The hint for `v` given its text from `JSONWriter.writeNumber`.
    package static func hint(for v: Double, text: UnsafeBufferPointer<UInt8>) -> UInt8 {
        guard !text.isEmpty, text.count <= maxBytes else { return unhinted }
        var digits = 0
        if let point = text.firstIndex(of: UInt8(ascii: ".")) { digits = text.count - point - 1 }
        guard digits <= maxFractionDigits,
              !text.contains(UInt8(ascii: "e")), !text.contains(UInt8(ascii: "E")) else { return unhinted }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxBytes) { buffer in
            guard let n = write(v, fractionDigits: digits, to: buffer.baseAddress!), n == text.count,
                  UnsafeBufferPointer(start: buffer.baseAddress!, count: n).elementsEqual(text) else { return unhinted }
            return UInt8(digits)
        }
    }

    /// Writes `v` rounded to `k` fraction digits (`k` 0: a whole number, no point) into `out`,
    /// which must have room for `maxBytes` (bytes after the ones written may be overwritten);
    /// returns the bytes written, or nil when `v` is outside what this path handles (not finite,
    /// subnormal, 1,000 or more in magnitude, or `k` over 16).
    ///
    /// Everything happens in registers: the whole part (under 1,000) from a table, the fraction
    /// `round(fraction · 10^k)` from one 128-bit product, its sixteen digits at once in one vector
    /// register (`dbeacon_sixteen_digits`), stored as one 16-byte word (no per-digit stores).
    @inline(__always)
    package static func write(_ v: Double, fractionDigits k: Int, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        write(v, fractionDigits: k, to: out, powersOfTen: powersOfTen, pairs: pairs)
    }

    /// `write` with its tables at hand (a loop reads the static ones once, not per number).
    ///
    /// Its arithmetic wraps (`&+`, `&<<`, …) where the guards above it bound every value (the
    /// shifts below 64, the 128-bit product below 2^118, `g` below 10^16): the checked forms'
    /// overflow branches cost a sixth of a number's time.
    @inline(__always)
    static func write(_ v: Double, fractionDigits k: Int, to out: UnsafeMutablePointer<UInt8>,
                      powersOfTen: UnsafePointer<UInt64>, pairs: UnsafePointer<UInt16>) -> Int? {
        guard k >= 0, k <= maxFractionDigits, v.isFinite else { return nil }
        let a = v.magnitude
        var whole: UInt64 = 0, fraction: UInt64 = 0
        if a != 0 {
            guard a.exponentBitPattern != 0 else { return nil } // subnormal
            let m = a.significandBitPattern | (1 << 52)
            let shift = 1075 &- Int(a.exponentBitPattern) // a = m / 2^shift
            guard shift >= 1, shift < 128 else { return nil }
            var bits = m // the fraction's: bits / 2^shift
            if shift < 64 {
                whole = m >> shift
                bits = m & (UInt64(1) &<< shift &- 1)
            }
            guard whole < 1000 else { return nil }
            // fraction = round(bits · 10^k / 2^shift), halves up, in 128 bits.
            var (hi, lo) = bits.multipliedFullWidth(by: powersOfTen[k])
            if shift <= 64 {
                let (sum, carry) = lo.addingReportingOverflow(UInt64(1) &<< (shift &- 1))
                lo = sum
                if carry { hi &+= 1 }
                fraction = shift == 64 ? hi : hi &<< (64 &- shift) | lo &>> shift
            } else {
                hi &+= UInt64(1) &<< (shift &- 65)
                fraction = hi &>> (shift &- 64)
            }
            if fraction >= powersOfTen[k] { // rounded up to the next whole number
                whole &+= 1
                fraction &-= powersOfTen[k]
                guard whole < 1000 else { return nil }
            }
        }
        out[0] = UInt8(ascii: "-")
        var o = v.sign == .minus ? 1 : 0
        let to = UnsafeMutableRawPointer(out)
        if whole < 10 {
            out[o] = UInt8(truncatingIfNeeded: 48 &+ whole)
            o &+= 1
        } else if whole < 100 {
            to.storeBytes(of: pairs[Int(whole)], toByteOffset: o, as: UInt16.self)
            o &+= 2
        } else {
            out[o] = UInt8(truncatingIfNeeded: 48 + whole / 100)
            to.storeBytes(of: pairs[Int(whole % 100)], toByteOffset: o + 1, as: UInt16.self)
            o &+= 3
        }
        guard k > 0 else { return o }
        out[o] = UInt8(ascii: ".")
        // The k digits, left-aligned in 16 (the rest is overwritten by what follows).
        let g = fraction &* powersOfTen[maxFractionDigits &- k]
        dbeacon_sixteen_digits(UInt32(truncatingIfNeeded: g / 100_000_000), UInt32(truncatingIfNeeded: g % 100_000_000),
                               out + (o &+ 1))
        return o &+ 1 &+ k
    }
}

extension FixedDecimal {
    /// The hints of the numbers of a polygon's rings' GeoJSON (`GeoJSONCodec.writeRings`'s
    /// `[[[lon,lat],…],…]` over `count` coordinates `lonLat`), in order; nil when the text does
    /// not hold exactly `count` numbers.
    package static func hints(ofRingsJSON json: [UInt8], lonLat: UnsafePointer<Double>, count: Int) -> [UInt8]? {
        var hints = [UInt8]()
        hints.reserveCapacity(count)
        let ok: Bool = json.withUnsafeBufferPointer { text in
            var i = 0
            while i < text.count {
                let c = text[i]
                guard c == UInt8(ascii: "-") || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) else {
                    i += 1
                    continue
                }
                var j = i + 1
                while j < text.count && text[j] != UInt8(ascii: ",") && text[j] != UInt8(ascii: "]") { j += 1 }
                guard hints.count < count else { return false }
                hints.append(hint(for: lonLat[hints.count], text: UnsafeBufferPointer(rebasing: text[i..<j])))
                i = j
            }
            return hints.count == count
        }
        return ok ? hints : nil
    }

    /// Writes the GeoJSON of rings (`[[[lon,lat],…],…]`, byte for byte what
    /// `GeoJSONCodec.writeRings` writes) over `lon, lat` pairs with their hints, where ring r is
    /// the vertices `ringStarts[r]..<ringStarts[r + 1]`, into exactly `out`: false when the text
    /// does not fill it exactly.
    package static func writeRings(lonLat: UnsafePointer<Double>, hints: UnsafePointer<UInt8>, ringStarts: [Int],
                                   to out: UnsafeMutableRawBufferPointer) -> Bool {
        guard let base = out.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        let end = out.count
        let tens = powersOfTen, pairs = self.pairs
        var at = 0
        guard put(UInt8(ascii: "["), base, &at, end) else { return false }
        for r in 0..<max(0, ringStarts.count - 1) {
            if r > 0 { guard put(UInt8(ascii: ","), base, &at, end) else { return false } }
            guard put(UInt8(ascii: "["), base, &at, end) else { return false }
            let first = ringStarts[r]
            for v in first..<ringStarts[r + 1] {
                if v > first { guard put(UInt8(ascii: ","), base, &at, end) else { return false } }
                guard put(UInt8(ascii: "["), base, &at, end),
                      number(lonLat[2 * v], hints[2 * v], base, &at, end, tens, pairs),
                      put(UInt8(ascii: ","), base, &at, end),
                      number(lonLat[2 * v + 1], hints[2 * v + 1], base, &at, end, tens, pairs),
                      put(UInt8(ascii: "]"), base, &at, end) else { return false }
            }
            guard put(UInt8(ascii: "]"), base, &at, end) else { return false }
        }
        guard put(UInt8(ascii: "]"), base, &at, end) else { return false }
        return at == end
    }

    @inline(__always)
    private static func put(_ c: UInt8, _ base: UnsafeMutablePointer<UInt8>, _ at: inout Int, _ end: Int) -> Bool {
        guard at < end else { return false }
        base[at] = c
        at += 1
        return true
    }

    /// One number of `writeRings`: the fast path when it has a hint and room, else the writer's.
    @inline(__always)
    private static func number(_ v: Double, _ h: UInt8, _ base: UnsafeMutablePointer<UInt8>, _ at: inout Int, _ end: Int,
                               _ tens: UnsafePointer<UInt64>, _ pairs: UnsafePointer<UInt16>) -> Bool {
        if h != unhinted && end - at >= maxBytes,
           let n = write(v, fractionDigits: Int(h), to: base + at, powersOfTen: tens, pairs: pairs) {
            at += n
            return true
        }
        return slowNumber(v, base, &at, end)
    }

    /// Near the end (`write` needs room), or a number only the writer formats.
    private static func slowNumber(_ v: Double, _ base: UnsafeMutablePointer<UInt8>, _ at: inout Int, _ end: Int) -> Bool {
        var w = JSONWriter(capacity: 32)
        w.writeNumber(v)
        guard w.bytes.count <= end - at else { return false }
        w.bytes.withUnsafeBufferPointer { (base + at).update(from: $0.baseAddress!, count: $0.count) }
        at += w.bytes.count
        return true
    }
}
