package import DBeaconCore

/// What a `PATCH /v1/meetings/{id}` changes; nil leaves a field as it is.
package struct MeetingChanges: Sendable {
    package var name: String?
    /// `.some(nil)` removes the description.
    package var description: String??
    package var location: Position?
    package var perimeter: Perimeter?
    package var start: Timestamp?
    package var end: Timestamp?
    /// `.some(nil)` makes the meeting public; `.some(list)` private to these invitees.
    package var invitees: [UserID]??
    package var tags: [String]?

    package init() {}
}
