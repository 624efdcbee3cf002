package import DBeaconCore

/// Live state and the event log.
package protocol EventStore: Sendable {
    /// Writes many fence updates in one transaction (group commit).
    func applyFenceUpdates(_ updates: [FenceUpdate]) async throws
    /// Fence states of every user, and the locations received since `since`.
    func loadFenceSnapshot(locationsSince since: Timestamp) async throws -> (locations: [UserLocation], states: [UserID: [FenceState]])
    /// Whether several server processes decide fences on this store (PostGIS). Their fence
    /// decisions then go through `decideFence`, so no user needs to be routed to one node.
    var sharedFenceState: Bool { get }
    /// One fence decision under per-user locks that several processes respect, in one
    /// transaction: locks `users`, then the users located in any of `boxes` or inside any of
    /// `beacons` (their states may change too), reads the locations and states of all of them,
    /// calls `decide` with that snapshot and writes the update it returns. Deadlocks between
    /// decisions are retried.
    func decideFence<T: Sendable>(lock users: [UserID], near boxes: [BoundingBox], inside beacons: [BeaconID],
                                  _ decide: @escaping @Sendable (FenceSnapshot) async throws -> (FenceUpdate, T)) async throws -> T
    /// Users with a fence state due at `now`: not yet dwelled and entered at or before
    /// `enteredBefore`, or last sighted at or before `sightedBefore`.
    func fenceUsersDue(enteredBefore: Timestamp, sightedBefore: Timestamp) async throws -> [UserID]
    /// Appends events (with their outbox rows) in one transaction.
    func appendEvents(_ events: [Event]) async throws
    /// Events addressed to `recipient` (all when nil), oldest first, after a log position.
    func events(recipient: UserID?, after: Int64?, limit: Int) async throws -> Page<Event>
    /// Events of `types` addressed to `recipient` after a log position, oldest first, and the
    /// newest position of the log when they were read (`through`): every such event up to it is
    /// in the page unless `next` is set. One read, so a reader can move past the events of
    /// other types without reading them.
    func events(recipient: UserID, after: Int64, types: [EventType], limit: Int) async throws -> (page: Page<Event>, through: Int64)
    /// The position of the newest event in the log (0 when empty): a stream starts after it.
    func latestEventPosition() async throws -> Int64
    /// Positions and recipients of the events after `after`, oldest first, at most `limit`
    /// (what the event streams' notifier reads to know whom to wake).
    func eventRecipients(after: Int64, limit: Int) async throws -> [(position: Int64, recipient: UserID)]
    /// Log position of an event, to resume after it.
    func eventPosition(id: EventID) async throws -> Int64?
    /// Deletes events older than `before` (retention); returns how many.
    func deleteEvents(before: Timestamp) async throws -> Int

    /// Beacons whose lifetime started / ended in `(after, upTo]`.
    func lifetimeTransitions(after: Timestamp, upTo: Timestamp) async throws -> (started: [Beacon], ended: [Beacon])
    /// Beacons of `service` whose lifetime starts in `(after, upTo]` (reminders ahead of a start).
    func upcomingStarts(service: String, after: Timestamp, upTo: Timestamp) async throws -> [Beacon]
    /// Fans lifetime events out to followers and records that transitions up to `upTo` are done.
    func commitLifetimeTick(upTo: Timestamp, fanOuts: [(beacon: BeaconID, fanOut: FollowerFanOut)]) async throws
}
