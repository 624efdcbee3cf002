package import DBeaconCore

/// A new tracked group, as read from a request (`POST /v1/groups`).
package struct GroupDraft: Sendable {
    package var name: String
    package var description: String?
    /// Metres around the guide within which members are in range.
    package var rangeM: Double
    /// The users allowed in a closed group; nil for an open one.
    package var members: [UserID]?
    /// Where the group starts; else the guide's last fix.
    package var location: Position?

    package init(name: String, description: String?, rangeM: Double, members: [UserID]?, location: Position?) {
        self.name = name
        self.description = description
        self.rangeM = rangeM
        self.members = members
        self.location = location
    }
}
