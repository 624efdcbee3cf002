package import DBeaconCore
import DBeaconGeo
package import DBeaconStore

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

/// `GET /v1/regions`: the regions near a user worth monitoring on the phone, best by distance
/// to the perimeter, stable for the same input; plus one refresh circle.
package struct RegionService: Sendable {
    package let beacons: BeaconService
    package let registry: any RegistryStore

    /// Search radii tried in turn until enough candidates are found.
    package static let searchRadiiM: [Double] = [1_000, 3_000, 10_000]
    package static let defaultMax = 20
    package static let maxMax = 100
    package static let minRefreshM = 50.0

    package init(beacons: BeaconService, registry: any RegistryStore) {
        self.beacons = beacons
        self.registry = registry
    }

    /// At most `max` regions (at least 2): the nearest visible, alive, non-moving beacons (with
    /// `tags`, any of) as circles, each followed by its active iBeacon entries, then a refresh
    /// circle around `point` of half the margin to the nearest region left out (at least 50 m),
    /// or of half the searched radius when none was left out.
    package func regions(at point: Position, max: Int, tags: [String], by principal: Principal) async throws -> [MonitoredRegion] {
        let now = beacons.clock.now()
        var found: [BeaconID: VisibleBeacon] = [:]
        var searched = Self.searchRadiiM[0]
        for radius in Self.searchRadiiM {
            searched = radius
            for box in Geodesy.boundingBoxes(center: point, radiusM: radius) {
                let page = try await beacons.store.listBeacons(BeaconListQuery(tags: tags, bbox: box, limit: 1_000), viewer: principal, now: now)
                for b in try await beacons.gate.present(page.items, to: principal) where b.beacon.isAlive(at: now) && !b.tracksOwner {
                    found[b.id] = b
                }
            }
            if found.count >= max { break }
        }
        let ranked = found.values.map { b -> (VisibleBeacon, Double) in
            let covered = PerimeterTester(location: b.location, perimeter: b.perimeter).covers(point)
            return (b, PerimeterDistance.outside(point, perimeter: b.perimeter, center: b.location, covered: covered))
        }.sorted { ($0.1, $0.0.id) < ($1.1, $1.0.id) }

        var regions: [MonitoredRegion] = []
        var lastIncluded = 0.0
        var nextLeftOut: Double?
        for (b, distance) in ranked {
            guard regions.count < max - 1 else {
                nextLeftOut = distance
                break
            }
            regions.append(MonitoredRegion(kind: Self.circle(of: b), beacon: b, distanceM: distance))
            lastIncluded = distance
            let entries = try await registry.listRegistryEntries(
                RegistryListQuery(beacon: b.id, kind: .iBeacon, status: .active, limit: 10), viewer: principal, now: now).items
            for entry in entries where regions.count < max - 1 {
                regions.append(MonitoredRegion(kind: .iBeacon(entry: entry.id, identity: entry.identity), beacon: b, distanceM: distance))
            }
        }
        let refresh = nextLeftOut.map { Swift.max(Self.minRefreshM, Swift.min(searched / 2, ($0 - lastIncluded) / 2)) } ?? searched / 2
        regions.append(MonitoredRegion(kind: .refresh(center: point, radiusM: refresh), beacon: nil, distanceM: 0))
        return regions
    }

    static func circle(of b: VisibleBeacon) -> MonitoredRegion.Kind {
        if case .circle(let r) = b.perimeter { return .circle(center: b.location, radiusM: r, approximate: false) }
        let points = b.perimeter.polygons.flatMap(\.exterior)
        let (center, radius) = EnclosingCircle.of(points, origin: b.location)
        return .circle(center: center, radiusM: (radius * 10).rounded(.up) / 10, approximate: true)
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
