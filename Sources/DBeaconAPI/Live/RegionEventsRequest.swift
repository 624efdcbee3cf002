package import DBeaconCore
package import DBeaconServices

/// `POST /v1/me/region-events`: `{"events":[{"region":"bcn_…"|"reg_…","type":"enter"|"exit","timestamp"?}]}`
/// (at most 100; `timestamp`, as CONTRACT.md names it, or its alias `at`, defaults to now and
/// may be at most the fix skew in the future).
package struct RegionEventRequest: Sendable {
    /// The region reported: a beacon id (a circle region) or a registry entry id (an iBeacon
    /// region), resolved by `RegionService.crossings`.
    package var region: String
    /// True for `type: enter`, false for `exit`.
    package var entered: Bool
    /// When the phone crossed: `timestamp` (or its alias `at`), else the time of the request.
    package var at: Timestamp
    /// The JSON path of `region`, for errors about it.
    package var path: String

    /// Region events one request may carry.
    package static let maxEvents = 100

    /// The events in the order sent. A missing or empty `events` is 422 `missing_field`, an event
    /// with both `timestamp` and `at` 422 `conflicting_fields`, a time outside the fence engine's
    /// window 422.
    package static func decode(_ body: JSONValue, now: Timestamp, config: FenceConfig) throws(DBeaconError) -> [RegionEventRequest] {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, ["events"])
        guard let items = try r.optionalArray("events", maxCount: maxEvents), !items.isEmpty else {
            throw DBeaconError.invalid("events", "events must list at least one region event", code: "missing_field")
        }
        var result: [RegionEventRequest] = []
        for (i, item) in items.enumerated() {
            let e = try ObjectReader(item, path: "events[\(i)]")
            try RequestReader.checkKnownMembers(e, ["region", "type", "timestamp", "at"])
            let region = try e.string("region", maxLength: 100)
            let type = try e.string("type", maxLength: 10)
            guard type == "enter" || type == "exit" else {
                throw DBeaconError.invalid(e.path("type"), "type is enter or exit", code: "invalid_value")
            }
            if e.has("timestamp") && e.has("at") {
                throw DBeaconError.invalid(e.path("at"), "give timestamp or its alias at, not both", code: "conflicting_fields")
            }
            let field = e.has("at") ? "at" : "timestamp"
            let at = try e.optionalTimestamp(field) ?? now
            try config.requireAccepted(time: at, now: now, field: field, path: e.path(field))
            result.append(RegionEventRequest(region: region, entered: type == "enter", at: at, path: e.path("region")))
        }
        return result
    }
}
