package import DBeaconCore
package import DBeaconServices

/// `POST /v1/me/location`: one fix (`{"lat","lon","accuracy_m"?,"timestamp"?}`) or `{"fixes":[…]}`.
package enum LocationFixRequest {
    /// The fixes, oldest first as sent; a missing timestamp is `now`.
    package static func decode(_ body: JSONValue, now: Timestamp, config: FenceConfig) throws(DBeaconError) -> [LocationFix] {
        let r = try ObjectReader(body)
        // One fix or a batch, never both (the document's `oneOf`): a body with both is not
        // applied half.
        if r.has("fixes"), let single = ["lat", "lon", "accuracy_m", "timestamp"].first(where: r.has) {
            throw DBeaconError.invalid("fixes", "send one fix (lat, lon, …) or a batch (fixes), not both (\(single) and fixes)",
                                       code: "ambiguous_body")
        }
        if let list = try r.optionalArray("fixes", maxCount: config.maxFixesPerRequest) {
            guard !list.isEmpty else { throw DBeaconError.invalid("fixes", "fixes must not be empty", code: "empty_value") }
            var fixes: [LocationFix] = []
            for (i, value) in list.enumerated() {
                fixes.append(try fix(try ObjectReader(value, path: "fixes[\(i)]"), now: now, config: config))
            }
            return fixes
        }
        return [try fix(r, now: now, config: config)]
    }

    /// One fix: `lat`/`lon` (checked), `accuracy_m` (metres; negative or beyond the fence engine's
    /// maximum is 422) and `timestamp` (default `now`), which must lie in the window the fence
    /// engine accepts (422 otherwise).
    static func fix(_ f: ObjectReader, now: Timestamp, config: FenceConfig) throws(DBeaconError) -> LocationFix {
        let position = try Position.checked(lat: try f.number("lat"), lon: try f.number("lon"), latPath: f.path("lat"), lonPath: f.path("lon"))
        let accuracy = try FenceConfig.accuracy(try f.optionalNumber("accuracy_m"), path: f.path("accuracy_m"), strict: true)
        let timestamp = try f.optionalTimestamp("timestamp") ?? now
        try config.requireAccepted(time: timestamp, now: now, field: "timestamp", path: f.path("timestamp"))
        return LocationFix(position: position, accuracyM: accuracy, timestamp: timestamp)
    }
}
