package import DBeaconCore
import DBeaconGeo
package import DBeaconStore

/// The meeting organizer (thesis 4.3.1). A meeting is a beacon (service `meeting`, tag
/// `meeting`): location = the exact spot, perimeter = where it can be discovered, lifetime =
/// start and end (before the start only the organizer sees it, after the end it disappears),
/// visibility members = invitees of a private meeting. Joining follows the beacon, so every
/// edit reaches attendees as `meeting.updated` and cancelling as `meeting.cancelled`
/// (BeaconService chooses these types for meeting beacons).
package struct MeetingService: Sendable {
    package let beacons: BeaconService
    package let store: any ServiceBackingStore

    package init(beacons: BeaconService, store: any ServiceBackingStore) {
        self.beacons = beacons
        self.store = store
    }

    private var clock: any WallClock { beacons.clock }

    static let fields: Set<String> = ["name", "description", "location", "perimeter", "start", "end", "invitees", "tags"]
    /// Feature paths → meeting body paths, for errors raised while applying a patch.
    static let renames = [
        ("properties.lifetime.start", "start"), ("properties.lifetime.end", "end"), ("properties.lifetime", "end"),
        ("properties.visibility.members", "invitees"), ("properties.", ""), ("geometry", "location"),
    ]

    // MARK: Writing

    /// `{"name","description","location":{"lat","lon"},"perimeter","start","end","invitees"?,"tags"?}`.
    package func create(_ body: JSONValue, by principal: Principal) async throws -> Beacon {
        guard let owner = principal.userID else {
            throw DBeaconError.forbidden("meetings are organized by users; the admin token cannot organize one")
        }
        let r = try ObjectReader(body)
        try ServiceInput.checkKnownMembers(r, Self.fields)
        let name = try r.string("name", maxLength: BeaconLimits.maxNameLength)
        let description = try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength)
        let location = try ServiceInput.requiredLatLon(r, "location")
        let perimeter = try ServiceInput.perimeter(r, "perimeter", limits: beacons.limits) ?? .circle(radiusM: BeaconLimits.defaultRadiusM)
        let start = try r.timestamp("start"), end = try r.timestamp("end")
        try checkTimes(start: start, end: end)
        let invitees = try ServiceInput.userIDs(r, "invitees")
        if let invitees { try await store.checkUsersExist(invitees, path: "invitees") }
        var tags = [ServiceKind.meeting]
        for t in try ServiceInput.tags(r) where !tags.contains(t) { tags.append(t) }
        let draft = BeaconDraft(name: name, description: description, location: location, perimeter: perimeter,
                                lifetime: Lifetime(start: start, end: end), members: invitees?.filter { $0 != owner },
                                tags: Array(tags.prefix(BeaconLimits.maxTags)))
        return try await beacons.create(draft, owner: owner, service: ServiceKind.meeting)
    }

    private func checkTimes(start: Timestamp, end: Timestamp) throws {
        guard end > start else { throw DBeaconError.invalid("end", "end must be after start", code: "invalid_lifetime") }
        guard end > clock.now() else { throw DBeaconError.invalid("end", "the meeting would already be over", code: "invalid_lifetime") }
    }

    /// Changes any create field (organizer only); `invitees: null` makes the meeting public.
    /// Attendees receive `meeting.updated` with the changed fields and their new values.
    package func update(_ id: BeaconID, _ body: JSONValue, ifMatch: Set<Int>?, by principal: Principal) async throws -> (Beacon, [String]) {
        let current = try await meeting(id, by: principal)
        guard principal.userID == current.owner else { throw DBeaconError.forbidden("only the organizer may change this meeting") }
        let r = try ObjectReader(body)
        try ServiceInput.checkKnownMembers(r, Self.fields)
        var properties = JSONObject()
        var patch = JSONObject()
        if r.has("name") { properties["name"] = .string(try r.string("name", maxLength: BeaconLimits.maxNameLength)) }
        if r.has("description") {
            properties["description"] = .optional(try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength))
        }
        if let location = try ServiceInput.latLon(r, "location") { patch["geometry"] = GeoJSONCodec.encodePoint(location) }
        if let perimeter = try ServiceInput.perimeter(r, "perimeter", limits: beacons.limits) {
            properties["perimeter"] = GeoJSONCodec.encodePerimeter(perimeter)
        }
        let start = try r.optionalTimestamp("start") ?? current.lifetime?.start
        let end = try r.optionalTimestamp("end") ?? current.lifetime?.end
        if r.has("start") || r.has("end") {
            guard let start, let end else { throw DBeaconError.invalid("end", "a meeting needs a start and an end", code: "invalid_lifetime") }
            try checkTimes(start: start, end: end)
            properties["lifetime"] = BeaconFeatureCodec.encodeLifetime(Lifetime(start: start, end: end))
        }
        if r.has("invitees") {
            if let list = try ServiceInput.userIDs(r, "invitees") {
                try await store.checkUsersExist(list, path: "invitees")
                let invitees = list.filter { $0 != current.owner }
                properties["visibility"] = .object(["members": .array(invitees.map { .string($0.rawValue) })])
            } else {
                properties["visibility"] = .null
            }
        }
        if r.has("tags") {
            var tags = [ServiceKind.meeting]
            for t in try ServiceInput.tags(r) where !tags.contains(t) { tags.append(t) }
            properties["tags"] = .array(tags.prefix(BeaconLimits.maxTags).map(JSONValue.string))
        }
        if !properties.isEmpty { patch["properties"] = .object(properties) }
        do {
            // Un-invited attendees lose the meeting in the same transaction: they no longer attend
            // nor follow it, and hear `meeting.uninvited` (BeaconService.update).
            return try await beacons.update(id, patch: .object(patch), ifMatch: ifMatch, by: principal)
        } catch let error as DBeaconError {
            throw ServiceInput.renamingPath(error, Self.renames)
        }
    }

    /// Cancels the meeting (organizer, or the operator); attendees receive `meeting.cancelled`.
    package func cancel(_ id: BeaconID, ifMatch: Set<Int>?, by principal: Principal) async throws {
        _ = try await meeting(id, by: principal)
        _ = try await beacons.delete(id, ifMatch: ifMatch, by: principal)
    }

    /// The caller joins (and follows) a meeting they can see now. Returns whether this joined
    /// them and the number of attendees.
    package func join(_ id: BeaconID, by principal: Principal) async throws -> (joined: Bool, attendees: Int) {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can join meetings") }
        _ = try await meeting(id, by: principal)
        return try await store.joinMeeting(id, user: uid, at: clock.now())
    }

    /// The caller leaves (and unfollows).
    package func leave(_ id: BeaconID, by principal: Principal) async throws {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can join meetings") }
        if try await store.leaveMeeting(id, user: uid) { return }
        _ = try await meeting(id, by: principal)
        throw DBeaconError.conflict("you have not joined this meeting", code: "not_attending")
    }

    // MARK: Reading

    /// The meeting if the caller may see it; 404 for anything else (including non-meetings).
    package func meeting(_ id: BeaconID, by principal: Principal) async throws -> Beacon {
        let beacon = try await beacons.get(id, by: principal)
        guard beacon.service == ServiceKind.meeting else { throw DBeaconError.notFound("meeting \(id)") }
        return beacon
    }

    package func view(_ id: BeaconID, by principal: Principal) async throws -> MeetingView {
        let beacon = try await meeting(id, by: principal)
        let attendees = try await store.meetingAttendees(id)
        let organizer = principal.isAdmin || principal.userID == beacon.owner
        return MeetingView(beacon: beacon, attendeesCount: attendees.count,
                           joined: attendees.contains { $0.user == principal.userID },
                           attendees: organizer ? attendees : nil)
    }

    /// Meetings whose discovery perimeter covers the point, visible to the caller and alive at `at`.
    package func nearby(point: Position, at: Timestamp?, limit: Int, by principal: Principal) async throws -> [NearbyResult] {
        try await beacons.nearby(point: point, tags: [], at: at, limit: limit, service: ServiceKind.meeting, by: principal)
    }

    /// Meetings the caller organizes or attends (and can still see), soonest start first.
    package func mine(by principal: Principal) async throws -> [Beacon] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("the admin token organizes no meetings") }
        var result: [BeaconID: Beacon] = [:]
        var after: Int64?
        repeat {
            let page = try await store.listBeacons(BeaconListQuery(owner: uid, service: ServiceKind.meeting,
                                                                   limit: BeaconService.maxPageSize, after: after),
                                                   viewer: principal, now: clock.now())
            for b in page.items { result[b.id] = b }
            after = page.next
        } while after != nil
        let now = clock.now()
        for b in try await store.beacons(ids: try await store.attendedMeetings(user: uid))
        where b.service == ServiceKind.meeting && b.isVisible(to: principal, at: now) {
            result[b.id] = b
        }
        return try await beacons.redacted(result.values.sorted {
            let a = $0.lifetime?.start ?? $0.createdAt, b = $1.lifetime?.start ?? $1.createdAt
            return a != b ? a < b : $0.id < $1.id
        }, for: principal)
    }

    /// Directions from a point to the meeting's exact spot.
    package func directions(_ id: BeaconID, from point: Position, by principal: Principal) async throws -> Directions {
        _ = try await meeting(id, by: principal)
        return try await beacons.directions(to: id, from: point, by: principal)
    }
}
