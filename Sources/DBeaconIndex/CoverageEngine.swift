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
    /// `beacons(ids:)` for a caller that reads no perimeter (a visibility decision, a location):
    /// without `perimeters` a polygon's may be left empty, which spares reading and decoding it
    /// (a large polygon's vertices come from the coordinate file).
    func beacons(ids: [BeaconID], perimeters: Bool) async throws -> [Beacon]
    /// `BeaconFacts` of each beacon among `ids` that exists, for a decision that needs nothing
    /// else (the gate's, whether a phone's regions still hold).
    func facts(ids: [BeaconID]) async throws -> [BeaconID: BeaconFacts]
    /// The moving beacons of `owner`.
    func trackingBeacons(owner: UserID) async throws -> [Beacon]
    /// Beacons whose perimeter's box meets one of `boxes` (each a box of the spatial index's
    /// kind: within −180…180), alive at `query.at` and covering for `query.viewer` (the
    /// visibility policy's `cover`), with any of `query.tags`, not moving with their owner;
    /// each once, unordered, no truncation; as candidates (id, boxes, circle), not beacons, so
    /// a caller materialises only those it needs (`beacons(ids:)`, then the visibility gate).
    /// `query.point` is unused.
    func meeting(_ boxes: [BoundingBox], _ query: CoverQuery) async throws -> [PerimeterCandidate]
    /// `PerimeterDistance.isWithin(limit, of:, center:, point:)` on beacon `id`'s perimeter (an
    /// exit cushion), when the engine can tell without reading the perimeter; nil: read it.
    func isWithin(_ limit: Double, ofPerimeterOf id: BeaconID, point: Position) -> Bool?
    /// The circle enclosing beacon `id`'s polygon perimeter, around its outlines
    /// (`EnclosingCircle.verified`, from its stored location), when the engine keeps it; nil for
    /// a circle, an unknown id, or an engine that keeps none (the caller reads the perimeter).
    func enclosingCircle(of id: BeaconID) -> (center: Position, radiusM: Double)?
}

/// A beacon near a point, before it is read: enough to bound the distance to its perimeter.
package struct PerimeterCandidate: Sendable {
    package var id: BeaconID
    /// The boxes its perimeter is indexed under.
    package var boxes: [BoundingBox]
    /// Its centre and radius, for a circle.
    package var circle: (center: Position, radiusM: Double)?

    package init(id: BeaconID, boxes: [BoundingBox], circle: (center: Position, radiusM: Double)?) {
        self.id = id
        self.boxes = boxes
        self.circle = circle
    }

    package init(_ beacon: Beacon) {
        id = beacon.id
        boxes = MemoryCoverageEngine.boxes(of: beacon)
        circle = beacon.perimeter.radiusM.map { (beacon.location, $0) }
    }
}

extension CoverageEngine {
    package func coveringIDs(_ query: CoverQuery) async throws -> [BeaconID] {
        try await covering(query).map(\.id)
    }

    package func coveringFormatted(_ query: CoverQuery) async throws -> [(beacon: Beacon, perimeter: (any FormattedPerimeter)?)] {
        try await covering(query).map { ($0, nil) }
    }

    package func beacons(ids: [BeaconID], perimeters: Bool) async throws -> [Beacon] {
        try await beacons(ids: ids)
    }

    package func isWithin(_ limit: Double, ofPerimeterOf id: BeaconID, point: Position) -> Bool? { nil }

    package func enclosingCircle(of id: BeaconID) -> (center: Position, radiusM: Double)? { nil }

    package func facts(ids: [BeaconID]) async throws -> [BeaconID: BeaconFacts] {
        var found: [BeaconID: BeaconFacts] = [:]
        for b in try await beacons(ids: ids, perimeters: false) { found[b.id] = BeaconFacts(b) }
        return found
    }
}

/// What decisions read of a beacon: what the visibility rule reads, its version, and whether it
/// moves with its owner; read without the rest (the index decodes only these of its records).
package struct BeaconFacts: Sendable, Equatable {
    package var subject: VisibilityPolicy.Subject
    package var version: Int
    package var tracksOwner: Bool

    package init(subject: VisibilityPolicy.Subject, version: Int, tracksOwner: Bool) {
        self.subject = subject
        self.version = version
        self.tracksOwner = tracksOwner
    }

    package init(_ beacon: Beacon) {
        self.init(subject: beacon.visibilitySubject, version: beacon.version, tracksOwner: beacon.tracksOwner)
    }

    /// `Beacon.isAlive(at:)`.
    package func isAlive(at t: Timestamp) -> Bool { subject.lifetime?.contains(t) ?? true }
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

    /// The store's beacon list over the perimeters' boxes (its spatial index), every page.
    package func meeting(_ boxes: [BoundingBox], _ query: CoverQuery) async throws -> [PerimeterCandidate] {
        var found: [PerimeterCandidate] = []
        var after: Int64?
        repeat {
            var list = BeaconListQuery(tags: query.tags, limit: 500, after: after)
            list.perimeterMeets = boxes
            let page = try await store.listBeacons(list, viewer: query.viewer, now: query.visibleNow)
            found += page.items.filter { !$0.tracksOwner && $0.covers(query.viewer, at: query.at, now: query.visibleNow) }
                .map(PerimeterCandidate.init)
            after = page.next
        } while after != nil
        return found
    }
}
