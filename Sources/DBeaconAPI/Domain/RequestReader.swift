package import DBeaconCore
package import DBeaconGeo

/// Reading request bodies: the rules and error paths shared by every decoder of this layer
/// (the service bodies read their members with the same checks as beacon Features).
package enum RequestReader {
    /// Rejects members the body may not have (typos would otherwise be silently ignored).
    package static func checkKnownMembers(_ r: ObjectReader, _ allowed: Set<String>) throws(DBeaconError) {
        for key in r.object.keys where !allowed.contains(key) {
            throw DBeaconError.invalid(r.path(key), "unknown member \(key); expected one of \(allowed.sorted().joined(separator: ", "))",
                                       code: "unknown_field")
        }
    }

    /// `{"lat","lon"}` at `key`.
    package static func latLon(_ r: ObjectReader, _ key: String) throws(DBeaconError) -> Position? {
        guard let o = try r.optionalObject(key) else { return nil }
        return try Position.checked(lat: try o.number("lat"), lon: try o.number("lon"), latPath: o.path("lat"), lonPath: o.path("lon"))
    }

    /// `latLon`, required: 422 `missing_field` when absent.
    package static func requiredLatLon(_ r: ObjectReader, _ key: String) throws(DBeaconError) -> Position {
        guard let p = try latLon(r, key) else { throw DBeaconError.invalid(r.path(key), "\(key) ({\"lat\",\"lon\"}) is required", code: "missing_field") }
        return p
    }

    /// The perimeter at `key` (`GeoJSONCodec.decodePerimeter`: a circle, Polygon or MultiPolygon
    /// within `limits`, errors naming its path); nil when absent or null.
    package static func perimeter(_ r: ObjectReader, _ key: String, limits: GeoLimits) throws(DBeaconError) -> Perimeter? {
        guard let v = r.value(key) else { return nil }
        return try GeoJSONCodec.decodePerimeter(v, path: r.path(key), limits: limits)
    }

    /// Tags at `key`, normalised, deduplicated.
    package static func tags(_ r: ObjectReader, _ key: String = "tags") throws(DBeaconError) -> [String] {
        let raw = try r.optionalStringArray(key, maxCount: BeaconLimits.maxTags, maxLength: BeaconLimits.maxTagLength) ?? []
        var tags: [String] = []
        for (i, t) in raw.enumerated() {
            let tag = try BeaconFeatureCodec.normalizeTag(t, path: "\(r.path(key))[\(i)]")
            if !tags.contains(tag) { tags.append(tag) }
        }
        return tags
    }

    /// User ids at `key` (deduplicated), or nil when absent.
    package static func userIDs(_ r: ObjectReader, _ key: String) throws(DBeaconError) -> [UserID]? {
        guard let raw = try r.optionalStringArray(key, maxCount: BeaconLimits.maxMembers, maxLength: 100) else { return nil }
        return try BeaconFeatureCodec.decodeUserIDs(raw, path: r.path(key))
    }

    /// Content references at `key`.
    package static func content(_ r: ObjectReader, _ key: String = "content") throws(DBeaconError) -> [ContentRef] {
        guard let items = try r.optionalArray(key, maxCount: BeaconLimits.maxContent) else { return [] }
        var result: [ContentRef] = []
        for (i, item) in items.enumerated() {
            result.append(try BeaconFeatureCodec.decodeContentRef(try ObjectReader(item, path: "\(r.path(key))[\(i)]")))
        }
        return result
    }

}
