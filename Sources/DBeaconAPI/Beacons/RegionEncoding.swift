package import DBeaconCore
package import DBeaconServices

/// The wire form of `GET /v1/regions`.
package enum RegionEncoding {
    /// `{"regions": […], "max", "complete"}`: the regions in the service's order, the `max` they
    /// were chosen for, and `complete`, false when more beacons cover the caller than there were
    /// slots (the refresh circle then has radius 0: report fixes instead).
    package static func regions(_ answer: RegionAnswer, max: Int) -> JSONValue {
        .object(JSONObject([("regions", .array(answer.regions.map(region))), ("max", .int(max)), ("complete", .bool(answer.complete))]))
    }

    /// `{"lat","lon"}` of a region's center.
    static func latLon(_ p: Position) -> JSONValue { .object(["lat": .number(p.lat), "lon": .number(p.lon)]) }

    /// Each region names its kind as `kind` (CONTRACT.md) and, as it first did, `type`.
    static func region(_ r: MonitoredRegion) -> JSONValue {
        var o = JSONObject()
        switch r.kind {
        case .circle(let center, let radius, let approximate):
            o = JSONObject([("kind", "circle"), ("type", "circle"), ("id", .optional(r.beacon?.id.rawValue)), ("center", latLon(center)),
                            ("radius_m", .number(radius)), ("approximate", .bool(approximate))])
        case .iBeacon(let entry, let identity):
            o = JSONObject([("kind", "ibeacon"), ("type", "ibeacon"), ("id", .string(entry.rawValue))])
            for (k, v) in RegistryCodec.encodeIdentity(identity).members where k != "type" { o[k] = v }
        case .refresh(let center, let radius):
            return .object(JSONObject([("kind", "refresh"), ("type", "refresh"), ("id", "refresh"), ("center", latLon(center)),
                                       ("radius_m", .number(radius))]))
        }
        if let b = r.beacon {
            o["beacon"] = .string(b.id.rawValue)
            o["name"] = .string(b.name)
        }
        o["distance_m"] = .number((r.distanceM * 10).rounded() / 10)
        return .object(o)
    }
}
