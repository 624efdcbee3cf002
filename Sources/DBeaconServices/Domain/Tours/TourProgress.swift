package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// Where a follower of a tour stands.
package struct TourProgress: Sendable {
    package var startedAt: Timestamp
    package var visited: [(stop: TourStop, at: Timestamp)]
    /// The first stop in order not yet visited; nil when every stop was visited.
    package var next: TourStop?
    package var total: Int
    package var completed: Bool { next == nil }
}
