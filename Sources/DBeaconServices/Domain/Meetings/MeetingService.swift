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
    let store: any ServiceBackingStore

    package init(beacons: BeaconService, store: any ServiceBackingStore) {
        self.beacons = beacons
        self.store = store
    }

    private var clock: any WallClock { beacons.clock }

    // MARK: Writing

    /// Creates a meeting organized by the caller: a beacon with the meeting's spot, discovery
    /// perimeter, start and end as its lifetime, and the invitees as its visibility group.
    package func create(_ draft: MeetingDraft, by principal: Principal) async throws -> Beacon {
        guard let owner = principal.userID else {
            throw DBeaconError.forbidden("meetings are organized by users; the admin token cannot organize one")
        }
        try checkTimes(start: draft.start, end: draft.end)
        if let invitees = draft.invitees { try await store.checkUsersExist(invitees, path: "invitees") }
        let beacon = BeaconDraft(name: draft.name, description: draft.description, location: draft.location,
                                 perimeter: draft.perimeter ?? .circle(radiusM: BeaconLimits.defaultRadiusM),
                                 lifetime: Lifetime(start: draft.start, end: draft.end), members: draft.invitees?.filter { $0 != owner },
                                 tags: Self.tags(draft.tags))
        return try await beacons.create(beacon, owner: owner, service: ServiceKind.meeting)
    }

    /// `meeting` first, then the others, each once, within the limit.
    private static func tags(_ given: [String]) -> [String] {
        var tags = [ServiceKind.meeting]
        for t in given where !tags.contains(t) { tags.append(t) }
        return Array(tags.prefix(BeaconLimits.maxTags))
    }

    private func checkTimes(start: Timestamp, end: Timestamp) throws {
        guard end > start else { throw DBeaconError.invalid("end", "end must be after start", code: "invalid_lifetime") }
        guard end > clock.now() else { throw DBeaconError.invalid("end", "the meeting would already be over", code: "invalid_lifetime") }
    }

    /// Changes any create field (organizer only); `invitees: null` makes the meeting public.
    /// Attendees receive `meeting.updated` with the changed fields and their new values;
    /// un-invited attendees lose the meeting in the same transaction (they no longer attend
    /// nor follow it) and hear `meeting.uninvited` (BeaconService.update).
    package func update(_ id: BeaconID, _ changes: MeetingChanges, ifMatch: Set<Int>?, by principal: Principal) async throws -> (Beacon, [String]) {
        let current = try await meeting(id, by: principal)
        guard principal.userID == current.owner else { throw DBeaconError.forbidden("only the organizer may change this meeting") }
        if case .some(.some(let invitees)) = changes.invitees { try await store.checkUsersExist(invitees, path: "invitees") }
        if changes.start != nil || changes.end != nil {
            guard let start = changes.start ?? current.lifetime?.start, let end = changes.end ?? current.lifetime?.end else {
                throw DBeaconError.invalid("end", "a meeting needs a start and an end", code: "invalid_lifetime")
            }
            try checkTimes(start: start, end: end)
        }
        return try await beacons.update(id, ifMatch: ifMatch, by: principal) { current in
            var draft = BeaconDraft(current)
            if let name = changes.name { draft.name = name }
            if let description = changes.description { draft.description = description }
            if let location = changes.location { draft.location = location }
            if let perimeter = changes.perimeter { draft.perimeter = perimeter }
            if changes.start != nil || changes.end != nil {
                draft.lifetime = Lifetime(start: changes.start ?? current.lifetime?.start, end: changes.end ?? current.lifetime?.end)
            }
            if let invitees = changes.invitees { draft.members = invitees?.filter { $0 != current.owner } }
            if let tags = changes.tags { draft.tags = Self.tags(tags) }
            return draft
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
    package func meeting(_ id: BeaconID, by principal: Principal) async throws -> VisibleBeacon {
        let beacon = try await beacons.get(id, by: principal)
        guard beacon.service == ServiceKind.meeting else { throw DBeaconError.notFound("meeting \(id)") }
        return beacon
    }

    package func view(_ id: BeaconID, by principal: Principal) async throws -> MeetingView {
        let beacon = try await meeting(id, by: principal)
        let attendees = try await store.meetingAttendees(id)
        let organizer = beacon.allows(.modify, to: principal, at: clock.now())
        return MeetingView(beacon: beacon, attendeesCount: attendees.count,
                           joined: attendees.contains { $0.user == principal.userID },
                           attendees: organizer ? attendees : nil)
    }

    /// Meetings whose discovery perimeter covers the point, visible to the caller and alive at `at`.
    package func nearby(point: Position, at: Timestamp?, limit: Int, by principal: Principal) async throws -> [NearbyResult] {
        try await beacons.nearby(point: point, tags: [], at: at, limit: limit, service: ServiceKind.meeting, by: principal)
    }

    /// Meetings the caller organizes or attends (and can still see), soonest start first.
    package func mine(by principal: Principal) async throws -> [VisibleBeacon] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("the admin token organizes no meetings") }
        var result: [BeaconID: VisibleBeacon] = [:]
        var after: Int64?
        repeat {
            let page = try await beacons.list(BeaconListQuery(owner: uid, service: ServiceKind.meeting,
                                                              limit: BeaconService.maxPageSize, after: after), by: principal)
            for b in page.items { result[b.id] = b }
            after = page.next
        } while after != nil
        let attended = try await store.attendedMeetings(user: uid)
        for b in try await beacons.gate.beacons(attended, for: principal, from: .record) where b.service == ServiceKind.meeting {
            result[b.id] = b
        }
        return result.values.sorted {
            let a = $0.lifetime?.start ?? $0.createdAt, b = $1.lifetime?.start ?? $1.createdAt
            return a != b ? a < b : $0.id < $1.id
        }
    }

    /// Directions from a point to the meeting's exact spot.
    package func directions(_ id: BeaconID, from point: Position, by principal: Principal) async throws -> Directions {
        _ = try await meeting(id, by: principal)
        return try await beacons.directions(to: id, from: point, by: principal)
    }
}
