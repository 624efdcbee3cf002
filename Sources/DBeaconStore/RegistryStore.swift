package import DBeaconCore

/// The shared physical beacon registry and the replay log of sighting batches. The
/// SpatiaLite and PostGIS stores implement it with the same semantics (RegistryStoreTests).
package protocol RegistryStore: Sendable {
    /// Inserts an entry. `conflict` with code `duplicate_identity` when a live (not
    /// decommissioned) entry that `viewer` may see at `now` has the same identity pattern
    /// (entries hidden from them never conflict); the digital beacon must exist.
    func insertRegistryEntry(_ entry: RegistryEntry, conflictsVisibleTo viewer: Principal, now: Timestamp) async throws
    func registryEntry(id: RegistryID) async throws -> RegistryEntry?
    /// Replaces an entry if its stored version is still `expectedVersion` (else
    /// `preconditionFailed`); `duplicate_identity` as for inserts.
    func updateRegistryEntry(_ entry: RegistryEntry, expectedVersion: Int, conflictsVisibleTo viewer: Principal,
                             now: Timestamp) async throws
    /// Deletes an entry; false when there was none.
    func deleteRegistryEntry(id: RegistryID) async throws -> Bool
    /// Entries whose digital beacon `viewer` may see at `now`, filtered, in creation order, one page.
    func listRegistryEntries(_ query: RegistryListQuery, viewer: Principal, now: Timestamp) async throws -> Page<RegistryEntry>
    /// For each concrete identity, the active entries whose pattern matches it, most specific
    /// first (ties: oldest first). No visibility filter: the caller decides what may be shown.
    func activeRegistryMatches(_ identities: [PhysicalBeaconIdentity]) async throws -> [PhysicalBeaconIdentity: [RegistryEntry]]

    /// The stored answer to a sighting batch, if it was seen before.
    func sightingBatchResponse(user: UserID, batchID: String) async throws -> String?
    /// Stores the answer to a sighting batch unless one is stored already, and returns the
    /// stored one (so concurrent replays agree). Answers created before `expireBefore` are deleted.
    func storeSightingBatchResponse(user: UserID, batchID: String, response: String, at: Timestamp,
                                    expireBefore: Timestamp) async throws -> String
}
