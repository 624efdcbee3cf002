package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
package import Logging

/// Group tracking with out-of-range alerts (thesis 4.3.2). A group is a beacon (service
/// `group`) that tracks its guide's live location with a circle perimeter of the group's
/// range, visible to everyone (open group) or to the allowed users; people near the guide find
/// it. Members share their live location with the group from the moment they join.
///
/// Range alerts react to fixes of members and of the guide (`LocationListener`): a member
/// farther than `range_m` from the guide produces `group.member_out_of_range` for the guide and
/// every member; coming back within `range_m − hysteresis` produces
/// `group.member_back_in_range`. State and events are written in one transaction; a concurrent
/// decision on the same member makes the transaction fail and the decision is taken again.
package struct GroupService: LocationListener {
    package let beacons: BeaconService
    let store: any ServiceBackingStore
    package let config: ServiceConfig
    let logger: Logger

    package init(beacons: BeaconService, store: any ServiceBackingStore, config: ServiceConfig, logger: Logger) {
        self.beacons = beacons
        self.store = store
        self.config = config
        self.logger = logger
    }

    private var clock: any WallClock { beacons.clock }
    static let maxMembers = 1000

    // MARK: Lifecycle

    /// Creates a group led by the caller (the guide). The beacon starts at the draft's
    /// location, else at the guide's last fix; without either it stays hidden until the
    /// guide's first fix.
    package func create(_ draft: GroupDraft, by principal: Principal) async throws -> GroupStatus {
        guard let leader = principal.userID else { throw DBeaconError.forbidden("groups are led by users; the admin token cannot lead one") }
        let name = draft.name, description = draft.description, range = draft.rangeM
        guard range > 0, range <= beacons.limits.maxRadiusM else {
            throw DBeaconError.invalid("range_m", "range_m must be > 0 and at most \(Int(beacons.limits.maxRadiusM)) m", code: "out_of_range")
        }
        let allowed = draft.members?.filter { $0 != leader }
        if let allowed { try await store.checkUsersExist(allowed, path: "members") }
        var location = draft.location
        if location == nil { location = try await store.userLocations([leader]).first?.position }
        let now = clock.now()
        let beacon = Beacon(
            id: .generate(), name: name, description: description, owner: leader,
            location: location ?? Position(lon: 0, lat: 0), perimeter: .circle(radiusM: range),
            members: location == nil ? [] : allowed, tags: [ServiceKind.group], tracksOwner: true,
            service: ServiceKind.group, createdAt: now, updatedAt: now)
        let group = TrackedGroup(id: .generate(), beacon: beacon.id, name: name, leader: leader, rangeM: range, allowed: allowed,
                                 placed: location != nil, createdAt: now)
        try await beacons.checkQuota(leader, adding: 1)
        try await store.createGroup(group, beacon: beacon)
        return try await status(group, viewer: principal)
    }

    /// Deletes the group and its beacon (the guide, or the operator).
    package func delete(_ id: GroupID, by principal: Principal) async throws {
        let group = try await visibleGroup(id, by: principal)
        guard principal.isAdmin || principal.userID == group.leader else { throw DBeaconError.forbidden("only the guide may delete the group") }
        _ = try await beacons.delete(group.beacon, ifMatch: nil, by: principal)
    }

    /// The caller joins a group they may see; the guide and members receive `group.member_joined`.
    /// Joining shares the caller's live location with the group from now on.
    package func join(_ id: GroupID, by principal: Principal) async throws -> (GroupStatus, Bool) {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can join groups") }
        let group = try await visibleGroup(id, by: principal)
        if uid == group.leader { throw DBeaconError.conflict("you guide this group", code: "group_leader") }
        let now = clock.now()
        let members = try await store.groupMembers(id)
        let name = try await store.user(id: uid)?.name ?? uid.rawValue
        let recipients = [group.leader] + members.map(\.user).filter { $0 != uid } + [uid]
        let events = recipients.map { recipient in
            Event(type: .memberJoined, createdAt: now, recipient: recipient, beacon: group.beacon,
                  data: Self.memberData(group, member: uid, name: name, extra: [("at", .string(now.rfc3339))]))
        }
        switch try await store.addGroupMember(id, user: uid, at: now, events: events) {
        case .removed: throw DBeaconError.forbidden("the guide removed you from this group")
        case .alreadyMember: return (try await status(group, viewer: principal), false)
        case .joined: return (try await status(group, viewer: principal), true)
        }
    }

    /// The caller leaves; the guide and the remaining members receive `group.member_left`.
    package func leave(_ id: GroupID, by principal: Principal) async throws {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can join groups") }
        let group = try await memberGroup(id, by: principal)
        if uid == group.leader { throw DBeaconError.conflict("the guide cannot leave; delete the group instead", code: "group_leader") }
        try await removeMember(group, uid, removed: false)
    }

    /// The guide removes a member: the member loses access at once, is no longer shared and
    /// cannot rejoin; everyone (the removed member included) receives `group.member_left`.
    package func remove(_ id: GroupID, member: UserID, by principal: Principal) async throws {
        let group = try await memberGroup(id, by: principal)
        guard principal.isAdmin || principal.userID == group.leader else {
            throw DBeaconError.forbidden("only the guide may remove members")
        }
        if member == group.leader { throw DBeaconError.conflict("the guide cannot be removed", code: "group_leader") }
        try await removeMember(group, member, removed: true)
    }

    /// Takes the member out of every place that grants access to a private group, in one
    /// transaction with the membership: the group beacon's visibility group (so get, nearby,
    /// directions and the group's nearby answer 404 at once, and the index learns it from the
    /// beacon change) and the group's allowed list. An open group's beacon is public by design:
    /// the member stops sharing and seeing positions and, once removed, cannot rejoin.
    private func removeMember(_ group: TrackedGroup, _ user: UserID, removed: Bool) async throws {
        for _ in 0..<5 {
            let members = try await store.groupMembers(group.id)
            guard let leaving = members.first(where: { $0.user == user }) else { throw DBeaconError.notFound("member \(user)") }
            let now = clock.now()
            let recipients = [group.leader] + members.map(\.user)
            let events = recipients.map { recipient in
                Event(type: .memberLeft, createdAt: now, recipient: recipient, beacon: group.beacon,
                      data: Self.memberData(group, member: user, name: leaving.name, extra: [
                          ("reason", .string(removed ? "removed" : "left")), ("at", .string(now.rfc3339)),
                      ]))
            }
            var access: GroupAccessRevocation?
            let current = try await store.group(id: group.id) ?? group
            if let beacon = try await store.beacon(id: group.beacon), beacon.members?.contains(user) == true || current.allowed?.contains(user) == true {
                var revoked = beacon
                if let members = beacon.members { revoked.members = members.filter { $0 != user } }
                if revoked.members != beacon.members {
                    revoked.version += 1
                    revoked.updatedAt = now
                }
                access = GroupAccessRevocation(beacon: revoked, expectedVersion: beacon.version,
                                               allowed: current.allowed?.filter { $0 != user })
            }
            do {
                guard try await store.removeGroupMember(group.id, user: user, removed: removed, events: events, revoking: access) else {
                    throw DBeaconError.notFound("member \(user)")
                }
                return
            } catch let error as DBeaconError where error.kind == .preconditionFailed {
                continue  // the group beacon changed meanwhile: take the member out of the new version
            }
        }
        throw DBeaconError(.conflict, code: "edit_conflict", message: "the group changed too often while removing the member; retry")
    }

    // MARK: Reading

    /// The group if its beacon is visible to the caller (or they are in it); 404 otherwise.
    private func visibleGroup(_ id: GroupID, by principal: Principal) async throws -> TrackedGroup {
        guard let group = try await store.group(id: id),
              let beacon = try await store.beacon(id: group.beacon) else { throw DBeaconError.notFound("group \(id)") }
        if beacon.allows(.see, to: principal, at: clock.now()) { return group }
        // A hidden (not yet located) group is still there for the users allowed in it.
        if let uid = principal.userID, !group.placed, group.allowed?.contains(uid) ?? true { return group }
        throw DBeaconError.notFound("group \(id)")
    }

    /// The group if the caller is its guide or an active member (or the operator); 404 otherwise.
    private func memberGroup(_ id: GroupID, by principal: Principal) async throws -> TrackedGroup {
        guard let group = try await store.group(id: id) else { throw DBeaconError.notFound("group \(id)") }
        if principal.isAdmin || principal.userID == group.leader { return group }
        guard let uid = principal.userID, try await store.groupMembers(id).contains(where: { $0.user == uid }) else {
            throw DBeaconError.notFound("group \(id)")
        }
        return group
    }

    /// The guide and members with positions, ages, distances and range states: members only.
    package func status(_ id: GroupID, by principal: Principal) async throws -> GroupStatus {
        try await status(try await memberGroup(id, by: principal), viewer: principal)
    }

    private func status(_ group: TrackedGroup, viewer: Principal) async throws -> GroupStatus {
        let members = try await store.groupMembers(group.id)
        var beacon: VisibleBeacon?
        if let b = try await store.beacon(id: group.beacon) { beacon = try await beacons.gate.present(b, to: viewer) }
        var locations: [UserID: UserLocation] = [:]
        for l in try await store.userLocations([group.leader] + members.map(\.user)) { locations[l.user] = l }
        let now = clock.now()
        // Nobody sees positions from before they joined (the guide "joined" at creation).
        let viewerJoined: Timestamp
        if viewer.isAdmin || viewer.userID == group.leader {
            viewerJoined = group.createdAt
        } else {
            viewerJoined = members.first { $0.user == viewer.userID }?.joinedAt ?? now
        }
        func shared(_ user: UserID, since: Timestamp) -> UserLocation? {
            guard let l = locations[user], l.fixAt >= since else { return nil }
            return l
        }
        func ageAndStale(_ l: UserLocation?, joined: Timestamp) -> (Double?, Bool) {
            let age = l.map { now.seconds(since: $0.fixAt) }
            return (age, (age ?? now.seconds(since: joined)) > config.groupStaleSeconds)
        }
        // The guide's last fix is the group beacon's current location, which everyone who may
        // see the group sees anyway: it is the group's reference, not a member's history.
        let guide = locations[group.leader]
        let (guideAge, guideStale) = ageAndStale(guide, joined: group.createdAt)
        let leaderName = try await store.user(id: group.leader)?.name ?? group.leader.rawValue
        var result = [GroupMemberStatus(user: group.leader, name: leaderName, role: "leader", joinedAt: group.createdAt,
                                        location: guide, ageSeconds: guideAge, stale: guideStale, distanceM: guide == nil ? nil : 0,
                                        inRange: guide == nil ? nil : true)]
        for m in members {
            let l = shared(m.user, since: max(m.joinedAt, viewerJoined))
            let (age, stale) = ageAndStale(locations[m.user].flatMap { $0.fixAt >= m.joinedAt ? $0 : nil }, joined: m.joinedAt)
            var distance: Double?
            if let l, let guide { distance = Geodesy.distance(l.position, guide.position) }
            result.append(GroupMemberStatus(user: m.user, name: m.name, role: "member", joinedAt: m.joinedAt, location: l,
                                            ageSeconds: l == nil ? nil : age, stale: stale, distanceM: distance,
                                            inRange: m.rangeState.map { $0 == .inRange }))
        }
        return GroupStatus(group: group, beacon: beacon, members: result, staleAfterSeconds: config.groupStaleSeconds)
    }

    /// Groups whose range around their guide covers the point, visible to the caller.
    package func nearby(point: Position, limit: Int, by principal: Principal) async throws -> [(NearbyResult, TrackedGroup)] {
        let found = try await beacons.nearby(point: point, tags: [], at: nil, limit: limit, service: ServiceKind.group, by: principal)
        var byBeacon: [BeaconID: TrackedGroup] = [:]
        for g in try await store.groups(beacons: found.map(\.beacon.id)) { byBeacon[g.beacon] = g }
        return found.compactMap { r in byBeacon[r.beacon.id].map { (r, $0) } }
    }

    /// Groups the caller guides or belongs to.
    package func mine(by principal: Principal) async throws -> [TrackedGroup] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("the admin token belongs to no group") }
        return try await store.groups(involving: uid)
    }

    // MARK: Range alerts

    /// Re-decides the range state of the group's members after a fix of the guide or a member.
    package func locationAccepted(_ location: UserLocation, events: [Event]) async -> [Event] {
        do {
            var produced: [Event] = []
            for group in try await store.groups(involving: location.user) {
                if group.leader == location.user && !group.placed { try await place(group) }
                produced += try await evaluate(group, movedBy: location.user)
            }
            return produced
        } catch {
            logger.error("group range evaluation failed", metadata: ["user": "\(location.user)", "error": "\(error)"])
            return []
        }
    }

    /// Reveals a group created before its guide's location was known.
    private func place(_ group: TrackedGroup) async throws {
        for _ in 0..<3 {
            guard var beacon = try await store.beacon(id: group.beacon) else { return }
            let version = beacon.version
            beacon.members = group.allowed
            beacon.version += 1
            beacon.updatedAt = clock.now()
            do {
                try await store.placeGroup(group.id, beacon: beacon, expectedVersion: version)
                return
            } catch let error as DBeaconError where error.kind == .preconditionFailed {
                continue
            }
        }
    }

    /// Decides and commits range transitions; retried when a concurrent decision won.
    func evaluate(_ group: TrackedGroup, movedBy: UserID) async throws -> [Event] {
        for _ in 0..<5 {
            let members = try await store.groupMembers(group.id)
            guard !members.isEmpty else { return [] }
            if movedBy != group.leader && !members.contains(where: { $0.user == movedBy }) { return [] }
            var locations: [UserID: UserLocation] = [:]
            for l in try await store.userLocations([group.leader] + members.map(\.user)) { locations[l.user] = l }
            guard let guide = locations[group.leader] else { return [] }
            let (transitions, events) = decide(group, members: members, guide: guide, locations: locations)
            guard !transitions.isEmpty else { return [] }
            do {
                try await store.applyRangeTransitions(group.id, transitions, events: events)
                return events
            } catch let error as DBeaconError where error.kind == .preconditionFailed {
                continue
            }
        }
        throw DBeaconError(.unavailable, code: "busy", message: "group \(group.id) changed too often to decide its range states")
    }

    /// The pure decision: out when farther than the range, back in only within range − hysteresis.
    func decide(_ group: TrackedGroup, members: [GroupMembership], guide: UserLocation,
                locations: [UserID: UserLocation]) -> ([RangeTransition], [Event]) {
        let now = clock.now()
        let margin = config.hysteresisM(rangeM: group.rangeM)
        var transitions: [RangeTransition] = []
        var events: [Event] = []
        for m in members {
            // Only positions shared since the member joined count.
            guard let l = locations[m.user], l.fixAt >= m.joinedAt else { continue }
            let d = Geodesy.distance(l.position, guide.position)
            let new: RangeState
            switch m.rangeState {
            case nil: new = d > group.rangeM ? .outOfRange : .inRange
            case .inRange?: new = d > group.rangeM ? .outOfRange : .inRange
            case .outOfRange?: new = d <= group.rangeM - margin ? .inRange : .outOfRange
            }
            guard new != m.rangeState else { continue }
            let at = max(l.fixAt, guide.fixAt)
            transitions.append(RangeTransition(member: m.user, expected: m.rangeState, new: new, distanceM: d, at: at))
            // The first decision only alerts when the member starts out of range.
            if m.rangeState == nil && new == .inRange { continue }
            let stale = now.seconds(since: l.fixAt) > config.groupStaleSeconds
            let data = Self.memberData(group, member: m.user, name: m.name, extra: [
                ("guide", .string(group.leader.rawValue)), ("distance_m", .number((d * 10).rounded() / 10)),
                ("range_m", .number(group.rangeM)), ("at", .string(at.rfc3339)), ("stale", .bool(stale)),
            ])
            for recipient in [group.leader] + members.map(\.user) {
                events.append(Event(type: new == .outOfRange ? .memberOutOfRange : .memberBackInRange, createdAt: now,
                                    recipient: recipient, beacon: group.beacon, data: data))
            }
        }
        return (transitions, events)
    }

    static func memberData(_ group: TrackedGroup, member: UserID, name: String, extra: [(String, JSONValue)]) -> JSONObject {
        GroupMemberEventData(group: group.id, beacon: group.beacon, name: group.name, member: member, memberName: name,
                             extra: JSONObject(extra)).json
    }
}
