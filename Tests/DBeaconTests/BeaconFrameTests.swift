import DBeaconCore
import Testing

/// Frame parsing against byte layouts of the iBeacon, Eddystone-UID and AltBeacon specifications.
@Suite(.bounded) struct BeaconFrameTests {
    func frame(_ hex: String) throws -> BeaconFrame {
        try BeaconFrameParser.parse(hex: hex).get()
    }

    func error(_ hex: String) -> BeaconFrameError? {
        if case .failure(let e) = BeaconFrameParser.parse(hex: hex) { return e }
        return nil
    }

    @Test func iBeaconAdvertisementFromTheProximitySpecLayout() throws {
        // Flags (02 01 06), then 1A FF 4C 00 02 15 + UUID + major + minor + measured power:
        // Apple's AirLocate UUID, major 0, minor 0, -59 dBm at 1 m.
        let f = try frame("0201061aff4c000215e2c56db5dffb48d2b060d0f5a71096e000000000c5")
        #expect(f.identity == .iBeacon(uuid: "e2c56db5dffb48d2b060d0f5a71096e0", major: 0, minor: 0))
        #expect(f.measuredPowerAt1m == -59)
        #expect(f.identity.displayID1 == "e2c56db5-dffb-48d2-b060-d0f5a71096e0")
    }

    @Test func iBeaconMajorMinorAreBigEndian() throws {
        // Dual-mode flags 02 01 1A; major 0x0010 = 16, minor 0x0020 = 32, power 0xC6 = -58.
        let f = try frame("02011a1aff4c0002158325 6b7478d043a4826905f9dc8a44ba00100020c6")
        #expect(f.identity == .iBeacon(uuid: "83256b7478d043a4826905f9dc8a44ba", major: 16, minor: 32))
        #expect(f.measuredPowerAt1m == -58)
        // The documented example of the API: major 100 (0x0064), minor 7.
        let g = try frame("0201061aff4c000215f7826da64fa24e988024bc5b71e0893e00640007c5")
        #expect(g.identity == .iBeacon(uuid: "f7826da64fa24e988024bc5b71e0893e", major: 100, minor: 7))
        // Largest values.
        let h = try frame("4c000215f7826da64fa24e988024bc5b71e0893effffffffb0")
        #expect(h.identity.id2 == 65535 && h.identity.id3 == 65535 && h.measuredPowerAt1m == -80)
    }

    @Test func bareManufacturerDataAndPaddingAreAccepted() throws {
        let bare = try frame("4C000215F7826DA64FA24E988024BC5B71E0893E00640007C5")
        #expect(bare.identity == .iBeacon(uuid: "f7826da64fa24e988024bc5b71e0893e", major: 100, minor: 7))
        // A 31-byte advertisement padded with zeros.
        let padded = try frame("0201061aff4c000215f7826da64fa24e988024bc5b71e0893e00640007c500")
        #expect(padded == bare)
        // Separators between bytes are tolerated.
        #expect(try frame("4c:00:02:15:f7:82:6d:a6:4f:a2:4e:98:80:24:bc:5b:71:e0:89:3e:00:64:00:07:c5") == bare)
    }

    @Test func eddystoneUIDAdvertisement() throws {
        // 03 03 AA FE (service list), 17 16 AA FE (service data) + frame 00, TX at 0 m -8 dBm (F8),
        // 10-byte namespace, 6-byte instance, 2 RFU bytes.
        let f = try frame("020106" + "0303aafe" + "1716aafe00f8" + "e157bd5df90aad1dc2fb" + "000000000001" + "0000")
        #expect(f.identity == .eddystoneUID(namespace: "e157bd5df90aad1dc2fb", instance: "000000000001"))
        // Eddystone ranging data is the power at 0 m; 41 dB lower at 1 m.
        #expect(f.measuredPowerAt1m == -8 - 41)
        // Bare service data, as sent (AA FE) or as usually written (FE AA); RFU bytes optional.
        let bare = try frame("aafe00e7edd1ebeac04e5defa0170bdb87539b670000")
        #expect(bare.identity == .eddystoneUID(namespace: "edd1ebeac04e5defa017", instance: "0bdb87539b67"))
        #expect(bare.measuredPowerAt1m == -25 - 41)
        #expect(try frame("feaa00e7edd1ebeac04e5defa0170bdb87539b67") == bare)
    }

    @Test func altBeaconAdvertisement() throws {
        // 1B FF + company 0x0118 (18 01) + BE AC + 20-byte id + reference RSSI + reserved.
        let f = try frame("020106" + "1bff1801beac" + "2f234454cf6d4a0fadf2f4911ba9ffa6" + "0001" + "0002" + "c5" + "00")
        #expect(f.identity == .altBeacon(id1: "2f234454cf6d4a0fadf2f4911ba9ffa6", id2: 1, id3: 2))
        #expect(f.measuredPowerAt1m == -59)
        // Bare manufacturer data (whose last byte 00 could pass for AD padding) and from the beacon code on.
        #expect(try frame("1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c500") == f)
        #expect(try frame("beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c500") == f)
    }

    /// Every frame of this corpus is malformed; each must be rejected with the expected code
    /// and a message that says what is wrong.
    @Test(arguments: [
        ("", "invalid_hex"),
        ("zz", "invalid_hex"),
        ("4c0", "invalid_hex"),
        (String(repeating: "00", count: 63), "invalid_hex"),
        // Truncated advertisement: the manufacturer structure claims 26 bytes.
        ("0201061aff4c000215f7826da6", "malformed_frame"),
        // iBeacon length byte 0x16 instead of 0x15.
        ("4c000216f7826da64fa24e988024bc5b71e0893e00640007c5", "malformed_frame"),
        // iBeacon one byte short (no measured power).
        ("4c000215f7826da64fa24e988024bc5b71e0893e00640007", "malformed_frame"),
        // iBeacon one byte too long.
        ("4c000215f7826da64fa24e988024bc5b71e0893e00640007c5c5", "malformed_frame"),
        // Apple manufacturer data that is not an iBeacon (type 0x10).
        ("4c001005031c0a3b40", "unsupported_frame"),
        // Eddystone-URL, -TLM and -EID frames carry no UID.
        ("aafe10f800676f6f676c6507", "unsupported_frame"),
        ("aafe20000bb8100000000010000000a0", "unsupported_frame"),
        ("aafe30e70102030405060708", "unsupported_frame"),
        // Unknown Eddystone frame type.
        ("aafe50e7edd1ebeac04e5defa0170bdb87539b67", "unknown_frame"),
        // Eddystone-UID cut short (no instance).
        ("aafe00e7edd1ebeac04e5defa017", "malformed_frame"),
        // Eddystone-UID with an impossible TX power (-128 dBm at 0 m).
        ("aafe0080edd1ebeac04e5defa0170bdb87539b67", "malformed_frame"),
        // AltBeacon missing its reserved byte.
        ("1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c5", "malformed_frame"),
        // Flags only, or an unrelated advertisement.
        ("020106", "unknown_frame"),
        ("02010607ff4c0010020b00", "unknown_frame"),
        ("0102030405", "unknown_frame"),
        ("ffffffffffffffffffff", "unknown_frame"),
    ])
    func rejectsMalformedFrames(hex: String, code: String) {
        let e = error(hex)
        #expect(e?.code == code, "\(hex): \(String(describing: e))")
        #expect((e?.message.count ?? 0) > 10)
    }

    @Test func identityPatternsMatchAndRankLikeCoreLocation() {
        let uuid = "f7826da64fa24e988024bc5b71e0893e"
        let sighted = PhysicalBeaconIdentity.iBeacon(uuid: uuid, major: 1, minor: 2)
        let patterns: [PhysicalBeaconIdentity] = [
            .iBeacon(uuid: uuid, major: nil, minor: nil), .iBeacon(uuid: uuid, major: 1, minor: nil), .iBeacon(uuid: uuid, major: 1, minor: 2),
        ]
        #expect(patterns.allSatisfy { $0.matches(sighted) })
        #expect(patterns.map(\.specificity) == [0, 1, 2])
        #expect(!PhysicalBeaconIdentity.iBeacon(uuid: uuid, major: 1, minor: 3).matches(sighted))
        #expect(!PhysicalBeaconIdentity.iBeacon(uuid: uuid, major: 2, minor: nil).matches(sighted))
        #expect(!PhysicalBeaconIdentity.altBeacon(id1: uuid, id2: 1, id3: 2).matches(sighted))
        #expect(Set(patterns.map(\.key)).count == 3)
        #expect(PhysicalBeaconIdentity.normalizedUUID("F7826DA6-4FA2-4E98-8024-BC5B71E0893E") == uuid)
        #expect(PhysicalBeaconIdentity.normalizedUUID("f7826da64fa24e988024bc5b71e0893e") == uuid)
        #expect(PhysicalBeaconIdentity.normalizedUUID("f7826da6-4fa2-4e98-8024-bc5b71e0893") == nil)
        #expect(PhysicalBeaconIdentity.normalizedUUID("g7826da6-4fa2-4e98-8024-bc5b71e0893e") == nil)
        #expect(PhysicalBeaconIdentity.normalizedUUID("f7826da64-fa2-4e98-8024-bc5b71e0893e") == nil)
    }
}
