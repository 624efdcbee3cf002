package import DBeaconCore

/// What the fence engine decided for one batch: all of it is written in one transaction,
/// with the events it produced (and their outbox rows).
package struct FenceUpdate: Sendable {
    package var locations: [UserLocation] = []
    /// Fence states to insert or replace.
    package var states: [(user: UserID, state: FenceState)] = []
    /// Fence states to remove (the user left, or the beacon is gone for them).
    package var removed: [(user: UserID, beacon: BeaconID)] = []
    /// New locations of moving beacons (and their circle's search area).
    package var moves: [(beacon: BeaconID, position: Position, radiusM: Double?)] = []
    package var events: [Event] = []

    package init() {}

    package var isEmpty: Bool {
        locations.isEmpty && states.isEmpty && removed.isEmpty && moves.isEmpty && events.isEmpty
    }

    package mutating func append(_ other: FenceUpdate) {
        locations += other.locations
        states += other.states
        removed += other.removed
        moves += other.moves
        events += other.events
    }
}

/// The fence state of some users as stored: what `EventStore.decideFence` hands to a decision.
package struct FenceSnapshot: Sendable {
    /// Every user the decision holds locked (with or without a location or state).
    package var users: [UserID]
    package var locations: [UserLocation]
    package var states: [UserID: [FenceState]]

    package init(users: [UserID], locations: [UserLocation], states: [UserID: [FenceState]]) {
        self.users = users
        self.locations = locations
        self.states = states
    }
}
