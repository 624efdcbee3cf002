/// The latest location fix of a user.
package struct UserLocation: Sendable, Hashable {
    package var user: UserID
    package var position: Position
    package var accuracyM: Double
    package var fixAt: Timestamp
    package var receivedAt: Timestamp

    package init(user: UserID, position: Position, accuracyM: Double, fixAt: Timestamp, receivedAt: Timestamp) {
        self.user = user
        self.position = position
        self.accuracyM = accuracyM
        self.fixAt = fixAt
        self.receivedAt = receivedAt
    }
}

/// A user inside a beacon: since when, and whether `beacon.dwelled` was sent.
package struct FenceState: Sendable, Hashable {
    package var beacon: BeaconID
    package var enteredAt: Timestamp
    package var dwelled: Bool
    /// When a physical beacon standing for this beacon was last sighted by the user, if the
    /// presence comes from sightings; while recent, location fixes do not exit the user.
    package var sightedAt: Timestamp?

    package init(beacon: BeaconID, enteredAt: Timestamp, dwelled: Bool, sightedAt: Timestamp? = nil) {
        self.beacon = beacon
        self.enteredAt = enteredAt
        self.dwelled = dwelled
        self.sightedAt = sightedAt
    }
}
