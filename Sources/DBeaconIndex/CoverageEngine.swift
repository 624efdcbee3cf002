package import DBeaconCore
package import DBeaconStore

/// Answers "which beacons cover this point" for nearby, fences, tours, promotions and
/// sightings. Two implementations must agree exactly: the SQL path in the store (the
/// reference) and the in-memory spatial index (the fast path).
package protocol CoverageEngine: Sendable {
    /// A short name for logs and benchmarks (`sql`, `memory`).
    var name: String { get }
    /// Visible, alive, tag-matching beacons whose perimeter covers the point, each once; unordered.
    func covering(_ query: CoverQuery) async throws -> [Beacon]
    /// The ids of `covering(query)`, each once (the fence engine needs whole beacons only for the few
    /// a fix enters or leaves).
    func coveringIDs(_ query: CoverQuery) async throws -> [BeaconID]
    /// `covering(query)` for an answer that writes perimeters as GeoJSON: a perimeter the
    /// engine keeps formatted comes as a `FormattedPerimeter`, and its beacon's perimeter is
    /// left empty.
    func coveringFormatted(_ query: CoverQuery) async throws -> [(beacon: Beacon, perimeter: (any FormattedPerimeter)?)]
    /// The beacons among `ids` that exist (no visibility filter).
    func beacons(ids: [BeaconID]) async throws -> [Beacon]
    /// The moving beacons of `owner`.
    func trackingBeacons(owner: UserID) async throws -> [Beacon]
}

extension CoverageEngine {
    package func coveringIDs(_ query: CoverQuery) async throws -> [BeaconID] {
        try await covering(query).map(\.id)
    }

    package func coveringFormatted(_ query: CoverQuery) async throws -> [(beacon: Beacon, perimeter: (any FormattedPerimeter)?)] {
        try await covering(query).map { ($0, nil) }
    }
}

/// The SQL path: SpatiaLite's R*Tree plus `ST_Covers` / geodesic circle test.
package struct SQLCoverageEngine: CoverageEngine {
    let store: any BeaconStore

    package init(store: any BeaconStore) { self.store = store }

    package var name: String { "sql" }

    package func covering(_ query: CoverQuery) async throws -> [Beacon] {
        try await store.coveringBeacons(query)
    }

    package func beacons(ids: [BeaconID]) async throws -> [Beacon] {
        try await store.beacons(ids: ids)
    }

    package func trackingBeacons(owner: UserID) async throws -> [Beacon] {
        try await store.trackingBeacons(owner: owner)
    }
}
