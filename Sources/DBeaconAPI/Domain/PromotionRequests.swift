package import DBeaconCore
package import DBeaconGeo
package import DBeaconServices

extension PromotionDraft {
    /// The members `POST /v1/promotions` accepts; any other is 422 `unknown_field`.
    static let fields: Set<String> = ["name", "description", "location", "perimeter", "category", "tags", "content", "start", "end",
                                      "related"]

    /// `POST /v1/promotions`: `{"name","description"?,"location":{"lat","lon"},"perimeter","category",
    /// "tags"?,"content"?,"start"?,"end"?,"related"?:[bcn_…]}`. The perimeter is the promotion
    /// region (required).
    package init(json body: JSONValue, limits: GeoLimits) throws(DBeaconError) {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, Self.fields)
        let name = try r.string("name", maxLength: BeaconLimits.maxNameLength)
        let description = try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength)
        let location = try RequestReader.requiredLatLon(r, "location")
        guard let perimeter = try RequestReader.perimeter(r, "perimeter", limits: limits) else {
            throw DBeaconError.invalid("perimeter", "perimeter (the promotion region) is required", code: "missing_field")
        }
        var categories: [String] = []
        if let c = try r.optionalString("category", maxLength: BeaconLimits.maxTagLength) {
            categories.append(try BeaconFeatureCodec.normalizeTag(c, path: "category"))
        }
        for t in try RequestReader.tags(r) where !categories.contains(t) { categories.append(t) }
        let start = try r.optionalTimestamp("start"), end = try r.optionalTimestamp("end")
        if let start, let end, end <= start { throw DBeaconError.invalid("end", "end must be after start", code: "invalid_lifetime") }
        var related: [BeaconID] = []
        for (i, raw) in (try r.optionalStringArray("related", maxCount: BeaconLimits.maxRelationships, maxLength: 100) ?? []).enumerated() {
            guard let id = BeaconID(raw) else { throw DBeaconError.invalid("related[\(i)]", "not a beacon id (bcn_…)", code: "invalid_id") }
            related.append(id)
        }
        self.init(name: name, description: description, location: location, perimeter: perimeter, categories: categories,
                  lifetime: start == nil && end == nil ? nil : Lifetime(start: start, end: end), related: related,
                  content: try RequestReader.content(r))
    }
}

/// `PUT /v1/me/interests`: `{"interests":["food","music"]}` (score 1 each) or
/// `{"interests":{"food":3,"music":1}}` (integer scores in [-100, 100]).
package enum InterestsRequest {
    /// The interests in the order given, each category once, normalised as a tag (in the object
    /// form a later key that normalises to the same tag replaces the score); more than
    /// `PromotionService.maxInterests` is 422 `too_many`, a missing `interests` 422
    /// `missing_field`.
    package static func decode(_ body: JSONValue) throws(DBeaconError) -> [(category: String, score: Int)] {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, ["interests"])
        var result: [(category: String, score: Int)] = []
        switch r.value("interests") {
        case .array(let items)?:
            guard items.count <= PromotionService.maxInterests else {
                throw DBeaconError.invalid("interests", "at most \(PromotionService.maxInterests) interests", code: "too_many")
            }
            for (i, item) in items.enumerated() {
                guard case .string(let s) = item else {
                    throw DBeaconError.invalid("interests[\(i)]", "expected a string, got \(item.typeName)", code: "invalid_type")
                }
                let tag = try BeaconFeatureCodec.normalizeTag(s, path: "interests[\(i)]")
                if !result.contains(where: { $0.category == tag }) { result.append((tag, 1)) }
            }
        case .object(let o)?:
            guard o.count <= PromotionService.maxInterests else {
                throw DBeaconError.invalid("interests", "at most \(PromotionService.maxInterests) interests", code: "too_many")
            }
            let reader = try ObjectReader(.object(o), path: "interests")
            for key in o.keys {
                let tag = try BeaconFeatureCodec.normalizeTag(key, path: reader.path(key))
                let score = try reader.int(key, range: -100...100)
                if let i = result.firstIndex(where: { $0.category == tag }) { result[i].score = score } else { result.append((tag, score)) }
            }
        case let other?:
            throw DBeaconError.invalid("interests", "expected an array of categories or an object of scores, got \(other.typeName)",
                                       code: "invalid_type")
        case nil:
            throw DBeaconError.invalid("interests", "interests is required", code: "missing_field")
        }
        return result
    }
}

/// `POST /v1/promotions/{id}/interactions`: `{"type"}` for `shown`, `clicked`, `calendar_add`,
/// `saved`; `{"type":"rated","rating":1…5}`; `{"type":"feedback","text":"…"}` (1–1,000
/// characters, counted as Unicode code points as JSON Schema does).
package struct InteractionRequest: Sendable {
    /// What the caller did with the promotion.
    package var type: InteractionType
    /// The rating, 1…5: for `rated` only.
    package var rating: Int?
    /// The feedback text: for `feedback` only.
    package var text: String?

    /// Feedback texts are at most this many Unicode code points (as JSON Schema counts
    /// `maxLength`).
    package static let maxFeedbackLength = 1_000

    /// Reads the body by its `type` (422 `invalid_value` for an unknown one): each type allows only
    /// its own members (422 `unknown_field`), `rated` needs `rating`, `feedback` a non-empty
    /// `text`.
    package init(json body: JSONValue) throws(DBeaconError) {
        let r = try ObjectReader(body)
        let raw = try r.string("type", maxLength: 40)
        guard let type = InteractionType(rawValue: raw) else {
            throw DBeaconError.invalid("type", "type must be one of \(InteractionType.allCases.map(\.rawValue).joined(separator: ", "))",
                                       code: "invalid_value")
        }
        self.type = type
        switch type {
        case .rated:
            try RequestReader.checkKnownMembers(r, ["type", "rating"])
            rating = try r.int("rating", range: 1...5)
        case .feedback:
            try RequestReader.checkKnownMembers(r, ["type", "text"])
            guard let v = r.value("text") else {
                throw DBeaconError.invalid("text", "feedback needs a text", code: "missing_field")
            }
            guard case .string(let s) = v else { throw DBeaconError.invalid("text", "text must be a string", code: "invalid_type") }
            guard !s.isEmpty else { throw DBeaconError.invalid("text", "text must not be empty", code: "empty_value") }
            guard s.unicodeScalars.count <= Self.maxFeedbackLength else {
                throw DBeaconError.invalid("text", "text must be at most \(Self.maxFeedbackLength) characters", code: "too_long")
            }
            text = s
        case .shown, .clicked, .calendarAdd, .saved:
            try RequestReader.checkKnownMembers(r, ["type"])
        }
    }
}
