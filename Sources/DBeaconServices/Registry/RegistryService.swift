package import DBeaconCore
package import DBeaconStore

/// The shared registry of physical beacons: registration (owners of the digital beacon, or
/// the operator), listing, editing, and resolution of identities to digital beacons.
///
/// Visibility: an entry is visible exactly when its digital beacon is; what the caller may
/// not see is not found. Resolution picks, among the active entries matching an identity,
/// the most specific one (UUID+major+minor, then UUID+major, then UUID) *whose digital beacon
/// the caller may see*: a caller who cannot see a more specific entry gets the answer they
/// would get if it did not exist, so a 404 never betrays a hidden entry.
package struct RegistryService: Sendable {
    let store: any RegistryStore
    /// Visibility and presentation of the digital beacons entries stand for.
    package let beaconService: BeaconService
    private var beacons: any BeaconStore { beaconService.store }
    package var clock: any WallClock { beaconService.clock }

    package init(store: any RegistryStore, beacons: BeaconService) {
        self.store = store
        self.beaconService = beacons
    }

    // MARK: Writing

    /// Registers a physical beacon for a digital beacon the caller owns (or any, for the operator).
    package func register(_ draft: RegistryDraft, by principal: Principal) async throws -> RegistryEntry {
        let beacon = try await ownedBeacon(draft.beacon, by: principal, path: "beacon")
        let now = clock.now()
        let entry = RegistryEntry(id: .generate(), identity: draft.identity, beacon: beacon.id, owner: beacon.owner,
                                  position: draft.position, measuredPower: draft.measuredPower, status: draft.status,
                                  version: 1, createdAt: now, updatedAt: now)
        try await store.insertRegistryEntry(entry, conflictsVisibleTo: principal, now: now)
        return entry
    }

    /// Edits an entry (owner of its digital beacon, or the operator): `change` turns the current
    /// entry into its new fields. Moving it to another digital beacon needs ownership of that one too.
    package func update(_ id: RegistryID, ifMatch: Set<Int>?, by principal: Principal,
                        change: @Sendable (RegistryEntry) throws -> RegistryDraft) async throws -> RegistryEntry {
        let current = try await get(id, by: principal)
        guard principal.isAdmin || principal.userID == current.owner else {
            throw DBeaconError.forbidden("only the owner of the digital beacon may edit this registry entry")
        }
        // An invalid change is 422 whatever the version; only a valid one meets If-Match.
        let draft = try change(current)
        if let ifMatch, !ifMatch.contains(current.version) {
            throw DBeaconError(.preconditionFailed, code: "version_mismatch",
                               message: "the registry entry is at version \(current.version), not \(BeaconService.describe(ifMatch))")
        }
        var updated = current
        if draft.beacon != current.beacon {
            let target = try await ownedBeacon(draft.beacon, by: principal, path: "beacon")
            updated.owner = target.owner
        }
        updated.identity = draft.identity
        updated.beacon = draft.beacon
        updated.position = draft.position
        updated.measuredPower = draft.measuredPower
        updated.status = draft.status
        if updated == current { return current }
        updated.version = current.version + 1
        updated.updatedAt = clock.now()
        try await store.updateRegistryEntry(updated, expectedVersion: current.version, conflictsVisibleTo: principal, now: updated.updatedAt)
        return updated
    }

    package func delete(_ id: RegistryID, by principal: Principal) async throws {
        let current = try await get(id, by: principal)
        guard principal.isAdmin || principal.userID == current.owner else {
            throw DBeaconError.forbidden("only the owner of the digital beacon may delete this registry entry")
        }
        _ = try await store.deleteRegistryEntry(id: id)
    }

    /// The digital beacon if the caller owns it: 404 when invisible, 403 when someone else's.
    private func ownedBeacon(_ id: BeaconID, by principal: Principal, path: String) async throws -> Beacon {
        guard let beacon = try await beaconService.gate.resolve(id, for: principal) else {
            throw DBeaconError.notFound("beacon \(id)", path: path)
        }
        try beacon.authorize(.modify, by: principal, at: clock.now(),
                             otherwise: "only the owner of beacon \(id) may register physical beacons for it")
        return beacon
    }

    // MARK: Reading

    /// The entry if its digital beacon is visible to the caller (or the caller owns it).
    package func get(_ id: RegistryID, by principal: Principal) async throws -> RegistryEntry {
        guard let entry = try await store.registryEntry(id: id) else { throw DBeaconError.notFound("registry entry \(id)") }
        if principal.isAdmin || principal.userID == entry.owner { return entry }
        guard try await beaconService.gate.resolve(entry.beacon, for: principal) != nil else {
            throw DBeaconError.notFound("registry entry \(id)")
        }
        return entry
    }

    package func list(_ query: RegistryListQuery, by principal: Principal) async throws -> Page<RegistryEntry> {
        try await store.listRegistryEntries(query, viewer: principal, now: clock.now())
    }

    /// Resolves one identity (a concrete one, or a pattern such as a UUID alone, which only
    /// entries at most that specific can match); 404 when nothing visible matches.
    package func resolve(_ identity: PhysicalBeaconIdentity, by principal: Principal) async throws -> Resolution {
        guard let r = try await resolve([identity], by: principal, at: clock.now())[identity] else {
            throw DBeaconError.notFound("registered beacon \(identity)")
        }
        return r
    }

    /// Resolves many identities at once (a sighting batch): two queries whatever the count.
    package func resolve(_ identities: [PhysicalBeaconIdentity], by principal: Principal,
                         at now: Timestamp) async throws -> [PhysicalBeaconIdentity: Resolution] {
        let matches = try await store.activeRegistryMatches(identities)
        let ids = Set(matches.values.flatMap { $0.map(\.beacon) })
        var byID: [BeaconID: VisibleBeacon] = [:]
        for b in try await beaconService.gate.beacons(Array(ids), for: principal) { byID[b.id] = b }
        var result: [PhysicalBeaconIdentity: Resolution] = [:]
        for (identity, entries) in matches {
            if let entry = entries.first(where: { byID[$0.beacon] != nil }), let beacon = byID[entry.beacon] {
                result[identity] = Resolution(entry: entry, beacon: beacon)
            }
        }
        return result
    }
}
