package import DBeaconCore
package import DBeaconIndex
package import DBeaconStore

/// A beacon as one viewer may see it now: visible to them, with the relationships whose
/// targets are hidden from them left out and, for anyone but its owner, its `tour` stops
/// numbered 1, 2, 3… among those that remain (a gap would betray a hidden stop).
///
/// Only `VisibilityGate` makes one (its initializer is private to this file), and every encoder
/// of a beacon-derived answer takes one: handing an unredacted `Beacon` to an encoder does not
/// compile. Read its fields like a beacon's (`visible.name`, `visible.location`).
@dynamicMemberLookup
package struct VisibleBeacon: Sendable, Hashable {
    /// The beacon as presented to its viewer.
    package let beacon: Beacon

    fileprivate init(_ beacon: Beacon) { self.beacon = beacon }

    package subscript<T>(dynamicMember keyPath: KeyPath<Beacon, T>) -> T { beacon[keyPath: keyPath] }

    /// The same presented beacon with its perimeter filled in from the index's copy of it (a
    /// nearby answer whose formatted text could not be read); nothing else changes.
    package func withPerimeter(_ perimeter: Perimeter) -> VisibleBeacon {
        var b = beacon
        b.perimeter = perimeter
        return VisibleBeacon(b)
    }

    /// Whether its viewer has `access` to it (`Beacon.allows`).
    package func allows(_ access: BeaconAccess, to principal: Principal, at now: Timestamp) -> Bool {
        beacon.allows(access, to: principal, at: now)
    }

    /// `Beacon.authorize`: 403 with `reason` unless `principal` has `access`.
    package func authorize(_ access: BeaconAccess, by principal: Principal, at now: Timestamp,
                           otherwise reason: String) throws(DBeaconError) {
        try beacon.authorize(access, by: principal, at: now, otherwise: reason)
    }

    /// The same presented beacon with a follower more (the answer of a follow).
    package func followedOnceMore() -> VisibleBeacon {
        var b = beacon
        b.followersCount += 1
        return VisibleBeacon(b)
    }
}

/// The one way beacon data reaches an answer.
///
/// Every read that ends in an answer passes here: `present` decides with `VisibilityPolicy`
/// whether the viewer may see a beacon now (hidden and absent are the same: nil, or 404) and
/// redacts what it links to; `resolve` is how a write that names another beacon (a
/// relationship, a tour stop, a registry target, a saved promotion) looks it up, so a hidden
/// beacon and a missing one give the same answer.
///
/// It reads beacons from two places, and no other code reads beacons for an answer: the
/// coverage engine (`lookup`: the in-memory index or the store), for many at once, and the
/// store of record (`records`), where a single beacon's latest committed state matters (a read
/// by id, an edit's decision: on PostgreSQL another node's index may be a moment behind).
package struct VisibilityGate: Sendable {
    private let lookup: any CoverageEngine
    private let records: any BeaconStore
    private let clock: any WallClock

    package init(lookup: any CoverageEngine, records: any BeaconStore, clock: any WallClock) {
        self.lookup = lookup
        self.records = records
        self.clock = clock
    }

    /// Where a read looks beacons up.
    package enum Source: Sendable {
        /// The coverage engine (the in-memory index, kept in step with the store).
        case index
        /// The store of record: the latest committed state.
        case record
    }

    // MARK: Presenting

    /// The beacon as `viewer` may see it now, or nil when they may not see it.
    package func present(_ beacon: Beacon, to viewer: Principal) async throws -> VisibleBeacon? {
        try await present([beacon], to: viewer).first
    }

    /// The beacon as `viewer` may see it now; `notFound` (404, as for a missing beacon) otherwise.
    package func require(_ beacon: Beacon, to viewer: Principal) async throws -> VisibleBeacon {
        guard let visible = try await present(beacon, to: viewer) else { throw DBeaconError.notFound("beacon \(beacon.id)") }
        return visible
    }

    /// The beacons `viewer` may see now, in the order given, each redacted for them; the others
    /// are left out. One lookup serves all their relationship targets.
    package func present(_ beacons: [Beacon], to viewer: Principal) async throws -> [VisibleBeacon] {
        let now = clock.now()
        let shown = beacons.filter { $0.allows(.see, to: viewer, at: now) }
        guard !viewer.isAdmin else { return shown.map(VisibleBeacon.init) }
        let targets = Set(shown.flatMap { $0.relationships.map(\.target) })
        // Redacting reads the targets' visibility and locations, never their perimeters.
        let seen = try await resolve(Array(targets), for: viewer, perimeters: false)
        return shown.map { VisibleBeacon(Self.redact($0, seen: seen, for: viewer)) }
    }

    /// A beacon presented without any check, for tests that build answers from beacons they
    /// made. Behind an SPI: product code cannot call it without `@_spi(Testing) import`, which
    /// only the test target writes (the operator's view goes through `present` like anyone's).
    @_spi(Testing) public static func unchecked(_ beacon: Beacon) -> VisibleBeacon { VisibleBeacon(beacon) }

    /// The beacon with the relationships to targets outside `seen` removed, and its tour stops
    /// renumbered from 1 in their order for anyone but the owner; a tour is then located at its
    /// first stop the viewer may see (derived per viewer, never from a hidden stop).
    static func redact(_ beacon: Beacon, seen: [BeaconID: Beacon], for viewer: Principal) -> Beacon {
        let isOwner = viewer.userID == beacon.owner
        let hides = beacon.relationships.contains { seen[$0.target] == nil }
        let renumbers = !isOwner && beacon.relationships.contains { $0.type == ServiceKind.tourRelationship }
        guard hides || renumbers else { return beacon }
        var b = beacon
        var kept = beacon.relationships.filter { seen[$0.target] != nil }
        if renumbers {
            let stops = kept.indices.filter { kept[$0].type == ServiceKind.tourRelationship }
            let ordered = stops.sorted { (kept[$0].order ?? Int.max, $0) < (kept[$1].order ?? Int.max, $1) }
            for (n, i) in ordered.enumerated() { kept[i].order = n + 1 }
            if beacon.service == ServiceKind.tour, let first = ordered.first, let stop = seen[kept[first].target] {
                b.location = stop.location
            }
        }
        b.relationships = kept
        return b
    }

    // MARK: Reading, scoped by viewer

    /// The beacons among `ids` that `viewer` may see now, as they may see them, in the order of
    /// `ids` (missing and hidden ones left out alike). Services read beacons for answers here;
    /// unscoped reads are for the fence engine, the lifetime ticker and the index loader.
    package func beacons(_ ids: [BeaconID], for viewer: Principal, from source: Source = .index) async throws -> [VisibleBeacon] {
        guard !ids.isEmpty else { return [] }
        var byID: [BeaconID: Beacon] = [:]
        for b in try await read(ids, from: source, perimeters: true) { byID[b.id] = b }
        var seen = Set<BeaconID>()
        return try await present(ids.compactMap { seen.insert($0).inserted ? byID[$0] : nil }, to: viewer)
    }

    /// One beacon as `viewer` may see it now; `notFound` when it is missing or hidden.
    package func beacon(_ id: BeaconID, for viewer: Principal, from source: Source = .index) async throws -> VisibleBeacon {
        guard let b = try await beacons([id], for: viewer, from: source).first else { throw DBeaconError.notFound("beacon \(id)") }
        return b
    }

    /// The events among `events` that `user` may still read now (`Event.isReadable`, with each
    /// beacon's current state): someone who lost sight of a beacon reads only the notice of
    /// losing it. Their changed values are not redacted here (`BeaconService.redactingValues`).
    package func readable(_ events: [Event], for user: UserID) async throws -> [Event] {
        let ids = Set(events.compactMap(\.beacon))
        guard !ids.isEmpty else { return events }
        var current: [BeaconID: Beacon] = [:]
        for b in try await lookup.beacons(ids: Array(ids), perimeters: false) { current[b.id] = b }
        return events.filter { $0.isReadable(givenBeacon: $0.beacon.flatMap { current[$0] }) }
    }

    // MARK: Deciding

    /// The ids among `ids` of beacons `viewer` may see now.
    package func visibleIDs(_ ids: [BeaconID], to viewer: Principal) async throws -> Set<BeaconID> {
        Set(try await visible(ids, to: viewer, coveringNow: []))
    }

    /// The ids among `ids` that `viewer` may see now, in their order, where `coveringNow` are
    /// beacons the coverage engine found covering `viewer` a moment ago (a fix's lookup,
    /// `FixReport.coveringNow`): the engine admits a beacon only when the policy's `.cover`
    /// allows it to the viewer then, and `.cover` implies `.see` (`VisibilityPolicyTests`), so
    /// those are decided already; the others on what the rule reads of each.
    ///
    /// A fix's answer names some twenty beacons, nearly all among the few tens covering the
    /// user: comparing ids (four words each) then costs less than hashing them into sets (9 µs
    /// of a fix at 1M beacons); larger lists go through a set.
    package func visible(_ ids: [BeaconID], to viewer: Principal, coveringNow: [BeaconID]) async throws -> [BeaconID] {
        guard !ids.isEmpty else { return [] }
        let covering = ids.count * coveringNow.count <= 4_096 ? nil : Set(coveringNow)
        var decided = [Bool](repeating: false, count: ids.count), rest: [BeaconID] = []
        for (i, id) in ids.enumerated() {
            if covering?.contains(id) ?? coveringNow.contains(id) { decided[i] = true } else { rest.append(id) }
        }
        guard !rest.isEmpty else { return ids }
        let now = clock.now()
        var allowed: [BeaconID] = []
        for (id, facts) in try await lookup.facts(ids: rest) where VisibilityPolicy.allows(.see, facts.subject, viewer: viewer, at: now) {
            allowed.append(id)
        }
        let seen = allowed.count * rest.count <= 4_096 ? nil : Set(allowed)
        return zip(ids, decided).compactMap { id, covered in
            covered || (seen?.contains(id) ?? allowed.contains(id)) ? id : nil
        }
    }

    /// A beacon named by `viewer` in a write (a relationship target, a tour stop, a registry
    /// target, a saved promotion), unredacted for the decision; nil when it is missing or hidden
    /// from them, which callers must answer alike.
    package func resolve(_ id: BeaconID, for viewer: Principal) async throws -> Beacon? {
        try await resolve([id], for: viewer)[id]
    }

    /// The beacon `viewer` acts on (an edit, a delete, content, a follow), unredacted for the
    /// decision and read from the store of record; `notFound` when it is missing or hidden from
    /// them, alike. What they may do with it is `.modify` and the like (`Beacon.authorize`).
    package func subject(_ id: BeaconID, for viewer: Principal) async throws -> Beacon {
        guard let beacon = try await records.beacon(id: id), beacon.allows(.see, to: viewer, at: clock.now()) else {
            throw DBeaconError.notFound("beacon \(id)")
        }
        return beacon
    }

    /// The version of each beacon among `ids` that `viewer` may see now (read without
    /// perimeters): whether something a viewer was given has changed since.
    package func versions(_ ids: [BeaconID], for viewer: Principal) async throws -> [BeaconID: Int] {
        try await decisions(ids, for: viewer).mapValues(\.version)
    }

    /// What decisions read (`BeaconFacts`: visibility, lifetime, version, moving with the
    /// owner) of the beacons among `ids` that `viewer` may see now (never for an answer).
    package func decisions(_ ids: [BeaconID], for viewer: Principal) async throws -> [BeaconID: BeaconFacts] {
        guard !ids.isEmpty else { return [:] }
        let now = clock.now()
        return try await lookup.facts(ids: ids).filter { VisibilityPolicy.allows(.see, $0.value.subject, viewer: viewer, at: now) }
    }

    /// `resolve` for many ids at once.
    package func resolve(_ ids: [BeaconID], for viewer: Principal) async throws -> [BeaconID: Beacon] {
        try await resolve(ids, for: viewer, perimeters: true)
    }

    /// `resolve`, reading the perimeters only with `perimeters` (the decision never needs them;
    /// a fix's answer names some twenty beacons, a third of them large polygons at 1M).
    private func resolve(_ ids: [BeaconID], for viewer: Principal, perimeters: Bool) async throws -> [BeaconID: Beacon] {
        guard !ids.isEmpty else { return [:] }
        let now = clock.now()
        var found: [BeaconID: Beacon] = [:]
        for b in try await lookup.beacons(ids: ids, perimeters: perimeters) where b.allows(.see, to: viewer, at: now) { found[b.id] = b }
        return found
    }

    private func read(_ ids: [BeaconID], from source: Source, perimeters: Bool) async throws -> [Beacon] {
        switch source {
        case .index: return try await lookup.beacons(ids: ids, perimeters: perimeters)
        case .record: return try await records.beacons(ids: ids)
        }
    }
}
