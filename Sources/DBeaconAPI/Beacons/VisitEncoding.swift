package import DBeaconCore
package import DBeaconServices

/// The wire form of visit analytics and inferred interests.
package enum VisitEncoding {
    /// The answer of `GET /v1/beacons/{id}/visits`: `visits`, `unique_visitors` and `ongoing`;
    /// `dwell`, the completed visits' dwell times in seconds (`mean_s` and `median_s`, null without
    /// any, and a `histogram` whose buckets run from each of `VisitStats.dwellBounds` to the next,
    /// the last one open: `to_s` null); 168 `hour_of_week` counts; and the `also_visited` beacons
    /// with their visitor counts.
    package static func stats(_ id: BeaconID, _ s: VisitStats) -> JSONValue {
        let histogram = s.dwellHistogram
        let buckets: [JSONValue] = VisitStats.dwellBounds.enumerated().map { i, from in
            let to: JSONValue = i + 1 < VisitStats.dwellBounds.count ? .number(VisitStats.dwellBounds[i + 1]) : .null
            return .object(JSONObject([("from_s", .number(from)), ("to_s", to), ("visits", .int(histogram[i]))]))
        }
        return .object(JSONObject([
            ("beacon", .string(id.rawValue)), ("visits", .int(s.visits)), ("unique_visitors", .int(s.uniqueVisitors)),
            ("ongoing", .int(s.ongoing)),
            ("dwell", .object(JSONObject([
                ("completed", .int(s.dwells.count)), ("mean_s", s.meanDwell.map(JSONValue.number) ?? .null),
                ("median_s", s.medianDwell.map(JSONValue.number) ?? .null), ("histogram", .array(buckets)),
            ]))),
            ("hour_of_week", .array(s.hourOfWeek.map(JSONValue.int))),
            ("also_visited", .array(s.alsoVisited.map { item in
                .object(JSONObject([("beacon", .string(item.beacon.id.rawValue)), ("name", .string(item.beacon.name)),
                                    ("visitors", .int(item.visitors))]))
            })),
        ]))
    }

    /// The answer of `GET /v1/me/interests/suggested`:
    /// `{"suggestions": [{"category","entries","score"}, …]}`, in the service's order (most entered
    /// first).
    package static func suggestedInterests(_ items: [(category: String, entries: Int, score: Int)]) -> JSONValue {
        .object(["suggestions": .array(items.map { item in
            .object(JSONObject([("category", .string(item.category)), ("entries", .int(item.entries)), ("score", .int(item.score))]))
        })])
    }
}
