package import DBeaconCore
package import DBeaconIndex

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
package struct VisibilityGate: Sendable {
    /// Where beacons are looked up by id (the coverage engine: the in-memory index or the store).
    package let lookup: any CoverageEngine
    package let clock: any WallClock

    package init(lookup: any CoverageEngine, clock: any WallClock) {
        self.lookup = lookup
        self.clock = clock
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

    /// What the operator sees: everything, unredacted (the admin token, the CLI on the database
    /// file). Tests use it to build answers from beacons they made.
    package static func operatorView(_ beacon: Beacon) -> VisibleBeacon { VisibleBeacon(beacon) }

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
    package func beacons(_ ids: [BeaconID], for viewer: Principal) async throws -> [VisibleBeacon] {
        guard !ids.isEmpty else { return [] }
        var byID: [BeaconID: Beacon] = [:]
        for b in try await lookup.beacons(ids: ids) { byID[b.id] = b }
        var seen = Set<BeaconID>()
        return try await present(ids.compactMap { seen.insert($0).inserted ? byID[$0] : nil }, to: viewer)
    }

    /// One beacon as `viewer` may see it now; `notFound` when it is missing or hidden.
    package func beacon(_ id: BeaconID, for viewer: Principal) async throws -> VisibleBeacon {
        guard let b = try await beacons([id], for: viewer).first else { throw DBeaconError.notFound("beacon \(id)") }
        return b
    }

    // MARK: Deciding

    /// The ids among `ids` of beacons `viewer` may see now.
    package func visibleIDs(_ ids: [BeaconID], to viewer: Principal) async throws -> Set<BeaconID> {
        Set(try await resolve(ids, for: viewer, perimeters: false).keys)
    }

    /// A beacon named by `viewer` in a write (a relationship target, a tour stop, a registry
    /// target, a saved promotion), unredacted for the decision; nil when it is missing or hidden
    /// from them, which callers must answer alike.
    package func resolve(_ id: BeaconID, for viewer: Principal) async throws -> Beacon? {
        try await resolve([id], for: viewer)[id]
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
}
