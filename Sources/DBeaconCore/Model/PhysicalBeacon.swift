/// The advertising formats of physical BLE beacons that DBeacon can resolve.
package enum PhysicalBeaconKind: String, Sendable, Hashable, CaseIterable {
    /// Apple iBeacon: proximity UUID, major, minor.
    case iBeacon = "ibeacon"
    /// Google Eddystone-UID: 10-byte namespace, 6-byte instance.
    case eddystoneUID = "eddystone-uid"
    /// AltBeacon: a 20-byte beacon id, read as a 16-byte id1 and two 16-bit parts id2, id3.
    case altBeacon = "altbeacon"
}

/// The identity of a physical beacon, or, in the registry, a pattern of identities.
///
/// iBeacon and AltBeacon follow CoreLocation's three levels: `id2` (major) and `id3` (minor)
/// may be nil in a registry entry, meaning "any value"; `id3` without `id2` is not allowed.
/// A sighting always carries all parts. Eddystone-UID has no wildcards.
package struct PhysicalBeaconIdentity: Sendable, Hashable, CustomStringConvertible {
    package var kind: PhysicalBeaconKind
    /// The iBeacon proximity UUID or AltBeacon id1 (32 hex digits), or the Eddystone
    /// namespace (20 hex digits); lowercase, no dashes.
    package var id1: String
    /// Major (iBeacon) or id2 (AltBeacon), 0…65535; nil = any.
    package var id2: Int?
    /// Minor (iBeacon) or id3 (AltBeacon), 0…65535; nil = any.
    package var id3: Int?
    /// The Eddystone instance (12 hex digits, lowercase).
    package var instance: String?

    package init(kind: PhysicalBeaconKind, id1: String, id2: Int? = nil, id3: Int? = nil, instance: String? = nil) {
        self.kind = kind
        self.id1 = id1
        self.id2 = id2
        self.id3 = id3
        self.instance = instance
    }

    /// An iBeacon identity; `uuid` as 32 lowercase hex digits.
    package static func iBeacon(uuid: String, major: Int?, minor: Int?) -> PhysicalBeaconIdentity {
        PhysicalBeaconIdentity(kind: .iBeacon, id1: uuid, id2: major, id3: minor)
    }

    package static func eddystoneUID(namespace: String, instance: String) -> PhysicalBeaconIdentity {
        PhysicalBeaconIdentity(kind: .eddystoneUID, id1: namespace, instance: instance)
    }

    package static func altBeacon(id1: String, id2: Int?, id3: Int?) -> PhysicalBeaconIdentity {
        PhysicalBeaconIdentity(kind: .altBeacon, id1: id1, id2: id2, id3: id3)
    }

    /// How many levels below the first identifier are pinned (0, 1 or 2): the most specific
    /// matching registry entry wins.
    package var specificity: Int {
        switch kind {
        case .eddystoneUID: 2
        case .iBeacon, .altBeacon: (id2 == nil ? 0 : 1) + (id3 == nil ? 0 : 1)
        }
    }

    /// True when every part is given (what a sighting must be).
    package var isConcrete: Bool { specificity == 2 }

    /// Whether this pattern (a registry entry) matches a concrete identity (a sighting).
    package func matches(_ sighted: PhysicalBeaconIdentity) -> Bool {
        guard kind == sighted.kind, id1 == sighted.id1 else { return false }
        if kind == .eddystoneUID { return instance == sighted.instance }
        if let id2, id2 != sighted.id2 { return false }
        if let id3, id3 != sighted.id3 { return false }
        return true
    }

    /// A canonical text form, unique per pattern: `ibeacon:<uuid>:<major|*>:<minor|*>`,
    /// `eddystone-uid:<namespace>:<instance>`, `altbeacon:<id1>:<id2|*>:<id3|*>`. Two entries
    /// with the same key are duplicates.
    package var key: String {
        switch kind {
        case .eddystoneUID: "\(kind.rawValue):\(id1):\(instance ?? "")"
        case .iBeacon, .altBeacon: "\(kind.rawValue):\(id1):\(id2.map(String.init) ?? "*"):\(id3.map(String.init) ?? "*")"
        }
    }

    package var description: String { key }

    /// `id1` in the 8-4-4-4-12 UUID form (iBeacon, AltBeacon) or as hex (Eddystone namespace).
    package var displayID1: String {
        kind == .eddystoneUID ? id1 : Self.uuidString(hex: id1)
    }

    /// `f7826da64fa24e988024bc5b71e0893e` → `f7826da6-4fa2-4e98-8024-bc5b71e0893e`.
    package static func uuidString(hex: String) -> String {
        guard hex.utf8.count == 32 else { return hex }
        let c = Array(hex)
        return [String(c[0..<8]), String(c[8..<12]), String(c[12..<16]), String(c[16..<20]), String(c[20..<32])]
            .joined(separator: "-")
    }

    /// Reads a 128-bit UUID written as 8-4-4-4-12 or as 32 hex digits (any case); returns 32
    /// lowercase hex digits, or nil when malformed.
    package static func normalizedUUID(_ raw: String) -> String? {
        let bytes = Array(raw.utf8)
        let hex: [UInt8]
        if bytes.count == 36 {
            for i in [8, 13, 18, 23] where bytes[i] != UInt8(ascii: "-") { return nil }
            hex = bytes.enumerated().filter { ![8, 13, 18, 23].contains($0.offset) }.map(\.element)
        } else if bytes.count == 32 {
            hex = bytes
        } else {
            return nil
        }
        return normalizedHex(hex, count: 32)
    }

    /// Reads exactly `count` hex digits (any case) as lowercase; nil when malformed.
    package static func normalizedHex(_ raw: String, count: Int) -> String? {
        normalizedHex(Array(raw.utf8), count: count)
    }

    private static func normalizedHex(_ bytes: [UInt8], count: Int) -> String? {
        guard bytes.count == count else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(count)
        for b in bytes {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): out.append(b)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): out.append(b + 32)
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Id of a registry entry (`reg_…`).
package struct RegistryID: PrefixedID {
    package static let prefix = "reg_"
    package let rawValue: String
    package init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }
}

/// Where a physical beacon is mounted: a WGS84 point and an optional building level.
package struct InstalledPosition: Sendable, Hashable {
    package var position: Position
    /// Floor number (0 = ground); nil when unknown or outdoors.
    package var level: Int?

    package init(position: Position, level: Int?) {
        self.position = position
        self.level = level
    }
}

/// One entry of the shared registry: this physical beacon (or pattern of beacons) stands for
/// that digital beacon. Every app resolves the same identity to the same digital beacon.
package struct RegistryEntry: Sendable, Hashable {
    /// `active` entries resolve; `inactive` ones are kept but ignored (a beacon taken down
    /// for a while); `decommissioned` ones are history and free their identity for a new entry.
    package enum Status: String, Sendable, Hashable, CaseIterable {
        case active, inactive, decommissioned
    }

    package var id: RegistryID
    package var identity: PhysicalBeaconIdentity
    package var beacon: BeaconID
    /// The owner of the digital beacon (who may edit the entry).
    package var owner: UserID
    package var position: InstalledPosition?
    /// RSSI at 1 m in dBm, for distance estimates; nil: use the sighting's or the frame's value.
    package var measuredPower: Int?
    package var status: Status
    package var version: Int
    package var createdAt: Timestamp
    package var updatedAt: Timestamp

    package init(id: RegistryID, identity: PhysicalBeaconIdentity, beacon: BeaconID, owner: UserID, position: InstalledPosition?,
                 measuredPower: Int?, status: Status, version: Int, createdAt: Timestamp, updatedAt: Timestamp) {
        self.id = id
        self.identity = identity
        self.beacon = beacon
        self.owner = owner
        self.position = position
        self.measuredPower = measuredPower
        self.status = status
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
