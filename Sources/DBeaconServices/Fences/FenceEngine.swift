package import DBeaconCore
package import DBeaconIndex
package import DBeaconStore

/// Runs the fence state machine (`FenceEvaluator`) against the store: fetches what each
/// decision needs, decides in one actor turn without suspension, enqueues the resulting update
/// to the group committer in decision order, answers once it is durable, and tells the
/// services that react to accepted fixes (`LocationListener`).
///
/// The state lives in memory (the evaluator) and in the database. After a failed commit, or
/// when another process wrote fence states, it is reloaded from the store before the next
/// decision.
package actor FenceEngine {
    private let store: any DBeaconStore
    private let engine: any CoverageEngine
    private let committer: GroupCommitter
    private let clock: any WallClock
    package let config: FenceConfig

    private var evaluator: FenceEvaluator
    private var needsReload = true
    /// Services told about accepted fixes (group range alerts, tour progress).
    private var listeners: [any LocationListener] = []

    package init(store: any DBeaconStore, engine: any CoverageEngine, committer: GroupCommitter, clock: any WallClock,
                 config: FenceConfig = FenceConfig()) {
        self.store = store
        self.engine = engine
        self.committer = committer
        self.clock = clock
        self.config = config
        evaluator = FenceEvaluator(config: config)
    }

    /// Loads locations and fence states from the store (at start-up, and after a failed commit).
    package func reload() async throws {
        let snapshot = try await store.loadFenceSnapshot(locationsSince: Timestamp(millis: 0))
        evaluator = FenceEvaluator(config: config, locations: snapshot.locations, states: snapshot.states)
        needsReload = false
    }

    /// Forgets the in-memory state: the next call reloads it from the store (another process
    /// wrote fence states or locations).
    package func invalidate() {
        needsReload = true
    }

    /// The beacons a user is inside now.
    package func insideBeacons(of user: UserID) -> [BeaconID] {
        evaluator.insideBeacons(of: user)
    }

    /// The user's latest fix.
    package func location(of user: UserID) -> UserLocation? { evaluator.locations[user] }

    /// Registers a service to be told about every accepted fix (see `LocationListener`).
    package func addListener(_ listener: any LocationListener) {
        listeners.append(listener)
    }

    // MARK: Location fixes

    /// Processes a batch of fixes of one user; returns once the outcome is durable.
    package func report(user: UserID, fixes: [LocationFix]) async throws -> FixReport {
        if needsReload { try await reload() }
        let sorted = fixes.sorted { $0.timestamp < $1.timestamp }

        // Everything that needs I/O is fetched before the decision.
        var coverage: [[Beacon]] = []
        for fix in sorted {
            guard evaluator.accepts(user, at: fix.timestamp) else {
                coverage.append([])
                continue
            }
            coverage.append(try await engine.covering(CoverQuery(point: fix.position, at: fix.timestamp, viewer: .user(user))))
        }
        let tracking = try await engine.trackingBeacons(owner: user)
        var known: [BeaconID: Beacon] = [:]
        for list in coverage { for b in list { known[b.id] = b } }
        for b in tracking { known[b.id] = b }
        // Beacons the user is inside but that no fix covers (exit cushions). A state added while
        // suspended may need one more round; ids still unknown after a fetch were deleted.
        var attempted = Set<BeaconID>()
        for _ in 0..<3 {
            let missing = evaluator.unknownInsideBeacons(of: user, known: Set(known.keys)).subtracting(attempted)
            if missing.isEmpty { break }
            attempted.formUnion(missing)
            for b in try await engine.beacons(ids: Array(missing)) { known[b.id] = b }
        }

        // The decision: no suspension from here to the enqueue.
        let outcome = evaluator.applyFixes(user: user, fixes: sorted, coverage: coverage, known: known, tracking: tracking,
                                           now: clock.now())
        try await commit(outcome.update)
        var reported = outcome.userEvents
        if let location = outcome.location {
            for listener in listeners {
                reported += await listener.locationAccepted(location, events: outcome.userEvents).filter { $0.recipient == user }
            }
        }
        return FixReport(inside: evaluator.insideBeacons(of: user), events: reported, accepted: outcome.accepted,
                         ignored: outcome.ignored)
    }

    // MARK: Beacon changes

    /// Re-evaluates who is inside a beacon after it changed (edit, lifetime start or end) and
    /// returns once the resulting events are durable.
    package func beaconChanged(_ beacon: Beacon, reason: String) async throws {
        if needsReload { try await reload() }
        try await commit(evaluator.beaconChanged(beacon, reason: reason, now: clock.now()))
    }

    /// Forgets a deleted beacon (the database cascade already removed its fence states).
    package func beaconDeleted(_ id: BeaconID) {
        evaluator.beaconDeleted(id)
    }

    /// Sends `beacon.dwelled` for users inside long enough who have not moved since, and exits
    /// users whose sightings stopped (see `reportPresence`).
    package func tick() async throws {
        if needsReload { try await reload() }
        let now = clock.now()
        let due = evaluator.beaconsDueForTick(now: now)
        guard !due.isEmpty else { return }
        var byID: [BeaconID: Beacon] = [:]
        for b in try await engine.beacons(ids: Array(due)) { byID[b.id] = b }
        try await commit(evaluator.tick(now: now, beacons: byID))
    }

    // MARK: Presence from sightings

    /// A user sighted physical beacons standing for digital beacons (resolved, visible to the
    /// user): each sighting puts the user inside its digital beacon, whatever its perimeter
    /// says (`beacon.entered` with reason `sighting`), or refreshes the presence. Returns the
    /// events once durable. How presence ends is `FenceEvaluator`'s rule.
    package func reportPresence(user: UserID, sightings: [PresenceSighting]) async throws -> [Event] {
        if needsReload { try await reload() }
        let update = evaluator.presence(user: user, sightings: sightings, now: clock.now())
        try await commit(update)
        return update.events
    }

    private func commit(_ update: FenceUpdate) async throws {
        guard !update.isEmpty else { return }
        let ticket = committer.enqueue(update)
        do {
            try await committer.wait(ticket)
        } catch {
            needsReload = true
            throw error
        }
    }
}
