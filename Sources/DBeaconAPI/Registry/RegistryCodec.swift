package import DBeaconCore
package import DBeaconServices

/// JSON for physical beacon identities and registry entries.
///
/// Identities are written per type: `{"type":"ibeacon","uuid","major","minor"}`,
/// `{"type":"eddystone-uid","namespace","instance"}`, `{"type":"altbeacon","id1","id2","id3"}`;
/// `type` defaults to `ibeacon`. UUIDs are read in 8-4-4-4-12 form or as 32 hex digits and
/// written in 8-4-4-4-12 lowercase form.
package enum RegistryCodec {
    /// Calibrated power at 1 m: what a beacon can plausibly advertise.
    package static let measuredPowerRange = -127...20
    /// The floors an installed position may name (`position.level`; 0 is the ground floor).
    package static let levelRange = -100...300

    // MARK: Identities

    /// Reads an identity. With `concrete`, every part must be present (a sighting);
    /// otherwise `major`/`minor` (`id2`/`id3`) may be left out as wildcards (`minor` needs `major`).
    package static func decodeIdentity(_ o: ObjectReader, concrete: Bool) throws(DBeaconError) -> PhysicalBeaconIdentity {
        let typeName = try o.optionalString("type", maxLength: 32) ?? PhysicalBeaconKind.iBeacon.rawValue
        guard let kind = PhysicalBeaconKind(rawValue: typeName) else {
            throw .invalid(o.path("type"), "type must be ibeacon, eddystone-uid or altbeacon", code: "invalid_type")
        }
        switch kind {
        case .iBeacon:
            let uuid = try uuid(o, "uuid")
            let (major, minor) = try levels(o, "major", "minor", concrete: concrete)
            return .iBeacon(uuid: uuid, major: major, minor: minor)
        case .altBeacon:
            let id1 = try uuid(o, "id1")
            let (id2, id3) = try levels(o, "id2", "id3", concrete: concrete)
            return .altBeacon(id1: id1, id2: id2, id3: id3)
        case .eddystoneUID:
            let namespace = try o.string("namespace", maxLength: 64)
            guard let ns = PhysicalBeaconIdentity.normalizedHex(namespace, count: 20) else {
                throw .invalid(o.path("namespace"), "namespace must be 10 bytes as 20 hex digits", code: "invalid_namespace")
            }
            let instance = try o.string("instance", maxLength: 64)
            guard let inst = PhysicalBeaconIdentity.normalizedHex(instance, count: 12) else {
                throw .invalid(o.path("instance"), "instance must be 6 bytes as 12 hex digits", code: "invalid_instance")
            }
            return .eddystoneUID(namespace: ns, instance: inst)
        }
    }

    /// A UUID member, normalised: 8-4-4-4-12 form or 32 hex digits in, 422 `invalid_uuid`
    /// otherwise.
    private static func uuid(_ o: ObjectReader, _ key: String) throws(DBeaconError) -> String {
        let raw = try o.string(key, maxLength: 64)
        guard let uuid = PhysicalBeaconIdentity.normalizedUUID(raw) else {
            throw .invalid(o.path(key), "\(key) must be a UUID such as f7826da6-4fa2-4e98-8024-bc5b71e0893e", code: "invalid_uuid")
        }
        return uuid
    }

    /// The two lower levels of an identity (`major`/`minor`, `id2`/`id3`); the third without the
    /// second is 422 `missing_field`.
    private static func levels(_ o: ObjectReader, _ k2: String, _ k3: String, concrete: Bool) throws(DBeaconError) -> (Int?, Int?) {
        let v2 = try level(o, k2, concrete: concrete)
        let v3 = try level(o, k3, concrete: concrete)
        if v3 != nil && v2 == nil {
            throw .invalid(o.path(k3), "\(k3) needs \(k2): leave both out to match any", code: "missing_field")
        }
        return (v2, v3)
    }

    /// One level: an integer in 0…65535 (422 `invalid_<key>` otherwise); nil when absent, 422
    /// `missing_field` when `concrete`.
    private static func level(_ o: ObjectReader, _ key: String, concrete: Bool) throws(DBeaconError) -> Int? {
        guard o.value(key) != nil else {
            if concrete { throw .invalid(o.path(key), "\(key) is required", code: "missing_field") }
            return nil
        }
        guard case .number(let n)? = o.value(key), n.isFinite, n == n.rounded(), (0...65535).contains(n) else {
            throw .invalid(o.path(key), "\(key) must be an integer within 0…65535", code: "invalid_\(key)")
        }
        return Int(n)
    }

    /// The identity's own members (`type` first).
    package static func encodeIdentity(_ identity: PhysicalBeaconIdentity) -> JSONObject {
        var o: JSONObject = ["type": .string(identity.kind.rawValue)]
        switch identity.kind {
        case .iBeacon:
            o["uuid"] = .string(identity.displayID1)
            o["major"] = .int(identity.id2)
            o["minor"] = .int(identity.id3)
        case .altBeacon:
            o["id1"] = .string(identity.displayID1)
            o["id2"] = .int(identity.id2)
            o["id3"] = .int(identity.id3)
        case .eddystoneUID:
            o["namespace"] = .string(identity.id1)
            o["instance"] = .optional(identity.instance)
        }
        return o
    }

    // MARK: Entries

    /// Reads a registry entry (`POST /v1/registry`). Server-owned members (`id`, `owner`,
    /// `version`, `created_at`, `updated_at`) are ignored here; the service checks them on PATCH.
    package static func decodeDraft(_ value: JSONValue) throws(DBeaconError) -> RegistryDraft {
        let o = try ObjectReader(value)
        let identity = try decodeIdentity(o, concrete: false)
        let rawBeacon = try o.string("beacon", maxLength: 100)
        guard let beacon = BeaconID(rawBeacon) else {
            throw .invalid(o.path("beacon"), "beacon must be a beacon id (bcn_…)", code: "invalid_id")
        }
        var position: InstalledPosition?
        if let p = try o.optionalObject("position") {
            let point = try Position.checked(lat: try p.number("lat"), lon: try p.number("lon"), latPath: p.path("lat"), lonPath: p.path("lon"))
            position = InstalledPosition(position: point, level: try p.optionalInt("level", range: levelRange))
        }
        let measuredPower = try o.optionalInt("measured_power", range: measuredPowerRange)
        var status = RegistryEntry.Status.active
        if let raw = try o.optionalString("status", maxLength: 32) {
            guard let s = RegistryEntry.Status(rawValue: raw) else {
                throw .invalid(o.path("status"), "status must be active, inactive or decommissioned", code: "invalid_value")
            }
            status = s
        }
        return RegistryDraft(identity: identity, beacon: beacon, position: position, measuredPower: measuredPower, status: status)
    }

    /// An entry as the API shows it: `id`, the identity's members, `beacon`, `owner`, `position`
    /// (`lat`, `lon`, `level`, or null), `measured_power`, `status`, `version`, `created_at` and
    /// `updated_at`.
    package static func encode(_ e: RegistryEntry) -> JSONValue {
        var o: JSONObject = ["id": .string(e.id.rawValue)]
        for (k, v) in encodeIdentity(e.identity).members { o[k] = v }
        o["beacon"] = .string(e.beacon.rawValue)
        o["owner"] = .string(e.owner.rawValue)
        if let p = e.position {
            o["position"] = .object(JSONObject([("lat", .number(p.position.lat)), ("lon", .number(p.position.lon)), ("level", .int(p.level))]))
        } else {
            o["position"] = .null
        }
        o["measured_power"] = .int(e.measuredPower)
        o["status"] = .string(e.status.rawValue)
        o["version"] = .int(e.version)
        o["created_at"] = .string(e.createdAt.rfc3339)
        o["updated_at"] = .string(e.updatedAt.rfc3339)
        return .object(o)
    }
}

extension RegistryCodec {
    /// Applies an RFC 7396 merge patch to the entry as the API shows it and reads the result;
    /// server-owned members may be repeated unchanged but not changed.
    package static func patched(_ current: RegistryEntry, with patch: JSONValue) throws(DBeaconError) -> RegistryDraft {
        guard case .object = patch else {
            throw DBeaconError.invalid("$", "a merge patch must be a JSON object", code: "invalid_type")
        }
        let shown = encode(current)
        let merged = shown.mergePatched(with: patch)
        for key in ["id", "owner", "created_at"] where merged[key] != shown[key] {
            throw DBeaconError.invalid(key, "\(key) is set by the server and cannot change", code: "read_only")
        }
        return try decodeDraft(merged)
    }
}
