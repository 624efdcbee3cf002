import DBeaconCore
import NIOHTTP1

/// The HTTP API as the CLI uses it: one method per call, answered with the API's JSON (what
/// `--json` prints, and what the tables are made from). The transport decides where it goes.
struct DBeaconClient: Sendable {
    let transport: any APITransport

    private func call(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: JSONValue? = nil,
                      bulk: Bool = false) async throws -> JSONValue {
        try await transport.send(APIRequest(method: method, path: path, query: query, body: body, bulk: bulk)) ?? .null
    }

    /// A path segment from user input (ids), percent-encoded.
    private func segment(_ raw: String) -> String {
        raw.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(.init(charactersIn: "/"))) ?? raw
    }

    // MARK: Users and beacons

    func addUser(name: String) async throws -> JSONValue {
        try await call(.POST, "/v1/users", body: ["name": .string(name)])
    }

    // MARK: Accounts

    func me() async throws -> JSONValue {
        try await call(.GET, "/v1/me")
    }

    func users(namePrefix: String?, limit: Int, cursor: String?) async throws -> JSONValue {
        var query = [("limit", String(limit))]
        if let namePrefix { query.append(("name_prefix", namePrefix)) }
        if let cursor { query.append(("cursor", cursor)) }
        return try await call(.GET, "/v1/users", query: query)
    }

    func user(_ id: String) async throws -> JSONValue {
        try await call(.GET, "/v1/users/\(segment(id))")
    }

    func updateUser(_ id: String, name: String? = nil, disabled: Bool? = nil) async throws -> JSONValue {
        var body = JSONObject()
        if let name { body["name"] = .string(name) }
        if let disabled { body["disabled"] = .bool(disabled) }
        return try await call(.PATCH, "/v1/users/\(segment(id))", body: .object(body))
    }

    /// A new token: the user's own (`id` nil, their token), or any user's (the admin token).
    func rotateToken(_ id: String?) async throws -> JSONValue {
        try await call(.POST, id.map { "/v1/users/\(segment($0))/token" } ?? "/v1/me/token")
    }

    /// Erases a user (the admin token), or the caller's own account (`confirm`: their id).
    func eraseUser(_ id: String) async throws -> JSONValue {
        try await call(.DELETE, "/v1/users/\(segment(id))", bulk: true)
    }

    func eraseOwnAccount(confirm: String) async throws -> JSONValue {
        try await call(.DELETE, "/v1/me", query: [("confirm", confirm)], bulk: true)
    }

    /// Everything the service holds about a user: the caller (`id` nil) or any (the admin token).
    func export(_ id: String?) async throws -> JSONValue {
        try await call(.GET, id.map { "/v1/users/\(segment($0))/export" } ?? "/v1/me/export", bulk: true)
    }

    func importFeatures(_ document: JSONValue, owner: UserID?) async throws -> JSONValue {
        try await call(.POST, "/v1/beacons/import", query: owner.map { [("owner", $0.rawValue)] } ?? [], body: document, bulk: true)
    }

    func nearby(lat: Double, lon: Double, tags: [String], at: Timestamp?, limit: Int) async throws -> JSONValue {
        var query = [("lat", String(lat)), ("lon", String(lon)), ("limit", String(limit))] + tags.map { ("tag", $0) }
        if let at { query.append(("at", at.rfc3339)) }
        return try await call(.GET, "/v1/nearby", query: query)
    }

    func beacon(_ id: String) async throws -> JSONValue {
        try await call(.GET, "/v1/beacons/\(segment(id))")
    }

    func beacons(tags: [String], owner: String?, bbox: String?, limit: Int, cursor: String?) async throws -> JSONValue {
        var query = [("limit", String(limit))] + tags.map { ("tag", $0) }
        if let owner { query.append(("owner", owner)) }
        if let bbox { query.append(("bbox", bbox)) }
        if let cursor { query.append(("cursor", cursor)) }
        return try await call(.GET, "/v1/beacons", query: query)
    }

    func createBeacon(_ feature: JSONValue) async throws -> JSONValue {
        try await call(.POST, "/v1/beacons", body: feature)
    }

    func deleteBeacon(_ id: String) async throws {
        _ = try await call(.DELETE, "/v1/beacons/\(segment(id))")
    }

    // MARK: Live

    func reportLocation(lat: Double, lon: Double, accuracy: Double?) async throws -> JSONValue {
        var fix: JSONObject = ["lat": .number(lat), "lon": .number(lon)]
        if let accuracy { fix["accuracy_m"] = .number(accuracy) }
        return try await call(.POST, "/v1/me/location", body: .object(fix))
    }

    func regions(lat: Double, lon: Double, max: Int, tags: [String]) async throws -> JSONValue {
        var query = [("lat", String(lat)), ("lon", String(lon)), ("max", String(max))]
        for t in tags { query.append(("tag", t)) }
        return try await call(.GET, "/v1/regions", query: query)
    }

    func tags(bbox: String?, limit: Int) async throws -> JSONValue {
        var query = [("limit", String(limit))]
        if let bbox { query.append(("bbox", bbox)) }
        return try await call(.GET, "/v1/tags", query: query)
    }

    func followedTags() async throws -> JSONValue {
        try await call(.GET, "/v1/me/tags")
    }

    func followTag(_ tag: String, radius: Double?) async throws -> JSONValue {
        try await call(.PUT, "/v1/me/tags/\(segment(tag))", body: radius.map { .object(["radius_m": .number($0)]) })
    }

    func unfollowTag(_ tag: String) async throws {
        _ = try await call(.DELETE, "/v1/me/tags/\(segment(tag))")
    }

    func events(after: String?, limit: Int) async throws -> JSONValue {
        var query = [("limit", String(limit))]
        if let after { query.append(("after", after)) }
        return try await call(.GET, "/v1/events", query: query)
    }

    func addWebhook(url: String, events: [String], scope: String?) async throws -> JSONValue {
        var body: JSONObject = ["url": .string(url)]
        if !events.isEmpty { body["events"] = .array(events.map(JSONValue.string)) }
        if let scope { body["scope"] = .string(scope) }
        return try await call(.POST, "/v1/webhooks", body: .object(body))
    }

    func webhooks() async throws -> JSONValue {
        try await call(.GET, "/v1/webhooks")
    }

    func deliveries(webhook: String, limit: Int) async throws -> JSONValue {
        try await call(.GET, "/v1/webhooks/\(segment(webhook))/deliveries", query: [("limit", String(limit))])
    }

    // MARK: Services

    func createMeeting(_ body: JSONValue) async throws -> JSONValue {
        try await call(.POST, "/v1/meetings", body: body)
    }

    func meetings() async throws -> JSONValue {
        try await call(.GET, "/v1/meetings")
    }

    func nearbyMeetings(lat: Double, lon: Double, at: Timestamp?) async throws -> JSONValue {
        var query = [("lat", String(lat)), ("lon", String(lon))]
        if let at { query.append(("at", at.rfc3339)) }
        return try await call(.GET, "/v1/meetings/nearby", query: query)
    }

    func groups() async throws -> JSONValue {
        try await call(.GET, "/v1/groups")
    }

    func group(_ id: String) async throws -> JSONValue {
        try await call(.GET, "/v1/groups/\(segment(id))")
    }

    func tour(_ id: String) async throws -> JSONValue {
        try await call(.GET, "/v1/tours/\(segment(id))")
    }

    func pickPromotion(lat: Double, lon: Double) async throws -> JSONValue {
        try await call(.GET, "/v1/promotions/pick", query: [("lat", String(lat)), ("lon", String(lon))])
    }

    // MARK: Registry and sightings

    func register(_ body: JSONValue) async throws -> JSONValue {
        try await call(.POST, "/v1/registry", body: body)
    }

    func registry(beacon: String?, uuid: String?, status: String?, limit: Int, cursor: String?) async throws -> JSONValue {
        var query = [("limit", String(limit))]
        if let beacon { query.append(("beacon", beacon)) }
        if let uuid { query.append(("uuid", uuid)) }
        if let status { query.append(("status", status)) }
        if let cursor { query.append(("cursor", cursor)) }
        return try await call(.GET, "/v1/registry", query: query)
    }

    /// `identity`: the members of an identity (`type`, `uuid`, `major`, …) or `{"adv": hex}`.
    func resolve(_ identity: JSONObject) async throws -> JSONValue {
        try await call(.GET, "/v1/registry/resolve", query: identity.members.compactMap { key, value in
            switch value {
            case .string(let s): return (key, s)
            case .number(let n): return (key, n == n.rounded() ? String(Int(n)) : String(n))
            default: return nil
            }
        })
    }

    func reportSightings(_ body: JSONValue) async throws -> JSONValue {
        try await call(.POST, "/v1/sightings", body: body)
    }
}
