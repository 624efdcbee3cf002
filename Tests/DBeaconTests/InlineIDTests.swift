import DBeaconCore
import Testing

/// Beacon and user ids keep up to 32 bytes inline (`InlineID`): the string, equality, hashing
/// and order must be exactly the string's, for short, 32-byte, long and odd ids alike.
@Suite(.bounded) struct InlineIDTests {
    /// Ids around the inline limit: prefixes of one another, 31–33 bytes, chosen ids up to
    /// 68 bytes, a NUL byte and non-ASCII text (only reachable unchecked, from stored rows).
    static func samples() -> [String] {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
        var out = ["", "b", "bcn_", "bcn_a", "bcn_a-", "bcn_a0", "bcn_\u{0}", "bcn_\u{0}x", "bcn_é", "bcn_ü\u{1F600}"]
        let base = "bcn_" + String(repeating: "x", count: 40)
        for n in 26...36 { out.append(String(base.prefix(n))) } // every length across 32
        out.append(String(base.prefix(32)) + "\u{0}")
        out.append(String(base.prefix(31)) + "\u{0}")
        for _ in 0..<300 {
            let n = [1, 5, 22, 27, 28, 29, 30, 64].randomElement(using: &rng)!
            // A small alphabet so that many ids share long prefixes.
            let chars = (0..<n).map { _ in alphabet[Int.random(in: 0..<(Bool.random(using: &rng) ? 3 : alphabet.count), using: &rng)] }
            out.append("bcn_" + String(chars))
        }
        return out
    }

    @Test func behavesLikeItsString() {
        let strings = Self.samples()
        let ids = strings.map(BeaconID.init(uncheckedRawValue:))
        for (s, id) in zip(strings, ids) {
            #expect(id.rawValue == s)
            #expect(id.description == s)
            #expect(id.withUTF8 { Array($0) } == Array(s.utf8))
        }
        for (i, a) in ids.enumerated() {
            for (j, b) in ids.enumerated() {
                let (x, y) = (strings[i], strings[j])
                #expect((a == b) == (x == y), "\(x.debugDescription) == \(y.debugDescription)")
                #expect((a < b) == (x < y), "\(x.debugDescription) < \(y.debugDescription)")
                if a == b { #expect(a.hashValue == b.hashValue) }
            }
        }
        #expect(ids.sorted().map(\.rawValue) == strings.sorted())
        #expect(Set(ids).count == Set(strings).count)
        var byID: [BeaconID: String] = [:]
        for (s, id) in zip(strings, ids) { byID[id] = s }
        for (s, id) in zip(strings, ids) { #expect(byID[BeaconID(uncheckedRawValue: s)] == s && byID[id] == s) }
    }

    @Test func validatedIDsRoundTrip() {
        for _ in 0..<1000 {
            let id = BeaconID.generate()
            #expect(id.rawValue.utf8.count == 26)
            #expect(BeaconID(id.rawValue) == id)
            let user = UserID.generate()
            #expect(UserID(user.rawValue) == user)
        }
        let longest = "usr_" + String(repeating: "z", count: 64)
        #expect(UserID(longest)?.rawValue == longest)
        #expect(BeaconID("bcn_" + String(repeating: "a", count: 65)) == nil)
    }
}
