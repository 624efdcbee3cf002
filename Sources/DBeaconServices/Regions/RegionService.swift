package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import DBeaconIndex
import Synchronization

/// A region for a phone to monitor (Apple's region monitoring allows 20 per app).
package struct MonitoredRegion: Sendable {
    package enum Kind: Sendable {
        /// A beacon's perimeter as a circle; `approximate` when it is a polygon's smallest
        /// enclosing circle.
        case circle(center: Position, radiusM: Double, approximate: Bool)
        /// A physical iBeacon registered for the beacon (UUID, optional major and minor).
        case iBeacon(entry: RegistryID, identity: PhysicalBeaconIdentity)
        /// Around the caller: leaving it means asking for regions again.
        case refresh(center: Position, radiusM: Double)
    }

    package var kind: Kind
    package var beacon: VisibleBeacon?
    /// From the caller to the beacon's perimeter (0 inside).
    package var distanceM: Double
}

/// The answer of `GET /v1/regions`: the regions, and whether they keep the promise everywhere
/// in the refresh circle.
package struct RegionAnswer: Sendable {
    package var regions: [MonitoredRegion]
    /// False when more beacons cover the caller's position than there are slots: the refresh
    /// circle then has radius 0 ("report fixes instead"), and the covering beacons come first.
    package var complete: Bool
}

/// `GET /v1/regions`: the regions a phone should monitor near a user, and the refresh circle
/// within which they keep their promise.
///
/// The promise: while the phone stays inside the refresh circle, every beacon the user may see
/// whose perimeter contains the phone's position is among the returned circle regions, and each
/// circle contains its beacon's whole perimeter. Candidates are found by their perimeters (the
/// spatial index over perimeter boxes, every one, no truncation), ranked by the distance from
/// the user to the perimeter; the refresh radius is smaller than the distance to the nearest
/// perimeter left out and than the radius searched.
package struct RegionService: Sendable {
    package let beacons: BeaconService
    package let registry: any RegistryStore
    /// Where beacons changed lately (`PhoneService` keeps a phone's regions while nothing did).
    package let changes: RegionChanges
    /// Polygons' verified enclosing circles, computed once per perimeter (see `circle(of:)`).
    let circles = EnclosingCircleCache()
    /// Large polygons' runs of edges, for their exact distances (see `measured`).
    let edgeRuns = EdgeRunsCache()

    /// Search radii tried in turn until enough candidates are found.
    package static let searchRadiiM: [Double] = [250, 1_000, 3_000, 10_000, 30_000]
    package static let defaultMax = 20
    package static let maxMax = 100
    /// The refresh radius short of the nearest perimeter left out, `d` metres away (exact, or
    /// a lower bound of the exact distance): a centimetre and rounding down to a decimetre keep
    /// the circle off it.
    package static func safe(_ d: Double) -> Double { max(0, ((d - 0.01) * 10).rounded(.down) / 10) }

    package init(beacons: BeaconService, registry: any RegistryStore, changes: RegionChanges = RegionChanges()) {
        self.beacons = beacons
        self.registry = registry
        self.changes = changes
    }

    /// At most `max` regions (at least 2, the refresh circle included): the beacons the caller
    /// may see, alive now and not moving (with `tags`, any of), nearest perimeter first, each as a
    /// circle enclosing its perimeter; then, in the slots left, their active iBeacon entries; last
    /// the refresh circle around `point`. `covering`: the coverage lookup at `point` for the
    /// caller, without tags, when one was just made (a phone's fix), else made here.
    package func regions(at point: Position, max: Int, tags: [String], by principal: Principal,
                         covering lookedUp: [BeaconID]? = nil) async throws -> RegionAnswer {
        let now = beacons.clock.now()
        let slots = max - 1
        let query = CoverQuery(point: point, tags: tags, at: now, viewer: principal)
        let covering: [BeaconID]
        if let lookedUp, tags.isEmpty { covering = lookedUp } else { covering = try await beacons.engine.coveringIDs(query) }
        if let first = try await crowded(covering, by: principal, now: now, slots: slots) {
            return RegionAnswer(regions: first.map(circle) + [MonitoredRegion(kind: .refresh(center: point, radiusM: 0), beacon: nil, distanceM: 0)],
                                complete: false)
        }
        var ranked: [Candidate] = []
        var searched = Self.searchRadiiM[0]
        let coveringSet = Set(covering)
        for radius in Self.searchRadiiM {
            searched = radius
            let bounded = try await bounds(near: point, radius: radius, query: query, covering: coveringSet)
            // Fewer candidates than it takes to fill the slots: the next radius, unread (the last
            // radius is measured whatever it holds).
            if bounded.count <= slots && radius != Self.searchRadiiM.last { continue }
            ranked = try await measured(bounded, near: point, radius: radius, by: principal, now: now, covering: coveringSet,
                                        needed: slots + 1)
            if ranked.count > slots { break }
        }
        let included = Array(ranked.prefix(slots))
        let nextLeftOut = ranked.count > slots ? ranked[slots].distance : nil
        let complete = (nextLeftOut ?? 1) > 0
        let refresh = complete ? Self.safe(Swift.min(nextLeftOut ?? searched, searched)) : 0

        // iBeacon entries of the included beacons, in one query, in the slots left.
        var entriesByBeacon: [BeaconID: [RegistryEntry]] = [:]
        var spare = slots - included.count
        if spare > 0, !included.isEmpty {
            var after: Int64?
            repeat {
                var query = RegistryListQuery(kind: .iBeacon, status: .active, limit: 500, after: after)
                query.beacons = included.map(\.beacon.id)
                let page = try await registry.listRegistryEntries(query, viewer: principal, now: now)
                for e in page.items { entriesByBeacon[e.beacon, default: []].append(e) }
                after = page.next
            } while after != nil
        }
        var regions: [MonitoredRegion] = []
        for candidate in included {
            let (b, _, distance) = candidate
            regions.append(circle(candidate))
            for entry in entriesByBeacon[b.id] ?? [] where spare > 0 {
                regions.append(MonitoredRegion(kind: .iBeacon(entry: entry.id, identity: entry.identity), beacon: b, distanceM: distance))
                spare -= 1
            }
        }
        regions.append(MonitoredRegion(kind: .refresh(center: point, radiusM: refresh), beacon: nil, distanceM: 0))
        return RegionAnswer(regions: regions, complete: complete)
    }

    /// When more beacons than `slots` that the caller may see cover `point` (alive now, not
    /// moving, with `tags`), the answer is the first `slots` of them by id, each at distance 0,
    /// with no refresh circle: the search below would rank them first and leave out the next
    /// one at distance 0. Found from one coverage lookup and a read of those beacons alone,
    /// without listing and measuring every perimeter near the point (in a city centre, where
    /// each point lies in more than twenty beacons, that was most of the cost of an answer).
    /// Nil when fewer cover the point. `covering`: the coverage lookup's ids.
    func crowded(_ covering: [BeaconID], by principal: Principal, now: Timestamp, slots: Int) async throws -> [Candidate]? {
        guard covering.count > slots else { return nil }
        let covering = covering.sorted()
        var taken: [Candidate] = []
        var next = 0
        // In order of id, in batches, until one more than the slots passes the gate.
        while taken.count <= slots, next < covering.count {
            let batch = covering[next..<Swift.min(covering.count, next + slots + 1 - taken.count)]
            next = batch.endIndex
            // At distance 0 a region is the circle around the perimeter: no perimeter is needed
            // where the engine keeps that circle.
            taken += try await monitorable(Array(batch), by: principal, now: now, perimeters: false).map { ($0.beacon, $0.covers, 0) }
        }
        guard taken.count > slots else { return nil }
        return Array(taken.sorted { $0.beacon.id < $1.beacon.id }.prefix(slots))
    }

    /// The beacons among `ids` a phone may monitor for the caller: those they may see (through
    /// the gate, as they see them), alive now and not moving, each with what it covers (its
    /// stored location and perimeter, which the gate may present elsewhere: a tour). Without
    /// `perimeters`, a polygon whose enclosing circle the engine keeps may come without its
    /// perimeter (for `circle` alone, never for a distance).
    func monitorable(_ ids: [BeaconID], by principal: Principal, now: Timestamp, perimeters: Bool = true) async throws
        -> [(beacon: VisibleBeacon, covers: (location: Position, perimeter: Perimeter))] {
        let engine = beacons.engine
        var read = try await engine.beacons(ids: ids, perimeters: perimeters)
        if !perimeters {
            // Those read without a perimeter whose circle the engine does not keep, read whole.
            let whole = Set(read.filter { !$0.perimeter.isCircle && $0.perimeter.vertexCount == 0 && engine.enclosingCircle(of: $0.id) == nil }.map(\.id))
            if !whole.isEmpty {
                var again: [BeaconID: Beacon] = [:]
                for b in try await engine.beacons(ids: Array(whole)) { again[b.id] = b }
                read = read.compactMap { whole.contains($0.id) ? again[$0.id] : $0 }
            }
        }
        var stored: [BeaconID: Beacon] = [:]
        for b in read { stored[b.id] = b }
        return try await beacons.gate.present(read, to: principal).filter { $0.beacon.isAlive(at: now) && !$0.tracksOwner }.map { b in
            (b, stored[b.id].map { ($0.location, $0.perimeter) } ?? (b.location, b.perimeter))
        }
    }

    /// A candidate's region: a circle enclosing its perimeter, or, for a beacon shown elsewhere
    /// than it covers, everything it covers (`enclosing`).
    func circle(_ c: Candidate) -> MonitoredRegion {
        MonitoredRegion(kind: Self.enclosing(circles.circle(of: c.beacon, engine: beacons.engine), c.beacon, covering: c.covers),
                        beacon: c.beacon, distanceM: c.distance)
    }

    /// A candidate region: the beacon as the caller sees it, where it covers (its stored location
    /// and perimeter), and the distance from the caller to that.
    typealias Candidate = (beacon: VisibleBeacon, covers: (location: Position, perimeter: Perimeter), distance: Double)

    /// The region of a beacon presented elsewhere than it covers (a tour, shown at the first of
    /// its stops the caller sees, covers with the circle around its own location): a circle
    /// around where it is shown, wide enough to enclose everything it covers, so a phone that
    /// monitors it enters wherever nearby finds the beacon.
    static func enclosing(_ kind: MonitoredRegion.Kind, _ b: VisibleBeacon,
                          covering covers: (location: Position, perimeter: Perimeter)) -> MonitoredRegion.Kind {
        guard case .circle(let r) = covers.perimeter, covers.location != b.location else { return kind }
        let reach = Geodesy.distance(b.location, covers.location) + r
        return .circle(center: b.location, radiusM: (reach * 10).rounded(.up) / 10 + 0.1, approximate: true)
    }

    typealias Bounded = (candidate: PerimeterCandidate, bound: Double)

    /// Every beacon the caller may see, alive now and not moving, whose perimeter lies within
    /// `radius` of `point`, nearest perimeter first (0 inside, then id), with their exact
    /// distances to what they cover: all of them, or at least the first `needed` (those left out
    /// are farther).
    ///
    /// The configured engine lists the candidates whose perimeter's box meets the search
    /// circle's boxes (the memory engine's grid, or the store's spatial index), without reading
    /// them. Each gets a lower bound of its distance: exact for circles and for the beacons
    /// covering the point (one coverage lookup), the distance to its box otherwise. Best first
    /// by that bound, candidates are read in small batches, passed through the visibility gate
    /// and measured exactly, until `needed` are measured and the next bound is beyond the
    /// `needed`-th distance: no candidate left unread can be among the first `needed`.
    ///
    /// Here the candidates with their lower bounds, within `radius`, best first; nothing read
    /// (`covering`: the coverage lookup's ids at the point).
    func bounds(near point: Position, radius: Double, query: CoverQuery, covering: Set<BeaconID>) async throws -> [Bounded] {
        let boxes = Geodesy.boundingBoxes(center: point, radiusM: radius)
        let found = try await beacons.engine.meeting(boxes, query)
        guard !found.isEmpty else { return [] }
        let frame = LocalFrame(origin: point)
        var bounded = found.map { c -> Bounded in
            if covering.contains(c.id) { return (c, 0) }
            if let (center, r) = c.circle { return (c, max(0, Self.lowerBound(center, point) - r)) }
            return (c, c.boxes.lazy.map { Self.lowerBound(to: $0, in: frame) }.min() ?? 0)
        }.filter { $0.bound <= radius }
        bounded.sort { ($0.bound, $0.candidate.id) < ($1.bound, $1.candidate.id) }
        return bounded
    }

    /// The candidates read best first and measured exactly, until no unread one can be among
    /// the first `needed`.
    func measured(_ bounded: [Bounded], near point: Position, radius: Double, by principal: Principal, now: Timestamp,
                  covering: Set<BeaconID>, needed: Int) async throws -> [Candidate] {
        var measured: [Candidate] = []
        var kth = Double.infinity  // the `needed`-th smallest measured distance
        var next = 0
        while next < bounded.count, measured.count < needed || bounded[next].bound <= kth {
            let batch = bounded[next..<Swift.min(bounded.count, next + Swift.max(16, needed - measured.count))]
            next = batch.endIndex
            for (b, covers) in try await monitorable(batch.map(\.candidate.id), by: principal, now: now) {
                // Measured to what it covers (its stored geometry), as the coverage lookup decides.
                let d = covering.contains(b.id) ? 0
                    : PerimeterDistance.outside(point, perimeter: covers.perimeter, center: covers.location, covered: false,
                                                runs: edgeRuns.runs(of: b, covering: covers))
                if d <= radius { measured.append((b, covers, d)) }
            }
            if measured.count >= needed {
                measured.sort { ($0.distance, $0.beacon.id) < ($1.distance, $1.beacon.id) }
                kth = measured[needed - 1].distance
            }
        }
        // Candidates not read are farther than the first `needed` (they are all measured then).
        return measured.sorted { ($0.distance, $0.beacon.id) < ($1.distance, $1.beacon.id) }
    }

    /// A lower bound of the geodesic distance between two points: the flat-earth estimate less
    /// its error where it is trusted (within 20 km, below 80° of latitude: under 2e-5 of the
    /// distance, as `Geodesy.circleContains` relies on), the exact distance elsewhere.
    static func lowerBound(_ a: Position, _ b: Position) -> Double {
        if abs(a.lat) < 80 && abs(b.lat) < 80 {
            let d = Geodesy.approximateDistance(a, b)
            if d <= Geodesy.fastPathMaxRadius { return Swift.max(0, d - d * 1e-4 - 0.01) }
        }
        return Geodesy.distance(a, b)
    }

    /// A lower bound of the geodesic distance from the frame's origin to any point of `box`:
    /// the plane's distance to the box, less the plane's error there (0 where the plane is not
    /// trusted: near the poles, far away, or a box wider than a quarter of the globe).
    static func lowerBound(to box: BoundingBox, in frame: LocalFrame) -> Double {
        let d = frame.planeDistance(to: box)
        let error = PerimeterDistance.planeError(d, latitude: frame.origin.lat)
        return error.isFinite ? Swift.max(0, d - error) : 0
    }

    /// The beacon's perimeter as a circle: itself, or a polygon's enclosing circle, its radius
    /// checked on the ellipsoid against every vertex and points along every edge.
    static func circle(of b: VisibleBeacon) -> MonitoredRegion.Kind {
        if case .circle(let r) = b.perimeter { return .circle(center: b.location, radiusM: r, approximate: false) }
        return approximate(EnclosingCircle.verified(b.perimeter.polygons.map(\.exterior), origin: b.location))
    }

    static func approximate(_ c: (center: Position, radiusM: Double)) -> MonitoredRegion.Kind {
        .circle(center: c.center, radiusM: (c.radiusM * 10).rounded(.up) / 10, approximate: true)
    }

    /// Resolves the regions a phone reported (a beacon id, or a registry entry id for an iBeacon
    /// region) to beacons the caller may see; 422 `unknown_region` at `path` for anything else
    /// (the same answer whether the id is free or hidden).
    package func crossings(_ reported: [(region: String, entered: Bool, at: Timestamp, path: String)],
                           by principal: Principal) async throws -> [RegionCrossing] {
        var result: [RegionCrossing] = []
        for item in reported {
            var beacon: Beacon?
            var via: String?
            if let id = BeaconID(item.region) {
                beacon = try await beacons.gate.resolve(id, for: principal)
            } else if let id = RegistryID(item.region), let entry = try await registry.registryEntry(id: id), entry.status == .active {
                beacon = try await beacons.gate.resolve(entry.beacon, for: principal)
                via = item.region
            }
            guard let beacon else {
                throw DBeaconError.invalid(item.path, "no region \(item.region.prefix(100)) you may monitor (a beacon id or an iBeacon registry entry id)",
                                           code: "unknown_region")
            }
            result.append(RegionCrossing(beacon: beacon, entered: item.entered, at: item.at, region: via))
        }
        return result
    }
}

/// Polygons' verified enclosing circles, kept once computed. A circle depends on the perimeter
/// alone (and the location its plane is centred on), never on who asks, and checking it on the
/// ellipsoid takes a geodesic per vertex and per 100 m of edge: at 1M beacons that was 70 % of
/// the CPU of `GET /v1/regions`, each answer measuring the same polygons again.
final class EnclosingCircleCache: Sendable {
    private struct Circle { let center: Position, radiusM: Double }
    private let circles = PerimeterCache<Circle>(capacity: 100_000)

    /// The engine's circle when it keeps one (made from the stored outlines around the stored
    /// location), else made here from `b`'s perimeter the same way.
    func circle(of b: VisibleBeacon, engine: any CoverageEngine) -> MonitoredRegion.Kind {
        if case .circle = b.perimeter { return RegionService.circle(of: b) }
        if let kept = engine.enclosingCircle(of: b.id) { return RegionService.approximate(kept) }
        let known = circles.value(id: b.id, version: b.version, createdAt: b.createdAt, updatedAt: b.updatedAt,
                                  location: b.location, perimeter: b.perimeter) {
            let computed = EnclosingCircle.verified(b.perimeter.polygons.map(\.exterior), origin: b.location)
            return Circle(center: computed.center, radiusM: computed.radiusM)
        }
        return RegionService.approximate((known.center, known.radiusM))
    }
}

/// Large polygons' `EdgeRuns`, kept once made: the exact distance of `GET /v1/regions` to a
/// polygon of thousands of vertices near the caller then reads a few runs of them, not all.
/// At most 10,000 (about 3 KB each for 3,000 vertices).
final class EdgeRunsCache: Sendable {
    private let runs = PerimeterCache<EdgeRuns>(capacity: 10_000)

    /// The runs of what `b` covers, or nil for a perimeter too small to gain from them.
    func runs(of b: VisibleBeacon, covering covers: (location: Position, perimeter: Perimeter)) -> EdgeRuns? {
        guard covers.perimeter.vertexCount >= EdgeRuns.worthFrom else { return nil }
        return runs.value(id: b.id, version: b.version, createdAt: b.createdAt, updatedAt: b.updatedAt,
                          location: covers.location, perimeter: covers.perimeter) { EdgeRuns(covers.perimeter) }
    }
}

/// Values computed from a beacon's perimeter alone, kept once computed.
///
/// Keyed by the beacon's revision: its id, version, creation and update times and location
/// (every edit of a perimeter is a new version and update time; a beacon deleted and made again
/// under its id has another creation time), and a fingerprint of its perimeter read in constant
/// time (its rings' vertex counts and three vertices of its outline: a beacon made again within
/// the same millisecond, as with a stopped test clock, is told apart), so an entry is never used
/// for another perimeter; emptied when it holds `capacity` values. (The key held the whole
/// perimeter's hash before: hashing thousands of vertices per candidate per answer was 5 % of
/// `GET /v1/regions`.)
final class PerimeterCache<Value: Sendable>: Sendable {
    private struct Key: Hashable {
        let id: BeaconID, version: Int, createdAt: Int64, updatedAt: Int64, location: Position
        let rings: [Int], samples: [Position]
    }

    /// The perimeter's fingerprint: each ring's vertex count, and the first vertex and those a
    /// third and two thirds along the first outline.
    private static func fingerprint(_ perimeter: Perimeter) -> (rings: [Int], samples: [Position]) {
        let polygons = perimeter.polygons
        let rings = polygons.flatMap { $0.rings.map(\.count) }
        guard let outline = polygons.first?.exterior, !outline.isEmpty else { return (rings, []) }
        return (rings, [outline[0], outline[outline.count / 3], outline[2 * outline.count / 3]])
    }

    let capacity: Int
    private let values = Mutex<[Key: Value]>([:])

    init(capacity: Int) { self.capacity = capacity }

    func value(id: BeaconID, version: Int, createdAt: Timestamp, updatedAt: Timestamp, location: Position,
               perimeter: Perimeter, make: () -> Value) -> Value {
        let (rings, samples) = Self.fingerprint(perimeter)
        let key = Key(id: id, version: version, createdAt: createdAt.millis, updatedAt: updatedAt.millis, location: location,
                      rings: rings, samples: samples)
        if let known = values.withLock({ $0[key] }) { return known }
        let made = make()
        values.withLock { values in
            if values.count >= capacity { values.removeAll(keepingCapacity: true) }
            values[key] = made
        }
        return made
    }
}
