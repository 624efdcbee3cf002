package import DBeaconCore
package import DBeaconGeo
package import DBeaconServices

extension TourDraft {
    /// The members `POST /v1/tours` accepts; any other is 422 `unknown_field`.
    static let fields: Set<String> = ["name", "description", "perimeter", "lifetime", "visibility", "tags", "content", "stops"]
    /// The members a stop may have, whether it names an existing beacon or describes a new place.
    static let stopFields: Set<String> = ["beacon", "order", "name", "description", "location", "perimeter", "content", "tags"]

    /// `POST /v1/tours`: `{"name","description"?,"perimeter"?,"lifetime"?,"visibility"?:{"members"},
    /// "tags"?,"content"?,"stops":[…]}`. A stop is an existing beacon (`{"beacon":"bcn_…","order"?}`)
    /// or a new place (`{"name","location":{"lat","lon"},"perimeter"?,"description"?,"content"?,
    /// "tags"?,"order"?}`); `order` defaults to the stop's position (1-based).
    package init(json body: JSONValue, limits: GeoLimits) throws(DBeaconError) {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, Self.fields)
        let name = try r.string("name", maxLength: BeaconLimits.maxNameLength)
        let description = try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength)
        let lifetime = try BeaconFeatureCodec.decodeLifetime(r)
        var members: [UserID]?
        var membersPath = "visibility.members"
        if let visibility = try r.optionalObject("visibility") {
            members = try RequestReader.userIDs(visibility, "members") ?? []
            membersPath = visibility.path("members")
        }
        let tags = try RequestReader.tags(r)
        let content = try RequestReader.content(r)
        guard let stopValues = try r.optionalArray("stops", maxCount: TourService.maxStops), !stopValues.isEmpty else {
            throw DBeaconError.invalid("stops", "a tour needs at least one stop", code: "missing_field")
        }
        var stops: [TourStopDraft] = []
        for (i, value) in stopValues.enumerated() {
            stops.append(try Self.stop(value, index: i, limits: limits))
        }
        self.init(name: name, description: description, perimeter: try RequestReader.perimeter(r, "perimeter", limits: limits),
                  lifetime: lifetime, members: members, membersPath: membersPath, tags: tags, content: content, stops: stops)
    }

    /// `PUT /v1/tours/{id}/stops`: `{"stops":[…]}`, each stop as in `POST /v1/tours`.
    package static func stops(json body: JSONValue, limits: GeoLimits) throws(DBeaconError) -> [TourStopDraft] {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, ["stops"])
        guard let values = try r.optionalArray("stops", maxCount: TourService.maxStops), !values.isEmpty else {
            throw DBeaconError.invalid("stops", "a tour needs at least one stop", code: "missing_field")
        }
        var stops: [TourStopDraft] = []
        for (i, value) in values.enumerated() { stops.append(try stop(value, index: i, limits: limits)) }
        return stops
    }

    /// The stop at `stops[i]`: a `beacon` member makes it an existing beacon (422 `invalid_id` when
    /// that is not a beacon id) and the place members are not read; otherwise a new place, with
    /// `name` and `location` required.
    private static func stop(_ value: JSONValue, index i: Int, limits: GeoLimits) throws(DBeaconError) -> TourStopDraft {
        let s = try ObjectReader(value, path: "stops[\(i)]")
        try RequestReader.checkKnownMembers(s, Self.stopFields)
        let order = try s.optionalInt("order", range: -1_000_000...1_000_000) ?? i + 1
        if let raw = try s.optionalString("beacon", maxLength: 100) {
            guard let id = BeaconID(raw) else { throw DBeaconError.invalid(s.path("beacon"), "not a beacon id (bcn_…)", code: "invalid_id") }
            return .existing(id, order: order, path: s.path("beacon"))
        }
        return .place(TourPlaceDraft(
            order: order, name: try s.string("name", maxLength: BeaconLimits.maxNameLength),
            description: try s.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength),
            location: try RequestReader.requiredLatLon(s, "location"),
            perimeter: try RequestReader.perimeter(s, "perimeter", limits: limits),
            tags: try RequestReader.tags(s), content: try RequestReader.content(s), path: s.path("name")))
    }
}
