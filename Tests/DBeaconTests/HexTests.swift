import DBeaconCore
import Testing

/// `Hex.string` writes two lower-case digits a byte, as `String(_:radix:)` padded to two does.
@Suite(.bounded) struct HexTests {
    @Test func everyByteIsTwoLowerCaseDigits() {
        let all = (0...255).map { UInt8($0) }
        let expected = all.map { b -> String in
            let s = String(b, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined()
        #expect(Hex.string(all) == expected)
        #expect(Hex.string([UInt8]()) == "")
        #expect(Hex.string([0x00, 0x0f, 0xf0, 0xff]) == "000ff0ff")
        #expect(Hex.string(all[250...]) == "fafbfcfdfeff") // a slice
    }

    /// `Hex.bytes` reads back what `Hex.string` writes, upper case too, and refuses anything else.
    @Test func digitsReadBackAsTheBytes() {
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.bytes(Hex.string(all)) == all)
        #expect(Hex.bytes(Hex.string(all).uppercased()) == all)
        #expect(Hex.bytes("") == [])
        #expect(Hex.bytes("abc") == nil)
        #expect(Hex.bytes("0g") == nil)
        #expect(Hex.bytes("+f") == nil)
        #expect(Hex.bytes("é0") == nil)
    }
}
