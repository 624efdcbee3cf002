/// A follower of a beacon.
package struct Follower: Sendable, Hashable {
    package var user: UserID
    package var name: String
    package var since: Timestamp

    package init(user: UserID, name: String, since: Timestamp) {
        self.user = user
        self.name = name
        self.since = since
    }
}
