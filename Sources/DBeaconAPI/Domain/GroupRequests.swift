package import DBeaconCore
package import DBeaconServices

extension GroupDraft {
    /// The members `POST /v1/groups` accepts; any other is 422 `unknown_field`.
    static let fields: Set<String> = ["name", "description", "range_m", "members", "location"]

    /// `POST /v1/groups`: `{"name","range_m","members"?,"description"?,"location"?:{"lat","lon"}}`.
    package init(json body: JSONValue) throws(DBeaconError) {
        let r = try ObjectReader(body)
        try RequestReader.checkKnownMembers(r, Self.fields)
        self.init(
            name: try r.string("name", maxLength: BeaconLimits.maxNameLength),
            description: try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength),
            rangeM: try r.number("range_m"),
            members: try RequestReader.userIDs(r, "members"),
            location: try RequestReader.latLon(r, "location"))
    }
}
