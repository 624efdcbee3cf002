import Foundation

/// The regions a phone should monitor, from `GET /v1/regions` (`Client.listMonitoredRegions`),
/// and what to change in the phone's region monitor when a new answer arrives.
///
///     var monitored = RegionSet()
///     let next = RegionSet(try await client.listMonitoredRegions(query: .init(lat: lat, lon: lon)).ok.body.json)
///     let change = next.changes(from: monitored)
///     // stop monitoring change.removed, start monitoring change.added, then:
///     monitored = next
///     // … and ask again when `monitored.shouldRefresh(lat:lon:)` says so.
public struct RegionSet: Sendable, Hashable {
    public typealias Region = Components.Schemas.MonitoredRegion

    /// Every region of the answer, nearest first, the refresh circle last.
    public var regions: [Region]
    /// False when more beacons cover the position than there are slots (the refresh radius is
    /// then 0: report fixes instead of relying on region monitoring).
    public var complete: Bool

    public init(regions: [Region] = [], complete: Bool = true) {
        self.regions = regions
        self.complete = complete
    }

    public init(_ answer: Components.Schemas.MonitoredRegionSet) {
        self.init(regions: answer.regions, complete: answer.complete)
    }

    /// The beacons' circles.
    public var circles: [Region] { regions.filter { $0.kind == .circle } }
    /// The iBeacon regions (`uuid`, optional `major`/`minor`).
    public var iBeacons: [Region] { regions.filter { $0.kind == .ibeacon } }
    /// The circle the phone must stay inside for the answer to hold.
    public var refresh: Region? { regions.first { $0.kind == .refresh } }

    /// A region's identity for a region monitor: the same beacon's circle with the same centre
    /// and radius keeps its identifier across answers, so it is not re-registered needlessly.
    public static func identifier(of region: Region) -> String {
        switch region.kind {
        case .circle, .refresh:
            let c = region.center
            return "\(region.id)@\(c?.lat ?? 0),\(c?.lon ?? 0),\(region.radiusM ?? 0)"
        case .ibeacon:
            return "\(region.id)@\(region.uuid ?? "")/\(region.major.map(String.init) ?? "*")/\(region.minor.map(String.init) ?? "*")"
        }
    }

    /// What to register and unregister to go from `previous` to this set.
    public func changes(from previous: RegionSet) -> (added: [Region], removed: [Region]) {
        let old = Set(previous.regions.map(Self.identifier)), new = Set(regions.map(Self.identifier))
        return (regions.filter { !old.contains(Self.identifier(of: $0)) },
                previous.regions.filter { !new.contains(Self.identifier(of: $0)) })
    }

    /// True once the phone at (`lat`, `lon`) may have left the refresh circle (or when there is
    /// none, or the answer was incomplete): ask `GET /v1/regions` again. The server's radius is
    /// geodesic on the ellipsoid; this measures on a sphere and keeps 0.5 % in hand (more than
    /// the sphere's error), so it asks a little early, never late.
    public func shouldRefresh(lat: Double, lon: Double) -> Bool {
        guard complete, let refresh, let centre = refresh.center, let radius = refresh.radiusM, radius > 0 else { return true }
        return Self.sphericalDistance(lat, lon, centre.lat, centre.lon) >= radius * 0.995
    }

    /// Haversine distance in metres on the sphere of the Earth's mean radius.
    static func sphericalDistance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let r = 6_371_008.8, rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad, dLon = (lon2 - lon1) * rad
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * rad) * cos(lat2 * rad) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * r * asin(min(1, a.squareRoot()))
    }
}
