package import DBeaconCore

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

/// Live state and the event log.
package protocol EventStore: Sendable {
    /// Writes many fence updates in one transaction (group commit).
    func applyFenceUpdates(_ updates: [FenceUpdate]) async throws
    /// Fence states of every user, and the locations received since `since`.
    func loadFenceSnapshot(locationsSince since: Timestamp) async throws -> (locations: [UserLocation], states: [UserID: [FenceState]])
    /// Appends events (with their outbox rows) in one transaction.
    func appendEvents(_ events: [Event]) async throws
    /// Events addressed to `recipient` (all when nil), oldest first, after a log position.
    func events(recipient: UserID?, after: Int64?, limit: Int) async throws -> Page<Event>
    /// Log position of an event, to resume after it.
    func eventPosition(id: EventID) async throws -> Int64?
    /// Deletes events older than `before` (retention); returns how many.
    func deleteEvents(before: Timestamp) async throws -> Int

    /// Beacons whose lifetime started / ended in `(after, upTo]`.
    func lifetimeTransitions(after: Timestamp, upTo: Timestamp) async throws -> (started: [Beacon], ended: [Beacon])
    /// Fans lifetime events out to followers and records that transitions up to `upTo` are done.
    func commitLifetimeTick(upTo: Timestamp, fanOuts: [(beacon: BeaconID, fanOut: FollowerFanOut)]) async throws
}
