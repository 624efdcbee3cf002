package import DBeaconCore

/// A new meeting, as read from a request (`POST /v1/meetings`).
package struct MeetingDraft: Sendable {
    package var name: String
    package var description: String?
    /// The exact spot.
    package var location: Position
    /// Where it can be discovered; a circle of the default radius around the spot when nil.
    package var perimeter: Perimeter?
    package var start: Timestamp
    package var end: Timestamp
    /// Invitees: a private meeting; nil for a public one.
    package var invitees: [UserID]?
    package var tags: [String]

    package init(name: String, description: String?, location: Position, perimeter: Perimeter?, start: Timestamp, end: Timestamp,
                 invitees: [UserID]?, tags: [String]) {
        self.name = name
        self.description = description
        self.location = location
        self.perimeter = perimeter
        self.start = start
        self.end = end
        self.invitees = invitees
        self.tags = tags
    }
}
