/// A decoded beacon advertisement: who sent it and its calibrated power at 1 m.
package struct BeaconFrame: Sendable, Hashable {
    /// A concrete identity (every part present).
    package var identity: PhysicalBeaconIdentity
    /// Calibrated RSSI at 1 m in dBm: the iBeacon measured power, the AltBeacon reference
    /// RSSI, or the Eddystone transmit power at 0 m minus 41 dB (the spec's 0 m → 1 m loss).
    package var measuredPowerAt1m: Int

    package init(identity: PhysicalBeaconIdentity, measuredPowerAt1m: Int) {
        self.identity = identity
        self.measuredPowerAt1m = measuredPowerAt1m
    }
}

/// Why an advertisement could not be decoded: `code` is stable (`invalid_hex`,
/// `malformed_frame`, `unsupported_frame`, `unknown_frame`), `message` says what was wrong.
package struct BeaconFrameError: Error, Sendable, Hashable {
    package var code: String
    package var message: String

    package init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// Parses raw BLE advertisements (as apps capture them, in hex) into beacon identities.
///
/// Accepted input, in this order:
/// * a whole advertisement: a sequence of AD structures `[length][type][data]` (such as
///   `0201061aff4c000215…`), possibly zero-padded to 31 bytes; the manufacturer-specific (0xFF)
///   and 16-bit service data (0x16) structures are searched for a beacon frame;
/// * the payload of one manufacturer-specific structure: `4c000215…` (iBeacon: Apple's
///   company id 0x004C little-endian, type 0x02, length 0x15) or `<company id>beac…` (AltBeacon);
/// * the payload of one Eddystone service data structure: `aafe00…` (0xFEAA as sent,
///   little-endian) or `feaa00…` (as usually written);
/// * an AltBeacon payload starting at its beacon code `beac…`.
///
/// Frame layouts: iBeacon (Apple Proximity Beacon Specification) `4C 00 02 15`, 16-byte UUID,
/// major and minor (big-endian), measured power (int8); Eddystone-UID (google/eddystone)
/// frame type 0x00, TX power at 0 m (int8), 10-byte namespace, 6-byte instance, 2 reserved
/// bytes (optional here, as some beacons omit them); AltBeacon (AltBeacon spec) company id,
/// `BE AC`, 20-byte beacon id, reference RSSI (int8), one reserved byte.
package enum BeaconFrameParser {
    /// The longest accepted input: a legacy advertisement plus its scan response (62 bytes).
    package static let maxBytes = 62

    package static func parse(hex: String) -> Result<BeaconFrame, BeaconFrameError> {
        switch decodeHex(hex) {
        case .failure(let e): return .failure(e)
        case .success(let bytes): return parse(bytes: bytes)
        }
    }

    package static func parse(bytes: [UInt8]) -> Result<BeaconFrame, BeaconFrameError> {
        guard !bytes.isEmpty else { return .failure(BeaconFrameError("invalid_hex", "the advertisement is empty")) }
        guard bytes.count <= maxBytes else {
            return .failure(BeaconFrameError("invalid_hex", "the advertisement has \(bytes.count) bytes; at most \(maxBytes) are accepted"))
        }
        let structures = adStructures(bytes)
        if case .success(let list) = structures, let result = parse(structures: list) { return result }
        // A bare payload of one structure.
        if bytes.starts(with: [0x4C, 0x00, 0x02]) { return parseIBeacon(Array(bytes.dropFirst(2))) }
        if bytes.starts(with: [0xAA, 0xFE]) || bytes.starts(with: [0xFE, 0xAA]) { return parseEddystone(Array(bytes.dropFirst(2))) }
        if bytes.starts(with: [0xBE, 0xAC]) { return parseAltBeacon(Array(bytes.dropFirst(2))) }
        if bytes.count >= 4, bytes[2] == 0xBE, bytes[3] == 0xAC { return parseAltBeacon(Array(bytes.dropFirst(4))) }
        if bytes.count >= 2, bytes[0] == 0x4C, bytes[1] == 0x00 {
            let type = hex2(bytes.count > 2 ? bytes[2] : 0)
            return .failure(BeaconFrameError("unsupported_frame", "Apple manufacturer data of type 0x\(type) is not an iBeacon frame (type 0x02)"))
        }
        // Starts like an advertisement (flags, then a length that runs past the end): say so.
        if case .failure(let tiling) = structures, bytes.count >= 3, bytes[0] == 0x02, bytes[1] == 0x01 { return .failure(tiling) }
        return .failure(BeaconFrameError("unknown_frame", "not an iBeacon, Eddystone-UID or AltBeacon advertisement"))
    }

    // MARK: Advertisement structures

    /// Splits `bytes` into AD structures `(type, data)` when the lengths tile it exactly
    /// (trailing zero padding allowed); otherwise why not.
    static func adStructures(_ bytes: [UInt8]) -> Result<[(type: UInt8, data: [UInt8])], BeaconFrameError> {
        var result: [(UInt8, [UInt8])] = []
        var i = 0
        while i < bytes.count {
            let length = Int(bytes[i])
            if length == 0 {
                // Padding: the rest must be zeros, and something must have come before.
                guard !result.isEmpty, bytes[i...].allSatisfy({ $0 == 0 }) else {
                    return .failure(BeaconFrameError("malformed_frame", "empty AD structure at byte \(i)"))
                }
                break
            }
            guard i + 1 + length <= bytes.count else {
                return .failure(BeaconFrameError(
                    "malformed_frame", "AD structure at byte \(i) claims \(length) bytes but only \(bytes.count - i - 1) follow (truncated?)"))
            }
            result.append((bytes[i + 1], Array(bytes[(i + 2)..<(i + 1 + length)])))
            i += 1 + length
        }
        return .success(result)
    }

    /// The first beacon frame among the structures; nil when none looks like one.
    private static func parse(structures: [(type: UInt8, data: [UInt8])]) -> Result<BeaconFrame, BeaconFrameError>? {
        var firstError: BeaconFrameError?
        for s in structures {
            let result: Result<BeaconFrame, BeaconFrameError>?
            switch s.type {
            case 0xFF where s.data.starts(with: [0x4C, 0x00]) && s.data.count > 2 && s.data[2] == 0x02:
                result = parseIBeacon(Array(s.data.dropFirst(2)))
            case 0xFF where s.data.count >= 4 && s.data[2] == 0xBE && s.data[3] == 0xAC:
                result = parseAltBeacon(Array(s.data.dropFirst(4)))
            case 0x16 where s.data.starts(with: [0xAA, 0xFE]):
                result = parseEddystone(Array(s.data.dropFirst(2)))
            default:
                result = nil
            }
            switch result {
            case .success(let frame)?: return .success(frame)
            case .failure(let e)?: if firstError == nil { firstError = e }
            case nil: continue
            }
        }
        return firstError.map { .failure($0) }
    }

    // MARK: Frames

    /// `02 15` + UUID(16) + major(2) + minor(2) + measured power(1).
    private static func parseIBeacon(_ d: [UInt8]) -> Result<BeaconFrame, BeaconFrameError> {
        guard d.first == 0x02 else {
            return .failure(BeaconFrameError("unsupported_frame", "Apple manufacturer data that is not an iBeacon frame"))
        }
        guard d.count >= 2 else { return .failure(BeaconFrameError("malformed_frame", "iBeacon frame cut off after its type byte")) }
        guard d[1] == 0x15 else {
            return .failure(BeaconFrameError("malformed_frame", "iBeacon frame length byte is 0x\(hex2(d[1])), expected 0x15 (21)"))
        }
        guard d.count == 23 else {
            return .failure(BeaconFrameError("malformed_frame", "iBeacon frame has \(d.count - 2) data bytes, expected 21"))
        }
        let uuid = Hex.string(d[2..<18])
        let major = Int(d[18]) << 8 | Int(d[19])
        let minor = Int(d[20]) << 8 | Int(d[21])
        return .success(BeaconFrame(identity: .iBeacon(uuid: uuid, major: major, minor: minor), measuredPowerAt1m: Int(Int8(bitPattern: d[22]))))
    }

    /// Frame type(1) + TX power at 0 m(1) + namespace(10) + instance(6) [+ RFU(2)].
    private static func parseEddystone(_ d: [UInt8]) -> Result<BeaconFrame, BeaconFrameError> {
        guard let type = d.first else {
            return .failure(BeaconFrameError("malformed_frame", "Eddystone service data without a frame type"))
        }
        switch type {
        case 0x00: break
        case 0x10: return .failure(BeaconFrameError("unsupported_frame", "Eddystone-URL frames carry no beacon id; send Eddystone-UID"))
        case 0x20: return .failure(BeaconFrameError("unsupported_frame", "Eddystone-TLM frames carry no beacon id; send Eddystone-UID"))
        case 0x30: return .failure(BeaconFrameError("unsupported_frame", "Eddystone-EID frames are encrypted; send Eddystone-UID"))
        default: return .failure(BeaconFrameError("unknown_frame", "unknown Eddystone frame type 0x\(hex2(type))"))
        }
        guard d.count == 18 || d.count == 20 else {
            return .failure(BeaconFrameError("malformed_frame", "Eddystone-UID frame has \(d.count) bytes, expected 18 or 20"))
        }
        let txAt0m = Int(Int8(bitPattern: d[1]))
        guard (-100...20).contains(txAt0m) else {
            return .failure(BeaconFrameError("malformed_frame", "Eddystone-UID TX power \(txAt0m) dBm is outside -100…20"))
        }
        return .success(BeaconFrame(identity: .eddystoneUID(namespace: Hex.string(d[2..<12]), instance: Hex.string(d[12..<18])),
                                    measuredPowerAt1m: txAt0m - 41))
    }

    /// After `BE AC`: beacon id(20) + reference RSSI(1) + reserved(1).
    private static func parseAltBeacon(_ d: [UInt8]) -> Result<BeaconFrame, BeaconFrameError> {
        guard d.count == 22 else {
            return .failure(BeaconFrameError("malformed_frame", "AltBeacon frame has \(d.count) bytes after the beacon code, expected 22"))
        }
        let id1 = Hex.string(d[0..<16])
        let id2 = Int(d[16]) << 8 | Int(d[17])
        let id3 = Int(d[18]) << 8 | Int(d[19])
        return .success(BeaconFrame(identity: .altBeacon(id1: id1, id2: id2, id3: id3), measuredPowerAt1m: Int(Int8(bitPattern: d[20]))))
    }

    // MARK: Hex

    /// Hex digits (any case; spaces, `:` and `-` between bytes are ignored) to bytes.
    package static func decodeHex(_ text: String) -> Result<[UInt8], BeaconFrameError> {
        var digits: [UInt8] = []
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "-"): continue
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(c - 48)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digits.append(c - 87)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digits.append(c - 55)
            default: return .failure(BeaconFrameError("invalid_hex", "the advertisement must be hex digits"))
            }
            if digits.count > maxBytes * 2 {
                return .failure(BeaconFrameError("invalid_hex", "the advertisement is longer than \(maxBytes) bytes"))
            }
        }
        guard digits.count % 2 == 0 else {
            return .failure(BeaconFrameError("invalid_hex", "the advertisement has an odd number of hex digits"))
        }
        guard !digits.isEmpty else { return .failure(BeaconFrameError("invalid_hex", "the advertisement is empty")) }
        return .success(stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] })
    }

    private static func hex2(_ b: UInt8) -> String { Hex.string([b]) }
}
