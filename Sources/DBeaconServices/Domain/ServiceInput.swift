package import DBeaconCore
package import DBeaconGeo
package import DBeaconStore

/// Reading the service request bodies: the same rules and error paths as beacons.
package enum ServiceInput {
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
        let lat = try o.number("lat"), lon = try o.number("lon")
        guard (-90...90).contains(lat) else { throw DBeaconError.invalid(o.path("lat"), "lat must be within [-90, 90]", code: "out_of_range") }
        guard (-180...180).contains(lon) else { throw DBeaconError.invalid(o.path("lon"), "lon must be within [-180, 180]", code: "out_of_range") }
        return Position(lon: lon, lat: lat)
    }

    package static func requiredLatLon(_ r: ObjectReader, _ key: String) throws(DBeaconError) -> Position {
        guard let p = try latLon(r, key) else { throw DBeaconError.invalid(r.path(key), "\(key) ({\"lat\",\"lon\"}) is required", code: "missing_field") }
        return p
    }

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

    /// Renames the path of an error from the Feature form (`properties.perimeter…`) to the
    /// service body's form (`perimeter…`).
    package static func renamingPath(_ error: DBeaconError, _ renames: [(String, String)]) -> DBeaconError {
        guard let path = error.path else { return error }
        var e = error
        for (from, to) in renames
        where path == from || path.hasPrefix(from.hasSuffix(".") ? from : from + ".") || path.hasPrefix(from + "[") {
            e.path = to + path.dropFirst(from.count)
            return e
        }
        return e
    }
}

extension BeaconStore {
    /// Throws 422 `unknown_user` naming the first id that is not a user.
    package func checkUsersExist(_ users: [UserID], path: String) async throws {
        for (i, u) in users.enumerated() where try await user(id: u) == nil {
            throw DBeaconError.invalid("\(path)[\(i)]", "user \(u) does not exist", code: "unknown_user")
        }
    }
}
