package import DBeaconCore

/// The wire form of categories: tag counts and followed tags.
package enum TagEncoding {
    /// `{"tags": [{"tag": "food", "count": 12}, …]}`
    package static func counts(_ counts: [TagCount]) -> JSONValue {
        .object(["tags": .array(counts.map { .object(JSONObject([("tag", .string($0.tag)), ("count", .int($0.count))])) })])
    }

    /// `{"tag": "food", "radius_m": 2000, "created_at": "…"}`
    package static func follow(_ follow: TagFollow) -> JSONValue {
        .object(JSONObject([
            ("tag", .string(follow.tag)), ("radius_m", .number(follow.radiusM)), ("created_at", .string(follow.createdAt.rfc3339)),
        ]))
    }

    /// `{"follows": [ follow, … ]}`
    package static func follows(_ follows: [TagFollow]) -> JSONValue {
        .object(["follows": .array(follows.map(follow))])
    }

    /// The body of `PUT /v1/me/tags/{tag}`: an optional `radius_m`; nothing else.
    package static func radius(fromFollowBody body: JSONValue?) throws -> Double? {
        guard let body else { return nil }
        let reader = try ObjectReader(body)
        try RequestReader.checkKnownMembers(reader, ["radius_m"])
        if reader.has("radius_m") && reader.value("radius_m") == nil {
            throw DBeaconError.invalid(reader.path("radius_m"), "radius_m must be a number (leave it out for the default)",
                                       code: "invalid_type")
        }
        return try reader.optionalNumber("radius_m")
    }
}
