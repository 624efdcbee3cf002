package import DBeaconCore

/// The physical beacon registry is not yet stored in PostgreSQL: on a PostGIS deployment the
/// registry and sighting endpoints answer 503 `not_implemented` (a clear error, nothing
/// half-stored) until `schema/postgis/v3_registry.sql` and these methods exist.
extension PostgresStore: RegistryStore {
    private static var unavailable: DBeaconError {
        DBeaconError(.unavailable, code: "not_implemented",
                     message: "the physical beacon registry is not available on the PostGIS backend yet")
    }

    package func insertRegistryEntry(_ entry: RegistryEntry) async throws { throw Self.unavailable }
    package func registryEntry(id: RegistryID) async throws -> RegistryEntry? { throw Self.unavailable }
    package func updateRegistryEntry(_ entry: RegistryEntry, expectedVersion: Int) async throws { throw Self.unavailable }
    package func deleteRegistryEntry(id: RegistryID) async throws -> Bool { throw Self.unavailable }
    package func listRegistryEntries(_ query: RegistryListQuery, viewer: Principal, now: Timestamp) async throws
        -> Page<RegistryEntry> { throw Self.unavailable }
    package func activeRegistryMatches(_ identities: [PhysicalBeaconIdentity]) async throws
        -> [PhysicalBeaconIdentity: [RegistryEntry]] { throw Self.unavailable }
    package func sightingBatchResponse(user: UserID, batchID: String) async throws -> String? { throw Self.unavailable }
    package func storeSightingBatchResponse(user: UserID, batchID: String, response: String, at: Timestamp,
                                            expireBefore: Timestamp) async throws -> String { throw Self.unavailable }
}
