/// A user's phone with its own token (issue 30): revoked alone when lost, without changing the
/// user's token.
package struct Device: Sendable, Hashable {
    package var id: DeviceID
    package var user: UserID
    package var name: String
    package var createdAt: Timestamp
    /// When it last authenticated (updated at most once a minute).
    package var lastSeenAt: Timestamp?
    package var revokedAt: Timestamp?

    package init(id: DeviceID, user: UserID, name: String, createdAt: Timestamp, lastSeenAt: Timestamp? = nil, revokedAt: Timestamp? = nil) {
        self.id = id
        self.user = user
        self.name = name
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.revokedAt = revokedAt
    }
}
