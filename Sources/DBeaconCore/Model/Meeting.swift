/// Someone who joined a meeting.
package struct MeetingAttendee: Sendable, Hashable {
    package var user: UserID
    package var name: String
    package var joinedAt: Timestamp

    package init(user: UserID, name: String, joinedAt: Timestamp) {
        self.user = user
        self.name = name
        self.joinedAt = joinedAt
    }
}
