import DBeaconCore
import Testing

@Suite(.bounded) struct JSONTests {
    @Test func parsesAndWritesRoundTrip() throws {
        let text = #"{"a":1,"b":[true,false,null],"c":"é\n\"x\"","d":-0.5,"e":{"f":1e-7}}"#
        let value = try JSONParser.parse(text)
        #expect(value["a"] == .number(1))
        #expect(value["c"] == .string("é\n\"x\""))
        #expect(try JSONParser.parse(value.jsonString) == value)
        #expect(JSONWriter.string(.number(150)) == "150")
        #expect(JSONWriter.string(.number(48.7784)) == "48.7784")
    }

    /// Strings are escaped exactly where JSON requires it (quotes, backslashes, control
    /// characters), anywhere in the string, and everything else is copied as UTF-8.
    @Test func escapesStringsExactly() throws {
        let cases: [(String, String)] = [
            ("", #""""#),
            ("plain", #""plain""#),
            ("\"", #""\"""#),
            ("a\\b", #""a\\b""#),
            ("\n\r\t", #""\n\r\t""#),
            ("\u{01}x\u{1F}", #""\u0001x\u001f""#),
            ("end\"", #""end\"""#),
            ("é😀 \"ü\" ∆", #""é😀 \"ü\" ∆""#),
            ("\u{7F}/<>", "\"\u{7F}/<>\""),
        ]
        for (input, expected) in cases {
            #expect(JSONWriter.string(.string(input)) == expected)
            #expect(try JSONParser.parse(JSONWriter.string(.string(input))) == .string(input))
        }
        // Strings with escapes at random places round-trip.
        var rng = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "\"", "\\", "\n", "\u{02}", "é", "😀", " "]
        for _ in 0..<200 {
            let s = String((0..<Int.random(in: 0...60, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            #expect(try JSONParser.parse(JSONWriter.string(.string(s))) == .string(s))
        }
    }

    /// Numbers are Swift's shortest round-tripping form (whole ones without a fraction), written
    /// without a String per number: the same characters as `description`, and they parse back to
    /// the same Double.
    @Test func writesNumbersInTheirShortestForm() throws {
        var rng = SeededGenerator(seed: 17)
        var values: [Double] = [0.1, -0.1, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 9.179641940150901, 48.779470882545288,
                                -179.99999999999997, 1e22, 123456789012345680, 0.30000000000000004, 2.5e-5, -0.0]
        for _ in 0..<20_000 {
            let v = Double(bitPattern: rng.next())
            if v.isFinite { values.append(v) }
            values.append(Double.random(in: -180...180, using: &rng))
        }
        for v in values {
            let text = String(decoding: JSONWriter.serialize(.number(v)), as: UTF8.self)
            let expected = v == v.rounded() && abs(v) < 9.007_199_254_740_992e15 ? String(Int64(v)) : v.description
            #expect(text == expected)
            #expect(Double(text) == v || (v == 0 && Double(text) == 0))
        }
    }

    /// Timestamps are formatted on the stack for answers; the same characters as the
    /// piece-by-piece form, and they parse back to the same instant.
    @Test func formatsTimestampsTheSameWayEitherRoute() throws {
        var rng = SeededGenerator(seed: 3)
        var instants: [Int64] = [0, -1, 999, 1000, -86_400_000, 253_402_300_799_999, -62_167_219_200_000, 1_764_000_000_123]
        for _ in 0..<20_000 { instants.append(Int64.random(in: -62_167_219_200_000...253_402_300_799_999, using: &rng)) }
        for ms in instants {
            let t = Timestamp(millis: ms)
            #expect(t.rfc3339 == t.rfc3339General)
            #expect(Timestamp(rfc3339: t.rfc3339)?.millis == ms)
            #expect(String(decoding: JSONWriter.serialize(.string(t.rfc3339)), as: UTF8.self)
                == { var w = JSONWriter(); w.writeTimestamp(t); return String(decoding: w.bytes, as: UTF8.self) }())
        }
    }

    @Test func keepsKeyOrder() throws {
        let value = try JSONParser.parse(#"{"z":1,"a":2,"m":3}"#)
        #expect(value.objectValue?.keys == ["z", "a", "m"])
    }

    @Test func readsNonFiniteTokensSoValidationCanNameTheField() throws {
        let value = try JSONParser.parse("[NaN, Infinity, -Infinity, 1e400]")
        let numbers = value.arrayValue!.compactMap(\.numberValue)
        #expect(numbers[0].isNaN)
        #expect(numbers[1] == .infinity && numbers[2] == -.infinity && numbers[3] == .infinity)
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "tru", "\"abc", "01", "1.", "{\"a\":1}x", "\"\\ud800\"", "[\"\u{01}\"]"])
    func rejectsMalformedJSON(_ text: String) {
        #expect(throws: DBeaconError.self) { try JSONParser.parse(text) }
    }

    @Test func limitsNesting() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: DBeaconError.self) { try JSONParser.parse(deep) }
    }

    @Test func decodesUnicodeEscapesAndSurrogatePairs() throws {
        #expect(try JSONParser.parse(#""\u00e9\ud83d\ude00""#) == .string("é😀"))
    }

    @Test func mergePatchFollowsRFC7396() throws {
        // Examples from RFC 7396, appendix A.
        let cases: [(String, String, String)] = [
            (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
            (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
            (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
            (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
            (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
            (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
            (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        ]
        for (target, patch, expected) in cases {
            #expect(try JSONParser.parse(target).mergePatched(with: JSONParser.parse(patch)) == JSONParser.parse(expected))
        }
    }
}

@Suite(.bounded) struct TimestampTests {
    @Test func parsesAndFormatsRFC3339() throws {
        let t = try #require(Timestamp(rfc3339: "2026-11-21T12:00:00Z"))
        #expect(t.rfc3339 == "2026-11-21T12:00:00.000Z")
        #expect(Timestamp(rfc3339: "2026-11-21T13:30:00+01:30")?.rfc3339 == "2026-11-21T12:00:00.000Z")
        #expect(Timestamp(rfc3339: "2026-11-21T12:00:00.25Z")?.rfc3339 == "2026-11-21T12:00:00.250Z")
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.millis == 0)
        #expect(Timestamp(rfc3339: "2024-02-29T00:00:00Z") != nil)
    }

    @Test(arguments: ["2026-11-21", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z", "2026-11-21T25:00:00Z",
                      "2026-11-21T12:00:00", "yesterday", "2026-11-21T12:00:00Zjunk"])
    func rejectsInvalidTimestamps(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func roundTripsRandomInstants() {
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            let t = Timestamp(millis: Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &rng))
            #expect(Timestamp(rfc3339: t.rfc3339) == t)
        }
    }
}
