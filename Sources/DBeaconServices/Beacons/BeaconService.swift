package import DBeaconCore
package import DBeaconGeo
package import DBeaconIndex
package import DBeaconStore

/// The beacon use cases: authorization, visibility and domain rules on top of the store.
///
/// Visibility is decided here for every read path with one rule (`Beacon.isVisible`): what the
/// caller may not see is reported as not found, never as forbidden.
package struct BeaconService: Sendable {
    let store: any DBeaconStore
    let engine: any CoverageEngine
    package let clock: any WallClock
    package let limits: GeoLimits
    /// The wire form of changed values in `beacon.updated` events (the API layer's encoder).
    package let valueEncoding: any BeaconValueEncoding
    /// Beacons one user may own; 0 means no limit.
    package var maxBeaconsPerUser = 0
    /// Visitors (other than the owner) two beacons must share before one is offered as
    /// `also_visited` of the other (`--also-visited-min-visitors`).
    package var minCoVisitors = VisitStats.defaultMinCoVisitors

    /// Times an edit without `If-Match` is applied again after a concurrent edit won.
    package static let editAttempts = 12
    /// Largest page for lists and nearby.
    package static let maxPageSize = 500
    package static let defaultPageSize = 50

    package init(store: any DBeaconStore, engine: any CoverageEngine, clock: any WallClock = SystemClock(),
                 limits: GeoLimits = .default, valueEncoding: any BeaconValueEncoding) {
        self.store = store
        self.engine = engine
        self.clock = clock
        self.limits = limits
        self.valueEncoding = valueEncoding
    }

    // MARK: Reading

    /// The one visibility gate, over this service's engine and clock.
    package var gate: VisibilityGate { VisibilityGate(lookup: engine, records: store, clock: clock) }

    /// The beacon as the principal may see it now (relationships to beacons hidden from them
    /// left out); `notFound` when they may not see it.
    package func get(_ id: BeaconID, by principal: Principal) async throws -> VisibleBeacon {
        try await gate.beacon(id, for: principal, from: .record)
    }

    /// `beacon` as `principal` may see it now (the gate); `notFound` when hidden.
    package func present(_ beacon: Beacon, to principal: Principal) async throws -> VisibleBeacon {
        try await gate.require(beacon, to: principal)
    }

    package func list(_ query: BeaconListQuery, by principal: Principal) async throws -> Page<VisibleBeacon> {
        let page = try await store.listBeacons(query, viewer: principal, now: clock.now())
        return Page(items: try await gate.present(page.items, to: principal), next: page.next)
    }

    /// Beacons whose perimeter covers `point`, visible to the caller, alive at `at`, nearest first.
    ///
    /// `at` only narrows what a caller sees: a beacon that is not theirs must also be visible
    /// now (CONTRACT.md), so asking about the future does not reveal a meeting before its start
    /// and asking about the past does not bring back an ended beacon.
    ///
    /// Without `perimeters` the results' polygon perimeters may be empty (the answer leaves them out).
    /// With `formattedPerimeters`, a perimeter the engine keeps as GeoJSON text comes as
    /// `NearbyResult.formattedPerimeter` and its beacon's perimeter is empty (for an answer that
    /// writes it, `NearbyEncoding`).
    package func nearby(point: Position, tags: [String], at: Timestamp?, limit: Int, service: String? = nil,
                        perimeters: Bool = true, formattedPerimeters: Bool = false,
                        by principal: Principal) async throws -> [NearbyResult] {
        let now = clock.now()
        var query = CoverQuery(point: point, tags: tags, at: at ?? now, viewer: principal, service: service, now: now)
        query.perimeters = perimeters
        var ranked: [RankedBeacon]
        var formatted: [BeaconID: any FormattedPerimeter] = [:]
        if perimeters && formattedPerimeters {
            let found = try await engine.coveringFormatted(query)
            ranked = Self.rank(found.map(\.beacon), from: point, limit: limit)
            for f in found { if let p = f.perimeter { formatted[f.beacon.id] = p } }
        } else {
            ranked = Self.rank(try await engine.covering(query), from: point, limit: limit)
        }
        return try await present(ranked, to: principal).map { r in
            var r = r
            r.formattedPerimeter = formatted[r.beacon.id]
            return r
        }
    }

    /// Ranked beacons through the gate: those `principal` may see now, as nearby results.
    package func present(_ ranked: [RankedBeacon], to principal: Principal) async throws -> [NearbyResult] {
        // The gate keeps the order it is given, leaving out what the caller may not see.
        let shown = try await gate.present(ranked.map(\.beacon), to: principal)
        var next = 0
        var moved = false
        let results = ranked.compactMap { r -> NearbyResult? in
            guard next < shown.count, shown[next].id == r.beacon.id else { return nil }
            let v = shown[next]
            next += 1
            guard v.location != r.beacon.location else { return NearbyResult(beacon: v, distanceM: r.distanceM, bearingDeg: r.bearingDeg) }
            // Located per viewer (a tour at its first stop they may see): measured again.
            moved = true
            let (d, bearing) = Geodesy.inverse(from: r.from, to: v.location)
            return NearbyResult(beacon: v, distanceM: d, bearingDeg: bearing)
        }
        guard moved else { return results }
        return results.sorted { $0.distanceM != $1.distanceM ? $0.distanceM < $1.distanceM : $0.beacon.id < $1.beacon.id }
    }

    /// An update event (`values.relationships`) as its recipient may read it now.
    package func redactingValues(of event: Event) async throws -> Event {
        guard let links = event.data["values"]?["relationships"]?.arrayValue, !links.isEmpty else { return event }
        let targets = links.compactMap { $0["target"]?.stringValue.flatMap(BeaconID.init) }
        let seen = try await gate.visibleIDs(targets, to: .user(event.recipient))
        let kept = links.filter { link in link["target"]?.stringValue.flatMap(BeaconID.init).map(seen.contains) ?? false }
        guard kept.count != links.count, var values = event.data["values"]?.objectValue else { return event }
        values["relationships"] = .array(kept)
        var e = event
        e.data["values"] = .object(values)
        return e
    }

    /// Nearest first (ties by id, so results are stable), at most `limit`.
    package static func rank(_ beacons: [Beacon], from point: Position, limit: Int) -> [RankedBeacon] {
        var results = preselect(beacons, from: point, limit: limit).map { b in
            let (d, bearing) = Geodesy.inverse(from: point, to: b.location)
            return RankedBeacon(beacon: b, from: point, distanceM: d, bearingDeg: bearing)
        }
        results.sort { $0.distanceM != $1.distanceM ? $0.distanceM < $1.distanceM : $0.beacon.id < $1.beacon.id }
        if results.count > limit { results.removeLast(results.count - limit) }
        return results
    }

    /// When there are many more beacons than `limit`, drops those that cannot be among the
    /// nearest `limit` before the (costlier) ellipsoidal distances are computed: a beacon whose
    /// flat-earth distance (error under 2e-5 below 20 km, see `Geodesy.approximateDistance`)
    /// exceeds the `limit`-th smallest by more than 1e-4 is farther than `limit` others on the
    /// ellipsoid too. Far beacons (beyond 15 km) are always kept.
    package static func preselect(_ beacons: [Beacon], from point: Position, limit: Int) -> [Beacon] {
        guard limit > 0, beacons.count / 2 > limit, abs(point.lat) < 75 else { return beacons }
        let approx = beacons.map { Geodesy.approximateDistance(point, $0.location) }
        var sorted = approx
        sorted.sort()
        let kth = sorted[limit - 1]
        guard kth < 15_000 else { return beacons }
        let threshold = kth * (1 + 1e-4) + 0.01
        var kept: [Beacon] = []
        kept.reserveCapacity(min(beacons.count, limit + 16))
        for (i, b) in beacons.enumerated() where approx[i] <= threshold || approx[i] > 15_000 { kept.append(b) }
        return kept
    }

    /// The beacons `id` links to (of `type`, if given) that the caller may see now, tour stops
    /// first in their order (renumbered by the gate for anyone but the owner), then the others
    /// as listed; each with its link as the caller sees it.
    package func related(_ id: BeaconID, type: String?, by principal: Principal) async throws -> [(VisibleBeacon, Relationship)] {
        let source = try await get(id, by: principal)
        let links = source.relationships.filter { type == nil || $0.type == type }
        var byID: [BeaconID: VisibleBeacon] = [:]
        for t in try await gate.beacons(links.map(\.target), for: principal) { byID[t.id] = t }
        let ordered = links.enumerated().sorted { a, b in
            switch (a.element.order, b.element.order) {
            case let (x?, y?) where x != y: return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            default: return a.offset < b.offset
            }
        }
        return ordered.compactMap { link in byID[link.element.target].map { ($0, link.element) } }
    }

    package func directions(to id: BeaconID, from point: Position, by principal: Principal) async throws -> Directions {
        let beacon = try await get(id, by: principal)
        let (d, bearing) = Geodesy.inverse(from: point, to: beacon.location)
        return Directions(beacon: beacon, distanceM: d, bearingDeg: bearing)
    }

    // MARK: Writing

    /// Creates a beacon owned by the calling user.
    ///
    /// A client-chosen id must lie in the caller's namespace (`BeaconID.namespace(of:)`):
    /// otherwise "409, taken" against "201, created" would tell anyone whether a private beacon
    /// with a guessable id exists. Outside the namespace the answer is the same 422 whether
    /// the id is free or not; inside it, only the caller's own beacons can collide.
    package func create(_ draft: BeaconDraft, by principal: Principal, service: String? = nil) async throws -> Beacon {
        guard let owner = principal.userID else {
            throw DBeaconError.forbidden("beacons are owned by users; the admin token cannot own one (create a user first)")
        }
        if draft.claimedService != nil {
            throw DBeaconError.invalid("properties.service", "service is set by the service that manages a beacon; create meetings, "
                                       + "groups, tours and promotions through /v1/meetings, /v1/groups, /v1/tours and /v1/promotions",
                                       code: "read_only")
        }
        if let id = draft.id, !id.isInNamespace(of: owner) {
            let prefix = BeaconID.namespace(of: owner)
            throw DBeaconError.invalid("id", "a client-chosen id must start with \(prefix) (your namespace), e.g. \(prefix)lunch; "
                                       + "leave id out to get a generated one", code: "id_outside_namespace")
        }
        return try await create(draft, owner: owner, service: service)
    }

    /// Creates a beacon for `owner` (used by the CLI on the local database and by services).
    package func create(_ draft: BeaconDraft, owner: UserID, service: String? = nil) async throws -> Beacon {
        if let claimed = draft.claimedOwner, claimed != owner.rawValue {
            throw DBeaconError.invalid("properties.owner", "owner is set by the server to the creating user", code: "read_only")
        }
        let id = draft.id ?? .generate()
        try await checkQuota(owner, adding: 1)
        try await checkRelationships(draft.relationships, source: id, owner: .user(owner))
        let now = clock.now()
        let beacon = Beacon(
            id: id, name: draft.name, description: draft.description, owner: owner, location: draft.location,
            perimeter: draft.perimeter, lifetime: draft.lifetime, members: draft.members, tags: draft.tags,
            relationships: draft.relationships, content: draft.content, tracksOwner: draft.tracksOwner, contentPolicy: draft.contentPolicy,
            service: service, followersCount: 0, version: 1, createdAt: now, updatedAt: now)
        try await store.insertBeacon(beacon, events: Self.invitationEvents(before: nil, after: beacon, at: now)
                                         + (try await categoryEvents(for: beacon, at: now)))
        return beacon
    }

    /// Refuses (429 `beacon_quota_exceeded`) beacons beyond `maxBeaconsPerUser`. A check before
    /// the insert, not a lock: concurrent creations may overshoot by a few, which a quota allows.
    package func checkQuota(_ owner: UserID, adding count: Int) async throws {
        guard maxBeaconsPerUser > 0 else { return }
        let owned = try await store.beaconCount(owner: owner)
        guard owned + count <= maxBeaconsPerUser else {
            throw DBeaconError.tooManyRequests("a user may own at most \(maxBeaconsPerUser) beacons (you own \(owned)); "
                                               + "delete some first", code: "beacon_quota_exceeded", retryAfter: nil)
        }
    }

    /// `meeting.invited` for users added to a private meeting's invitees and `meeting.uninvited`
    /// for those taken off (a meeting made public un-invites nobody). Written with the change.
    package static func invitationEvents(before: Beacon?, after: Beacon, at now: Timestamp) -> [Event] {
        guard after.service == ServiceKind.meeting else { return [] }
        let old = Set(before?.members ?? []), new = after.members.map(Set.init)
        var events: [Event] = []
        func data(_ b: Beacon) -> JSONObject {
            JSONObject([
                ("beacon", .string(b.id.rawValue)), ("meeting", .string(b.id.rawValue)), ("name", .string(b.name)),
                ("organizer", .string(b.owner.rawValue)),
                ("start", .optional(b.lifetime?.start?.rfc3339)), ("end", .optional(b.lifetime?.end?.rfc3339)),
            ])
        }
        for user in (after.members ?? []) where !old.contains(user) && user != after.owner {
            events.append(Event(type: .meetingInvited, createdAt: now, recipient: user, beacon: after.id, data: data(after)))
        }
        if let new, let before {
            // Those taken off hear of the meeting as they last saw it: nothing set in the same
            // edit (a new name, a new end) reaches them.
            for user in (before.members ?? []) where !new.contains(user) && user != after.owner {
                events.append(Event(type: .meetingUninvited, createdAt: now, recipient: user, beacon: after.id, data: data(before)))
            }
        }
        return events
    }

    /// Relationship targets must be beacons the author may see now (through the gate: a hidden
    /// target is answered as a missing one, 422 `unknown_target`); a beacon cannot point to
    /// itself. `alsoKnown`: ids that are valid targets besides (the other beacons of an import).
    private func checkRelationships(_ relationships: [Relationship], source: BeaconID, owner: Principal,
                                    alsoKnown: Set<BeaconID> = [], path: String = "") async throws {
        guard !relationships.isEmpty else { return }
        let outside = relationships.map(\.target).filter { !alsoKnown.contains($0) && $0 != source }
        let visible = try await gate.resolve(outside, for: owner)
        for (i, r) in relationships.enumerated() {
            if r.target == source {
                throw DBeaconError.invalid(path + "properties.relationships[\(i)].target", "a beacon cannot relate to itself",
                                           code: "invalid_target")
            }
            if !alsoKnown.contains(r.target) && visible[r.target] == nil {
                throw DBeaconError.invalid(path + "properties.relationships[\(i)].target", "beacon \(r.target) not found",
                                           code: "unknown_target")
            }
        }
    }

    /// Edits a beacon: `change` turns its current state into what it should become (a merge
    /// patch of its Feature, a meeting's changes); it may throw 422 for invalid input. Only the
    /// owner may edit; with `ifMatch` the edit applies only to those versions (412 otherwise).
    /// Without it, a concurrent edit is merged by applying `change` again to the newer version.
    package func update(_ id: BeaconID, ifMatch: Set<Int>?, by principal: Principal,
                        change: @Sendable (Beacon) throws -> BeaconDraft) async throws -> (Beacon, [String]) {
        for attempt in 0..<Self.editAttempts {
            let current = try await gate.subject(id, for: principal)
            guard principal.userID == current.owner else {
                throw DBeaconError.forbidden("only the owner may edit this beacon")
            }
            // An invalid change is 422 whatever the version; only a valid one meets If-Match.
            let updated = try await applying(try change(current), to: current)
            if let ifMatch, !ifMatch.contains(current.version) {
                throw DBeaconError(.preconditionFailed, code: "version_mismatch",
                                   message: "the beacon is at version \(current.version), not \(Self.describe(ifMatch))")
            }
            let changed = Self.changedFields(current, updated)
            if changed.isEmpty { return (current, []) }
            do {
                var stored = updated
                stored.followersCount = try await store.updateBeacon(
                    updated, expectedVersion: current.version, fanOut: updatedFanOut(updated, changed: changed, at: updated.updatedAt),
                    events: Self.invitationEvents(before: current, after: updated, at: updated.updatedAt))
                return (stored, changed)
            } catch let error as DBeaconError where error.kind == .preconditionFailed && ifMatch == nil {
                // Without If-Match a concurrent edit is merged: the change is applied again to
                // the newer version (after a short random pause, so racing editors spread out);
                // past the retries, 409 `edit_conflict`, never the 412 the caller did not ask for.
                if attempt < Self.editAttempts - 1 {
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 << min(attempt, 4)))))
                }
                continue
            }
        }
        throw DBeaconError(.conflict, code: "edit_conflict", message: "the beacon changed too often while editing; retry")
    }

    /// The beacon `draft` describes, as the next version of `current`: server-owned members
    /// may only repeat their values, relationships must reach beacons the owner may see.
    private func applying(_ draft: BeaconDraft, to current: Beacon) async throws -> Beacon {
        if let id = draft.id, id != current.id {
            throw DBeaconError.invalid("id", "a beacon's id cannot change", code: "read_only")
        }
        if draft.claimedOwner != current.owner.rawValue {
            throw DBeaconError.invalid("properties.owner", "owner is set by the server and cannot change", code: "read_only")
        }
        if draft.claimedService != current.service {
            throw DBeaconError.invalid("properties.service", "service is set by the service that manages the beacon and cannot change",
                                       code: "read_only")
        }
        if draft.relationships != current.relationships {
            try await checkRelationships(draft.relationships, source: current.id, owner: .user(current.owner))
        }
        var updated = current
        updated.name = draft.name
        updated.description = draft.description
        updated.location = draft.location
        updated.perimeter = draft.perimeter
        updated.lifetime = draft.lifetime
        updated.members = draft.members
        updated.tags = draft.tags
        updated.relationships = draft.relationships
        updated.content = draft.content
        updated.tracksOwner = draft.tracksOwner
        updated.contentPolicy = draft.contentPolicy
        updated.version = current.version + 1
        updated.updatedAt = clock.now()
        return updated
    }

    /// `beacon.updated` for followers: which fields changed and their new values.
    package func updatedFanOut(_ beacon: Beacon, changed: [String], at: Timestamp) -> FollowerFanOut {
        if beacon.service == ServiceKind.meeting {
            // Attendees hear of every change as `meeting.updated`, even when a time shift moves
            // the meeting out of its lifetime for now (they stay owner-or-member checked).
            return FollowerFanOut(type: .meetingUpdated, data: updatedData(beacon, changed: changed), at: at, requireAlive: false)
        }
        return FollowerFanOut(type: .updated, data: updatedData(beacon, changed: changed), at: at, requireAlive: true)
    }

    /// `{"beacon","name","version","changed":[…],"values":{field: new value}}`.
    package func updatedData(_ beacon: Beacon, changed: [String]) -> JSONObject {
        let values = valueEncoding.values(of: beacon, fields: changed)
        return JSONObject([
            ("beacon", .string(beacon.id.rawValue)), ("name", .string(beacon.name)), ("version", .int(beacon.version)),
            ("changed", .array(changed.map(JSONValue.string))), ("values", .object(values)),
        ])
    }

    /// Names of the Feature members that differ (`name`, `perimeter`, `location`, …).
    package static func changedFields(_ a: Beacon, _ b: Beacon) -> [String] {
        var fields: [String] = []
        if a.name != b.name { fields.append("name") }
        if a.description != b.description { fields.append("description") }
        if a.location != b.location { fields.append("location") }
        if a.perimeter != b.perimeter { fields.append("perimeter") }
        if a.lifetime != b.lifetime { fields.append("lifetime") }
        if a.members != b.members { fields.append("visibility") }
        if a.tags != b.tags { fields.append("tags") }
        if a.relationships != b.relationships { fields.append("relationships") }
        if a.content != b.content { fields.append("content") }
        if a.tracksOwner != b.tracksOwner { fields.append("tracks_owner") }
        if a.contentPolicy != b.contentPolicy { fields.append("content_policy") }
        return fields
    }

    /// The versions of an `If-Match` for messages (`3`, `3 or 4`, `none this server issued`).
    package static func describe(_ versions: Set<Int>) -> String {
        versions.isEmpty ? "one named by If-Match (it names none this server issued)"
            : versions.sorted().map(String.init).joined(separator: " or ")
    }

    /// Deletes a beacon (owner, or the operator for moderation).
    package func delete(_ id: BeaconID, ifMatch: Set<Int>?, by principal: Principal) async throws -> Beacon {
        let current = try await gate.subject(id, for: principal)
        try current.authorize(.modify, by: principal, at: clock.now(), otherwise: "only the owner may delete this beacon")
        let type: EventType = current.service == ServiceKind.meeting ? .meetingCancelled : .deleted
        let fanOut = FollowerFanOut(type: type, data: ["beacon": .string(id.rawValue), "name": .string(current.name)],
                                    at: clock.now(), requireAlive: false)
        if let ifMatch, !ifMatch.contains(current.version) {
            throw DBeaconError(.preconditionFailed, code: "version_mismatch",
                               message: "the beacon is at version \(current.version), not \(Self.describe(ifMatch)); fetch it again and retry")
        }
        try await store.deleteBeacon(id: id, expectedVersion: current.version, fanOut: fanOut)
        return current
    }

    /// Adds a content reference (owner only) and returns the updated beacon.
    /// Adds a content reference: the owner always; others as the beacon's `content_policy`
    /// allows (`followers`: those who follow it; `anyone`: whoever may see it).
    package func addContent(_ id: BeaconID, _ content: ContentRef, by principal: Principal) async throws -> VisibleBeacon {
        let current = try await gate.subject(id, for: principal)
        guard let uid = principal.userID else { throw DBeaconError.forbidden("content is added by users") }
        switch current.contentPolicy {
        case _ where uid == current.owner, .anyone:
            break
        case .followers:
            guard try await store.isFollowing(beacon: id, user: uid) else {
                throw DBeaconError.forbidden("only followers may add content to this beacon (content_policy followers): follow it first")
            }
        case .owner:
            throw DBeaconError.forbidden("only the owner may add content to this beacon (content_policy owner)")
        }
        return try await present(try await appendContent(content, to: current, by: uid), to: principal)
    }

    /// Deletes the content item at `index` (0-based): the owner moderates any item, an author
    /// may delete their own; 404 when there is no such item.
    package func removeContent(_ id: BeaconID, at index: Int, by principal: Principal) async throws -> VisibleBeacon {
        let current = try await gate.subject(id, for: principal)
        guard current.content.indices.contains(index) else { throw DBeaconError.notFound("content item \(index) of beacon \(id)") }
        let item = current.content[index]
        guard current.allows(.modify, to: principal, at: clock.now()) || (item.addedBy != nil && principal.userID == item.addedBy) else {
            throw DBeaconError.forbidden("only the owner or the item's author may delete this content")
        }
        var updated = current
        updated.content.remove(at: index)
        updated.version += 1
        updated.updatedAt = clock.now()
        try await store.updateBeacon(updated, expectedVersion: current.version,
                                     fanOut: updatedFanOut(updated, changed: ["content"], at: updated.updatedAt))
        return try await present(updated, to: principal)
    }

    /// Appends content on behalf of `uid` (the owner, or a visitor where a service allows it).
    package func appendContent(_ content: ContentRef, to current: Beacon, by uid: UserID) async throws -> Beacon {
        guard current.content.count < BeaconLimits.maxContent else {
            throw DBeaconError.invalid("content", "a beacon holds at most \(BeaconLimits.maxContent) content references", code: "too_many")
        }
        var item = content
        item.addedBy = uid
        item.createdAt = clock.now()
        var updated = current
        updated.content.append(item)
        updated.version += 1
        updated.updatedAt = clock.now()
        try await store.updateBeacon(updated, expectedVersion: current.version,
                                     fanOut: updatedFanOut(updated, changed: ["content"], at: updated.updatedAt))
        return updated
    }

    // MARK: Followers

    /// The caller follows a visible beacon; returns whether this created the subscription.
    package func follow(_ id: BeaconID, by principal: Principal) async throws -> (VisibleBeacon, Bool) {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can follow beacons") }
        let beacon = try await get(id, by: principal)
        let created = try await store.follow(beacon: id, user: uid, at: clock.now())
        return (created ? beacon.followedOnceMore() : beacon, created)
    }

    /// The caller stops following. Someone who follows may always unfollow, even after losing
    /// sight of the beacon; otherwise the beacon must be visible (404 hides it).
    package func unfollow(_ id: BeaconID, by principal: Principal) async throws {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can follow beacons") }
        if try await store.unfollow(beacon: id, user: uid) { return }
        _ = try await get(id, by: principal)
    }

    /// Followers of a beacon: its owner only.
    package func followers(of id: BeaconID, limit: Int, after: Int64?, by principal: Principal) async throws -> Page<Follower> {
        let beacon = try await get(id, by: principal)
        try beacon.authorize(.modify, by: principal, at: clock.now(), otherwise: "only the owner may list the followers of this beacon")
        return try await store.followers(of: id, limit: limit, after: after)
    }
}

extension BeaconService {
    /// An import (`POST /v1/beacons/import`, `dbeacon import`) in one transaction: every item
    /// becomes a beacon, or none does. A user imports beacons they own, with client-chosen ids
    /// in their namespace and within their quota; the operator imports for `owner`, or for the
    /// users each item's `properties.owner` names (then `properties.service` is kept: the
    /// sample data). Relationships may point at beacons of the same import. Errors name the
    /// item (`features[3].properties.name`).
    package func importBeacons(_ items: [BeaconImportItem], by principal: Principal, owner: UserID?) async throws -> [Beacon] {
        if let user = principal.userID {
            if let owner, owner != user {
                throw DBeaconError.forbidden("a user imports beacons for themselves; only the admin token names another owner")
            }
            return try await insert(items, owner: user, ownersFromItems: false, namespaceOf: user)
        }
        if let owner, try await store.user(id: owner) == nil {
            throw DBeaconError.invalid("owner", "user \(owner) does not exist", code: "unknown_user")
        }
        return try await insert(items, owner: owner, ownersFromItems: owner == nil, namespaceOf: nil)
    }

    private func insert(_ items: [BeaconImportItem], owner: UserID?, ownersFromItems: Bool,
                        namespaceOf namespaceOwner: UserID?) async throws -> [Beacon] {
        let now = clock.now()
        var beacons: [Beacon] = []
        var ids = Set<BeaconID>()
        var knownUsers: [String: Bool] = [:]
        for item in items {
            let draft = item.draft
            do {
                var beaconOwner: UserID
                if ownersFromItems {
                    guard let claimed = draft.claimedOwner, let uid = UserID(claimed) else {
                        throw DBeaconError.invalid("properties.owner", "each feature needs the id of an existing user as owner", code: "missing_field")
                    }
                    if knownUsers[claimed] == nil { knownUsers[claimed] = try await store.user(id: uid) != nil }
                    guard knownUsers[claimed] == true else {
                        throw DBeaconError.invalid("properties.owner", "user \(claimed) does not exist", code: "unknown_user")
                    }
                    beaconOwner = uid
                } else {
                    guard let owner else { throw DBeaconError.internalError("import without an owner") }
                    if let claimed = draft.claimedOwner, claimed != owner.rawValue {
                        throw DBeaconError.invalid("properties.owner", "owner is set by the importer", code: "read_only")
                    }
                    if draft.claimedService != nil {
                        throw DBeaconError.invalid("properties.service", "service is set by the services, not by an import",
                                                   code: "read_only")
                    }
                    beaconOwner = owner
                }
                if let namespaceOwner, let id = draft.id, !id.isInNamespace(of: namespaceOwner) {
                    throw DBeaconError.invalid("id", "a client-chosen id must start with \(BeaconID.namespace(of: namespaceOwner))",
                                               code: "id_outside_namespace")
                }
                let id = draft.id ?? .generate()
                guard ids.insert(id).inserted else {
                    throw DBeaconError.conflict("duplicate id \(id) in the file", code: "duplicate_id", path: "id")
                }
                beacons.append(Beacon(
                    id: id, name: draft.name, description: draft.description, owner: beaconOwner, location: draft.location,
                    perimeter: draft.perimeter, lifetime: draft.lifetime, members: draft.members, tags: draft.tags,
                    relationships: draft.relationships, content: draft.content, tracksOwner: draft.tracksOwner, contentPolicy: draft.contentPolicy,
                    service: ownersFromItems ? draft.claimedService : nil, version: 1, createdAt: now, updatedAt: now))
            } catch var error as DBeaconError {
                error.path = item.path + (error.path ?? "")
                throw error
            }
        }
        if let namespaceOwner { try await checkQuota(namespaceOwner, adding: beacons.count) }
        // Targets outside the import go through the gate as each beacon's owner sees them now,
        // as for a single creation: a hidden target is 422 `unknown_target`, like a missing one.
        for (beacon, item) in zip(beacons, items) {
            try await checkRelationships(beacon.relationships, source: beacon.id, owner: .user(beacon.owner), alsoKnown: ids,
                                         path: item.path)
        }
        do {
            // An import is bulk work: bounded as such, not by a request's database deadline.
            try await DatabaseDeadline.$bulk.withValue(beacons.count > 100 ? .bulkWork : nil) { try await store.insertBeacons(beacons) }
        } catch var error as DBeaconError where error.path?.hasPrefix("properties.relationships") == true {
            error.message = "a relationship target does not exist: \(error.message)"
            throw error
        }
        return beacons
    }
}
