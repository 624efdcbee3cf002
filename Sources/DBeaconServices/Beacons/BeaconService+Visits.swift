package import DBeaconCore
import DBeaconStore

/// Aggregate visit statistics of a beacon, for its owner (thesis 4.2.3, consumer activity
/// data): never per-user trails.
package struct VisitStats: Sendable {
    /// Dwell-time buckets (seconds): [0, 5 min), [5, 15 min), [15, 30 min), [30, 60 min), [1, 2 h), ≥ 2 h.
    package static let dwellBounds: [Double] = [0, 300, 900, 1800, 3600, 7200]
    /// Other beacons are suggested only when at least this many visitors (not the owner, with
    /// accounts older than their visits) went to both: the default of `--also-visited-min-visitors`.
    package static let defaultMinCoVisitors = 5

    package var visits = 0
    package var uniqueVisitors = 0
    /// Visits still open (entered, not yet exited).
    package var ongoing = 0
    /// Dwell times of completed visits, in seconds, sorted.
    package var dwells: [Double] = []
    /// Entries per hour of the week (UTC), Monday 00:00–01:00 first: 168 counts.
    package var hourOfWeek = [Int](repeating: 0, count: 168)
    /// Visitors here also went to (suggested `related` relationships), most shared first.
    package var alsoVisited: [(beacon: VisibleBeacon, visitors: Int)] = []

    package var dwellHistogram: [Int] {
        var counts = [Int](repeating: 0, count: Self.dwellBounds.count)
        for d in dwells { counts[(Self.dwellBounds.lastIndex { d >= $0 }) ?? 0] += 1 }
        return counts
    }

    package var meanDwell: Double? { dwells.isEmpty ? nil : dwells.reduce(0, +) / Double(dwells.count) }

    package var medianDwell: Double? {
        guard !dwells.isEmpty else { return nil }
        let mid = dwells.count / 2
        return dwells.count % 2 == 1 ? dwells[mid] : (dwells[mid - 1] + dwells[mid]) / 2
    }

    /// The hour-of-week bucket (Monday 00 UTC = 0) of a time.
    package static func hourOfWeek(_ t: Timestamp) -> Int {
        let hours = Int((Double(t.millis) / 3_600_000).rounded(.down))
        let days = Int((Double(hours) / 24).rounded(.down))
        let weekday = ((days + 3) % 7 + 7) % 7 // 1970-01-01 was a Thursday (Monday = 0)
        return weekday * 24 + ((hours % 24) + 24) % 24
    }
}

extension BeaconService {
    /// Visit statistics of a beacon from the entries and exits in the event log (kept for the
    /// retention period): the owner (or the operator) only; 403 for others who may see it.
    package func visits(_ id: BeaconID, by principal: Principal) async throws -> VisitStats {
        let beacon = try await get(id, by: principal)
        try beacon.authorize(.modify, by: principal, at: clock.now(), otherwise: "only the owner may see the visit statistics of this beacon")
        var stats = VisitStats()
        var visitors = Set<UserID>()
        var open: [UserID: Timestamp] = [:]
        for crossing in try await store.fenceCrossings(beacon: id) {
            if crossing.entered {
                open[crossing.user] = crossing.at  // a second entry without an exit starts a new visit
                visitors.insert(crossing.user)
                stats.visits += 1
                stats.hourOfWeek[VisitStats.hourOfWeek(crossing.at)] += 1
            } else if let start = open.removeValue(forKey: crossing.user) {
                stats.dwells.append(max(0, crossing.at.seconds(since: start)))
            }
        }
        stats.ongoing = open.count
        stats.uniqueVisitors = visitors.count
        stats.dwells.sort()
        let related = Set(beacon.relationships.map(\.target))
        let shared = try await store.coVisits(beacon: id, excluding: beacon.owner, minVisitors: minCoVisitors, limit: 50)
        var byID: [BeaconID: VisibleBeacon] = [:]
        for b in try await gate.beacons(shared.map(\.beacon), for: principal) { byID[b.id] = b }
        stats.alsoVisited = shared.compactMap { item in
            guard !related.contains(item.beacon), let b = byID[item.beacon] else { return nil }
            return (b, item.visitors)
        }.prefix(10).map { $0 }
        return stats
    }
}
