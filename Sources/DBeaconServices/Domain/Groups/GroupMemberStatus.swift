package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// One person in a group as a given viewer may see them.
package struct GroupMemberStatus: Sendable {
    package var user: UserID
    package var name: String
    /// `leader` (the guide) or `member`.
    package var role: String
    package var joinedAt: Timestamp
    /// The last fix the viewer may see (taken after both joined), if any.
    package var location: UserLocation?
    /// Seconds since that fix.
    package var ageSeconds: Double?
    /// No shared fix for longer than the configured time.
    package var stale: Bool
    /// From the guide, when the viewer may see both positions.
    package var distanceM: Double?
    /// The member's range state (hysteresis applied); nil while unknown. True for the guide when located.
    package var inRange: Bool?
}
