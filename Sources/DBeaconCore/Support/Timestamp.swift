#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point in time with millisecond precision, written as RFC 3339 UTC.
///
/// DBeacon keeps its own tiny parser/formatter: `ISO8601DateFormatter` is slow, not
/// `Sendable`, and lenient in ways an API contract should not be.
package struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    package var millis: Int64

    package init(millis: Int64) { self.millis = millis }

    package init(seconds: Double) { self.millis = Int64((seconds * 1000).rounded()) }

    /// The current wall-clock time.
    package static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(millis: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    package var seconds: Double { Double(millis) / 1000 }

    package static func < (a: Timestamp, b: Timestamp) -> Bool { a.millis < b.millis }

    package func adding(seconds: Double) -> Timestamp { Timestamp(millis: millis + Int64((seconds * 1000).rounded())) }

    package func seconds(since other: Timestamp) -> Double { Double(millis - other.millis) / 1000 }

    package var description: String { rfc3339 }

    // MARK: Formatting

    /// `2026-11-21T12:00:00.000Z`: always with milliseconds, the one form of every timestamp the
    /// service writes (a client generated from the document decodes every one with one setting).
    package var rfc3339: String {
        if let fast = withRFC3339Bytes({ String(decoding: $0, as: UTF8.self) }) { return fast }
        return rfc3339General
    }

    /// Year, month, day, second of the day and millisecond (UTC).
    private var parts: (Int64, Int64, Int64, Int64, Int64) {
        var ms = millis % 1000
        var secs = millis / 1000
        if ms < 0 { ms += 1000; secs -= 1 }
        var days = secs / 86_400
        var rem = secs % 86_400
        if rem < 0 { rem += 86_400; days -= 1 }
        let (y, m, d) = Self.civil(fromDays: days)
        return (y, m, d, rem, ms)
    }

    /// Calls `body` with the RFC 3339 form's bytes, built on the stack (years 0–9999, the form
    /// `rfc3339` returns); nil for other years.
    package func withRFC3339Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        let (y, m, d, rem, ms) = parts
        guard (0...9999).contains(y) else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buf in
            var i = 0
            func put(_ v: Int64, _ width: Int) {
                var v = v
                for k in stride(from: width - 1, through: 0, by: -1) {
                    buf[i + k] = UInt8(ascii: "0") + UInt8(v % 10)
                    v /= 10
                }
                i += width
            }
            func put(_ c: Unicode.Scalar) {
                buf[i] = UInt8(ascii: c)
                i += 1
            }
            put(y, 4); put("-"); put(m, 2); put("-"); put(d, 2); put("T")
            put(rem / 3600, 2); put(":"); put(rem % 3600 / 60, 2); put(":"); put(rem % 60, 2)
            put("."); put(ms, 3)
            put("Z")
            return body(UnsafeBufferPointer(rebasing: buf[0..<i]))
        }
    }

    /// The same form by another route (string pieces; any year): the reference for `withRFC3339Bytes`.
    package var rfc3339General: String {
        let (y, m, d, rem, ms) = parts
        var out = ""
        out.reserveCapacity(24)
        out += Self.pad(y, 4) + "-" + Self.pad(m, 2) + "-" + Self.pad(d, 2)
        out += "T" + Self.pad(rem / 3600, 2) + ":" + Self.pad(rem % 3600 / 60, 2) + ":" + Self.pad(rem % 60, 2)
        out += "." + Self.pad(ms, 3)
        out += "Z"
        return out
    }

    private static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    // MARK: Parsing

    /// Parses RFC 3339 (`2026-11-21T12:00:00Z`, `2026-11-21T13:00:00.5+01:00`); nil when invalid.
    package init?(rfc3339 string: String) {
        let b = Array(string.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for _ in 0..<n {
                let c = b[i]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int64(c - 0x30)
                i += 1
            }
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2) else { return nil }
        guard i < b.count, b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") || b[i] == UInt8(ascii: " ") else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2) else { return nil }
        var fractionMillis: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var scale: Int64 = 100
            var any = false
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                fractionMillis += Int64(b[i] - 0x30) * scale
                scale /= 10
                i += 1
                any = true
            }
            guard any else { return nil }
        }
        guard i < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign: Int64 = b[i] == UInt8(ascii: "+") ? 1 : -1
            i += 1
            guard let oh = digits(2), expect(0x3A), let om = digits(2), oh < 24, om < 60 else { return nil }
            offsetSeconds = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        guard (1...12).contains(month), day >= 1, day <= Self.daysInMonth(year: year, month: month),
              hour < 24, minute < 60, second <= 60 else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        // A leap second (:60) is read as the last millisecond-precise instant of that minute.
        let secs = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        self.millis = secs * 1000 + (second == 60 ? 999 : fractionMillis)
    }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    private static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
