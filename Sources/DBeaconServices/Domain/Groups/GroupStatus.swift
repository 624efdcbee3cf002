package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A group as one of its members (or its guide) sees it.
package struct GroupStatus: Sendable {
    package var group: TrackedGroup
    package var beacon: VisibleBeacon?
    package var members: [GroupMemberStatus]
    package var staleAfterSeconds: Double
}
