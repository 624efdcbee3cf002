package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// A meeting and what the caller may know about its attendees.
package struct MeetingView: Sendable {
    package var beacon: VisibleBeacon
    package var attendeesCount: Int
    /// Whether the caller joined.
    package var joined: Bool
    /// The attendees, for the organizer only.
    package var attendees: [MeetingAttendee]?
}
