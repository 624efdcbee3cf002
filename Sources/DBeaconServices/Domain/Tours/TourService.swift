package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
package import Logging

/// City tours (thesis 4.3.3). A tour is a beacon (service `tour`) with `tour` relationships
/// (with `order`) to its places, each a beacon (service `place`) with its own discovery
/// perimeter and content. Tours are found through their places; followers' progress comes
/// from the fence engine's `beacon.entered` events for the places (`LocationListener`); media
/// shared by visitors at a place is seen only by those inside it.
package struct TourService: LocationListener {
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
    package static let maxStops = 200

    // MARK: Creating

    /// Creates a tour owned by the caller: its new places and the tour beacon (ordered `tour`
    /// relationships to every stop) in one transaction. Without a perimeter the tour's is a
    /// circle around the first stop that covers every stop.
    package func create(_ draft: TourDraft, by principal: Principal) async throws -> TourView {
        guard let owner = principal.userID else { throw DBeaconError.forbidden("tours are created by users; the admin token cannot own one") }
        if let members = draft.members { try await store.checkUsersExist(members, path: draft.membersPath) }
        guard !draft.stops.isEmpty else { throw DBeaconError.invalid("stops", "a tour needs at least one stop", code: "missing_field") }
        guard draft.stops.count <= Self.maxStops else {
            throw DBeaconError.invalid("stops", "at most \(Self.maxStops) stops", code: "too_many")
        }
        var tags = [ServiceKind.tour]
        for t in draft.tags where !tags.contains(t) { tags.append(t) }
        let now = clock.now()
        var (newPlaces, stops) = try await resolve(draft.stops, owner: owner, lifetime: draft.lifetime, members: draft.members,
                                                  by: principal, at: now)
        stops.sort { $0.order < $1.order }
        // The tour's place and default circle come from the stops everyone who may see the tour
        // may see too: a stop hidden from some of them must not shape what they are shown.
        let shaping = Self.shapingStops(stops.map(\.beacon), owner: owner, members: draft.members, lifetime: draft.lifetime)
        let perimeter = draft.perimeter ?? coveringCircle(shaping)
        let tour = Beacon(
            id: .generate(), name: draft.name, description: draft.description, owner: owner, location: shaping[0].location,
            perimeter: perimeter, lifetime: draft.lifetime, members: draft.members, tags: Array(tags.prefix(BeaconLimits.maxTags)),
            relationships: stops.map { Relationship(type: "tour", target: $0.beacon.id, order: $0.order) },
            content: draft.content, service: ServiceKind.tour, createdAt: now, updatedAt: now)
        try await beacons.checkQuota(owner, adding: newPlaces.count + 1)
        try await store.insertBeacons(newPlaces + [tour])
        return try await view(tour.id, by: principal)
    }

    /// The stops that may shape a tour's location and default circle: those at least as visible
    /// as the tour (public, or shared with every member, and without a lifetime of their own
    /// other than the tour's); all of them when none is.
    static func shapingStops(_ stops: [Beacon], owner: UserID, members: [UserID]?, lifetime: Lifetime?) -> [Beacon] {
        let audience = members.map { Set($0 + [owner]) }
        let open = stops.filter { stop in
            let shared: Bool
            if let stopMembers = stop.members {
                guard let audience else { return false }
                shared = audience.isSubset(of: Set(stopMembers + [stop.owner]))
            } else {
                shared = true
            }
            return shared && (stop.lifetime == nil || stop.lifetime == lifetime)
        }
        return open.isEmpty ? stops : open
    }

    /// A circle around the first stop reaching every stop's location and perimeter.
    private func coveringCircle(_ stops: [Beacon]) -> Perimeter {
        let center = stops[0].location
        var radius = BeaconLimits.defaultRadiusM
        for s in stops {
            let extent: Double
            switch s.perimeter {
            case .circle(let r): extent = Geodesy.distance(center, s.location) + r
            default: extent = s.perimeter.polygons.flatMap(\.exterior).map { Geodesy.distance(center, $0) }.max() ?? 0
            }
            radius = max(radius, extent)
        }
        return .circle(radiusM: min(radius.rounded(.up), beacons.limits.maxRadiusM))
    }

    /// The stops of a tour: new places (owned by `owner`, with the tour's lifetime and
    /// members) and existing beacons the caller may see; no beacon twice.
    private func resolve(_ drafts: [TourStopDraft], owner: UserID, lifetime: Lifetime?, members: [UserID]?, by principal: Principal,
                         at now: Timestamp) async throws -> (newPlaces: [Beacon], stops: [(order: Int, beacon: Beacon, path: String)]) {
        var newPlaces: [Beacon] = []
        var stops: [(order: Int, beacon: Beacon, path: String)] = []
        var existing: [(Int, BeaconID, String)] = []
        for stop in drafts {
            switch stop {
            case .existing(let id, let order, let path):
                existing.append((order, id, path))
            case .place(let p):
                var placeTags = [ServiceKind.place]
                for t in p.tags where !placeTags.contains(t) { placeTags.append(t) }
                let place = Beacon(
                    id: .generate(), name: p.name, description: p.description, owner: owner, location: p.location,
                    perimeter: p.perimeter ?? .circle(radiusM: BeaconLimits.defaultRadiusM),
                    lifetime: lifetime, members: members, tags: Array(placeTags.prefix(BeaconLimits.maxTags)),
                    content: p.content, service: ServiceKind.place, createdAt: now, updatedAt: now)
                newPlaces.append(place)
                stops.append((p.order, place, p.path))
            }
        }
        if !existing.isEmpty {
            let found = try await beacons.gate.resolve(existing.map(\.1), for: principal)
            for (order, id, path) in existing {
                guard let b = found[id] else { throw DBeaconError.invalid(path, "beacon \(id) not found", code: "unknown_target") }
                stops.append((order, b, path))
            }
        }
        var seen = Set<BeaconID>()
        for s in stops where !seen.insert(s.beacon.id).inserted {
            throw DBeaconError.invalid(s.path, "beacon \(s.beacon.id) is already a stop of this tour", code: "duplicate")
        }
        stops.sort { $0.order < $1.order }
        return (newPlaces, stops)
    }

    // MARK: Changing the stops

    /// Replaces a tour's stops (the owner only): add places or existing beacons, remove stops,
    /// reorder them; the tour's other relationships stay. Places taken off the tour remain
    /// beacons of their own. Followers hear `beacon.updated` (`relationships`); progress is kept
    /// for the stops that remain. `ifMatch` is checked before anything is written.
    package func setStops(_ id: BeaconID, stops drafts: [TourStopDraft], ifMatch: Set<Int>?,
                          by principal: Principal) async throws -> TourView {
        guard let owner = principal.userID else { throw DBeaconError.forbidden("only the tour's owner changes its stops") }
        let current = try await tour(id, by: principal).beacon // the owner's: unredacted
        guard current.owner == owner else { throw DBeaconError.forbidden("only the tour's owner changes its stops") }
        guard !drafts.isEmpty else { throw DBeaconError.invalid("stops", "a tour needs at least one stop", code: "missing_field") }
        guard drafts.count <= Self.maxStops else { throw DBeaconError.invalid("stops", "at most \(Self.maxStops) stops", code: "too_many") }
        let (newPlaces, stops) = try await resolve(drafts, owner: owner, lifetime: current.lifetime, members: current.members,
                                                   by: principal, at: clock.now())
        if let ifMatch, !ifMatch.contains(current.version) {
            throw DBeaconError(.preconditionFailed, code: "version_mismatch", message: "the tour is at version \(current.version)")
        }
        try await beacons.checkQuota(owner, adding: newPlaces.count)
        if !newPlaces.isEmpty { try await store.insertBeacons(newPlaces) }
        let relationships = stops.map { Relationship(type: "tour", target: $0.beacon.id, order: $0.order) }
        _ = try await beacons.update(id, ifMatch: ifMatch, by: principal) { beacon in
            var draft = BeaconDraft(beacon)
            draft.relationships = beacon.relationships.filter { $0.type != "tour" } + relationships
            return draft
        }
        return try await view(id, by: principal)
    }

    // MARK: Reading

    /// The tour if the caller may see it; 404 for anything else (including non-tours).
    package func tour(_ id: BeaconID, by principal: Principal) async throws -> VisibleBeacon {
        let beacon = try await beacons.get(id, by: principal)
        guard beacon.service == ServiceKind.tour else { throw DBeaconError.notFound("tour \(id)") }
        return beacon
    }

    /// The tour's stops the caller can see, in order.
    package func stops(of tour: VisibleBeacon, by principal: Principal) async throws -> [TourStop] {
        let related = try await beacons.related(tour.id, type: "tour", by: principal)
        return related.enumerated().map { i, pair in TourStop(order: pair.1.order ?? i + 1, place: pair.0) }
    }

    package func view(_ id: BeaconID, by principal: Principal) async throws -> TourView {
        let tour = try await tour(id, by: principal)
        let stops = try await stops(of: tour, by: principal)
        var progress: TourProgress?
        if let uid = principal.userID { progress = try await self.progress(tour, stops: stops, user: uid) }
        return TourView(tour: tour, stops: stops, progress: progress)
    }

    /// Tours with a stop whose perimeter covers the point (visible to the caller and alive at
    /// `at`), nearest matching stop first.
    package func nearby(point: Position, tags: [String], at: Timestamp?, limit: Int, by principal: Principal) async throws -> [NearbyTour] {
        let now = clock.now()
        let when = at ?? now
        // `at` narrows only: places and tours not the caller's must be visible now as well.
        let covering = try await beacons.gate.present(
            try await beacons.engine.covering(CoverQuery(point: point, at: when, viewer: principal, now: now)), to: principal)
        guard !covering.isEmpty else { return [] }
        var coveringByID: [BeaconID: VisibleBeacon] = [:]
        for b in covering { coveringByID[b.id] = b }
        let tourIDs = try await store.tours(withStops: covering.map(\.id))
        var found: [NearbyTour] = []
        for tour in try await beacons.gate.beacons(tourIDs, for: principal)
        where tour.service == ServiceKind.tour && tour.beacon.isAlive(at: when)
            && (tags.isEmpty || tour.tags.contains(where: tags.contains)) {
            // The tour's relationships as the caller sees them: hidden stops gone, orders renumbered.
            let links = tour.relationships.enumerated().filter { $0.element.type == ServiceKind.tourRelationship }
            let matched = links.compactMap { i, link -> (stop: TourStop, distanceM: Double)? in
                guard let place = coveringByID[link.target] else { return nil }
                return (TourStop(order: link.order ?? i + 1, place: place), Geodesy.distance(point, place.location))
            }.sorted { $0.distanceM < $1.distanceM }
            guard !matched.isEmpty else { continue }
            let (d, bearing) = Geodesy.inverse(from: point, to: tour.location)
            found.append(NearbyTour(result: NearbyResult(beacon: tour, distanceM: d, bearingDeg: bearing), matched: matched))
        }
        found.sort {
            let a = $0.matched[0].distanceM, b = $1.matched[0].distanceM
            return a != b ? a < b : $0.result.beacon.id < $1.result.beacon.id
        }
        return Array(found.prefix(limit))
    }

    /// The stops after `from` (all of them when nil) with distance and direction from
    /// `origin`, else from the `from` stop. `from` must be a visible stop of the tour (422).
    package func next(_ id: BeaconID, from: BeaconID?, origin: Position?, by principal: Principal) async throws -> TourNext {
        let tour = try await tour(id, by: principal)
        let stops = try await stops(of: tour, by: principal)
        var following = stops[...]
        var start = origin
        if let from {
            guard let i = stops.firstIndex(where: { $0.place.id == from }) else {
                throw DBeaconError.invalid("from", "\(from) is not a stop of this tour", code: "unknown_stop")
            }
            following = stops[(i + 1)...]
            if start == nil { start = stops[i].place.location }
        }
        let legs = following.map { stop -> TourLeg in
            guard let start else { return TourLeg(stop: stop) }
            let (d, bearing) = Geodesy.inverse(from: start, to: stop.place.location)
            return TourLeg(stop: stop, distanceM: d, bearingDeg: bearing)
        }
        return TourNext(tour: tour, from: from, origin: start, following: legs)
    }

    // MARK: Following and progress

    /// Starts following a tour: from now on entering its places counts as visiting them.
    package func follow(_ id: BeaconID, by principal: Principal) async throws -> (TourProgress, Bool) {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can follow tours") }
        let tour = try await tour(id, by: principal)
        let existing = try await store.tourStart(id, user: uid)
        _ = try await store.followTour(id, user: uid, at: clock.now())
        let stops = try await stops(of: tour, by: principal)
        guard let progress = try await progress(tour, stops: stops, user: uid) else {
            throw DBeaconError.internalError("tour progress missing after following")
        }
        return (progress, existing == nil)
    }

    package func unfollow(_ id: BeaconID, by principal: Principal) async throws {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users can follow tours") }
        if try await store.unfollowTour(id, user: uid) { return }
        _ = try await tour(id, by: principal)
        throw DBeaconError.conflict("you do not follow this tour", code: "not_following")
    }

    package func progress(_ id: BeaconID, by principal: Principal) async throws -> TourProgress {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users follow tours") }
        let tour = try await tour(id, by: principal)
        guard let progress = try await progress(tour, stops: try await stops(of: tour, by: principal), user: uid) else {
            throw DBeaconError.conflict("you do not follow this tour; POST /v1/tours/\(id)/follow first", code: "not_following")
        }
        return progress
    }

    private func progress(_ tour: VisibleBeacon, stops: [TourStop], user: UserID) async throws -> TourProgress? {
        guard let started = try await store.tourStart(tour.id, user: user) else { return nil }
        var visitedAt: [BeaconID: Timestamp] = [:]
        for v in try await store.tourVisits(tour.id, user: user) { visitedAt[v.place] = v.visitedAt }
        let visited = stops.compactMap { s in visitedAt[s.place.id].map { (stop: s, at: $0) } }
        return TourProgress(startedAt: started, visited: visited, next: stops.first { visitedAt[$0.place.id] == nil },
                            total: stops.count)
    }

    /// Records visits of followed tours' stops from the user's `beacon.entered` events.
    package func locationAccepted(_ location: UserLocation, events: [Event]) async -> [Event] {
        let entered = events.filter { $0.type == .entered && $0.recipient == location.user }
        guard !entered.isEmpty else { return [] }
        do {
            var at: [BeaconID: Timestamp] = [:]
            for e in entered {
                guard let b = e.beacon, at[b] == nil else { continue }
                at[b] = e.occurredAt ?? location.fixAt
            }
            let followed = try await store.followedTours(user: location.user, containing: Array(at.keys))
            let visits = followed.compactMap { f -> TourVisit? in
                guard let when = at[f.place], when >= f.since else { return nil }
                return TourVisit(tour: f.tour, user: location.user, place: f.place, visitedAt: when)
            }
            try await store.recordVisits(visits)
        } catch {
            logger.error("tour progress update failed", metadata: ["user": "\(location.user)", "error": "\(error)"])
        }
        return []
    }

    // MARK: Media at places

    /// A visible place (a `place` beacon or a stop of a tour the caller may see), for sharing
    /// media. A tour hidden from the caller makes nothing a place for them.
    private func place(_ id: BeaconID, by principal: Principal) async throws -> Beacon {
        let beacon = try await beacons.gate.subject(id, for: principal)
        if beacon.service == ServiceKind.place { return beacon }
        let tours = try await store.tours(withStops: [id])
        guard try await !beacons.gate.visibleIDs(tours, to: principal).isEmpty else { throw DBeaconError.notFound("place \(id)") }
        return beacon
    }

    /// Whether the user's last fix (recent enough) lies inside the place's perimeter.
    private func isInside(_ user: UserID, _ place: Beacon) async throws -> Bool {
        guard let l = try await store.userLocations([user]).first,
              clock.now().seconds(since: l.fixAt) <= config.mediaFixMaxAgeSeconds else { return false }
        return PerimeterTester(location: place.location, perimeter: place.perimeter).covers(l.position)
    }

    /// Shares a media reference at a place; only while the caller's last fix is inside it.
    package func shareMedia(_ id: BeaconID, content: ContentRef, by principal: Principal) async throws -> PlaceMedia {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("only users share media") }
        let place = try await place(id, by: principal)
        guard try await isInside(uid, place) else {
            throw DBeaconError(.forbidden, code: "not_at_place",
                               message: "share media at a place while your last location fix is inside its perimeter")
        }
        let now = clock.now()
        let media = PlaceMedia(id: .generate(), place: id, user: uid,
                               content: ContentRef(kind: content.kind, url: content.url, title: content.title, addedBy: uid, createdAt: now),
                               createdAt: now)
        try await store.addPlaceMedia(media)
        return media
    }

    /// Media shared at a place: for those inside it (and its owner, and the operator).
    package func media(_ id: BeaconID, limit: Int, after: Int64?, by principal: Principal) async throws -> Page<PlaceMedia> {
        let place = try await place(id, by: principal)
        if let uid = principal.userID, uid != place.owner, try await !isInside(uid, place) {
            throw DBeaconError(.forbidden, code: "not_at_place",
                               message: "media shared at a place is seen from inside its perimeter")
        }
        return try await store.placeMedia(id, limit: limit, after: after)
    }

    /// Deletes media shared at a place: its author or the place's owner (or the operator);
    /// 403 for others, 404 when the place or the media is not there for the caller.
    package func deleteMedia(_ id: BeaconID, media: MediaID, by principal: Principal) async throws {
        let place = try await place(id, by: principal)
        guard let item = try await store.placeMediaItem(media), item.place == id else { throw DBeaconError.notFound("media \(media)") }
        guard principal.isAdmin || principal.userID == item.user || principal.userID == place.owner else {
            throw DBeaconError.forbidden("only its author or the place's owner may delete this media")
        }
        _ = try await store.deletePlaceMedia(media)
    }
}
