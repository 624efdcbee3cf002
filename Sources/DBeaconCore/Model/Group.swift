/// A tracked group: a beacon that follows its guide (the leader), with a range in metres.
package struct TrackedGroup: Sendable, Hashable {
    package var id: GroupID
    package var beacon: BeaconID
    package var name: String
    package var leader: UserID
    package var rangeM: Double
    /// Users allowed to join; nil for an open group.
    package var allowed: [UserID]?
    /// False while the guide's location is unknown (the beacon is hidden until the first fix).
    package var placed: Bool
    package var createdAt: Timestamp

    package init(id: GroupID, beacon: BeaconID, name: String, leader: UserID, rangeM: Double, allowed: [UserID]?,
                 placed: Bool, createdAt: Timestamp) {
        self.id = id
        self.beacon = beacon
        self.name = name
        self.leader = leader
        self.rangeM = rangeM
        self.allowed = allowed
        self.placed = placed
        self.createdAt = createdAt
    }
}

/// A current member of a group (the guide excluded) and their range state.
package struct GroupMembership: Sendable, Hashable {
    package var user: UserID
    package var name: String
    package var joinedAt: Timestamp
    package var rangeState: RangeState?
    package var rangeDistanceM: Double?
    package var rangeChangedAt: Timestamp?

    package init(user: UserID, name: String, joinedAt: Timestamp, rangeState: RangeState? = nil,
                 rangeDistanceM: Double? = nil, rangeChangedAt: Timestamp? = nil) {
        self.user = user
        self.name = name
        self.joinedAt = joinedAt
        self.rangeState = rangeState
        self.rangeDistanceM = rangeDistanceM
        self.rangeChangedAt = rangeChangedAt
    }
}

/// A change of a member's range state, applied only if the state is still `expected`.
package struct RangeTransition: Sendable, Hashable {
    package var member: UserID
    package var expected: RangeState?
    package var new: RangeState
    package var distanceM: Double
    package var at: Timestamp

    package init(member: UserID, expected: RangeState?, new: RangeState, distanceM: Double, at: Timestamp) {
        self.member = member
        self.expected = expected
        self.new = new
        self.distanceM = distanceM
        self.at = at
    }
}

/// How adding a member went.
package enum GroupJoinOutcome: Sendable, Equatable {
    case joined
    case alreadyMember
    /// The guide removed this user; they cannot join again.
    case removed
}
