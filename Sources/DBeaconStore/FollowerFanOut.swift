package import DBeaconCore

/// An event for every follower of a beacon who may see it (checked in the transaction).
package struct FollowerFanOut: Sendable {
    package var type: EventType
    package var data: JSONObject
    package var at: Timestamp
    /// Whether followers must also see it alive at `at` (updates) or only be owner/member
    /// (lifetime start/end, deletion).
    package var requireAlive: Bool
    /// Whether the members of a private beacon (a meeting's invitees) hear of it too, following
    /// or not (meeting reminders).
    package var alsoMembers: Bool

    package init(type: EventType, data: JSONObject, at: Timestamp, requireAlive: Bool, alsoMembers: Bool = false) {
        self.type = type
        self.data = data
        self.at = at
        self.requireAlive = requireAlive
        self.alsoMembers = alsoMembers
    }
}
