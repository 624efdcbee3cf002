package import DBeaconCore
package import DBeaconGeo
package import DBeaconServices

extension MeetingDraft {
    /// The members `POST /v1/meetings` accepts, and `PATCH /v1/meetings/{id}` too; any other is 422
    /// `unknown_field`.
    static let fields: Set<String> = ["name", "description", "location", "perimeter", "start", "end", "invitees", "tags"]

    /// `POST /v1/meetings`: `{"name","description"?,"location":{"lat","lon"},"perimeter"?,"start","end",
    /// "invitees"?,"tags"?}`.
    package init(json body: JSONValue, limits: GeoLimits) throws(DBeaconError) {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, Self.fields)
        self.init(
            name: try r.string("name", maxLength: BeaconLimits.maxNameLength),
            description: try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength),
            location: try RequestReader.requiredLatLon(r, "location"),
            perimeter: try RequestReader.perimeter(r, "perimeter", limits: limits),
            start: try r.timestamp("start"), end: try r.timestamp("end"),
            invitees: try RequestReader.userIDs(r, "invitees"),
            tags: try RequestReader.tags(r))
    }
}

extension MeetingChanges {
    /// `PATCH /v1/meetings/{id}`: any create member; `description: null` removes the
    /// description, `invitees: null` makes the meeting public.
    package init(json body: JSONValue, limits: GeoLimits) throws(DBeaconError) {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, MeetingDraft.fields)
        self.init()
        if r.has("name") { name = try r.string("name", maxLength: BeaconLimits.maxNameLength) }
        if r.has("description") { description = .some(try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength)) }
        location = try RequestReader.latLon(r, "location")
        perimeter = try RequestReader.perimeter(r, "perimeter", limits: limits)
        start = try r.optionalTimestamp("start")
        end = try r.optionalTimestamp("end")
        if r.has("invitees") { invitees = .some(try RequestReader.userIDs(r, "invitees")) }
        if r.has("tags") { tags = try RequestReader.tags(r) }
    }
}
