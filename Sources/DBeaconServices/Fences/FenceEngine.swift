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
///
/// On a store several server processes share (PostGIS, `sharedFenceState`), each decision is
/// made instead on the users' state as stored, under their cross-process locks, in the
/// transaction that writes it (`EventStore.decideFence`): a user's fixes may reach any node,
/// and a beacon change re-evaluates the standing users once, on the node that made it. The
/// memory copy then only serves reads (`insideBeacons`, `location`).
package actor FenceEngine {
    private let store: any DBeaconStore
    private let engine: any CoverageEngine
    private let committer: GroupCommitter<FenceUpdate>
    private let clock: any WallClock
    package nonisolated let config: FenceConfig

    private var evaluator: FenceEvaluator
    private var needsReload = true
    /// Services told about accepted fixes (group range alerts, tour progress).
    private var listeners: [any LocationListener] = []
    /// Users whose accounts are being or were erased in this process: their fixes are refused.
    private var erased = Set<UserID>()

    package init(store: any DBeaconStore, engine: any CoverageEngine, committer: GroupCommitter<FenceUpdate>, clock: any WallClock,
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

    /// Forgets a user whose account is about to be erased, and refuses their fixes from now on;
    /// returns once every update decided before is committed (so none of theirs lands after
    /// the erasure). `restore` undoes the refusal if the erasure did not happen.
    package func forget(_ user: UserID) async throws {
        erased.insert(user)
        evaluator.forget(user)
        try await awaitCommit(committer.enqueue(FenceUpdate()))
    }

    /// Accepts a user's fixes again after an erasure that failed (their state is reloaded).
    package func restore(_ user: UserID) {
        erased.remove(user)
        needsReload = true
    }

    private func checkNotErased(_ user: UserID) throws {
        if erased.contains(user) { throw DBeaconError.unauthorized("the account no longer exists") }
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
    package nonisolated func report(user: UserID, fixes: [LocationFix]) async throws -> FixReport {
        let sorted = fixes.sorted { $0.timestamp < $1.timestamp }
        // The index lookups run off the actor, so the fixes of many users use every core; only
        // the decision is serial.
        var coverage: [[BeaconID]] = []
        let now = clock.now()
        for fix in sorted {
            // Alive at the fix's time and visible now: a backdated fix does not reach into an
            // ended lifetime or a group the user has left.
            coverage.append(try await engine.coveringIDs(CoverQuery(point: fix.position, at: fix.timestamp, viewer: .user(user),
                                                                    now: now)))
        }
        let tracking = try await engine.trackingBeacons(owner: user)
        var report: FixReport
        switch try await decide(user: user, fixes: sorted, coverage: coverage, tracking: tracking) {
        case .reported(let shared):
            report = shared
        case .decided(let decision):
            // Durability is awaited off the actor, which goes on deciding other users' fixes
            // meanwhile (the update was enqueued in decision order).
            if let ticket = decision.ticket { try await awaitCommit(ticket) }
            report = await Self.finish(user: user, outcome: decision.outcome, inside: decision.inside, listeners: decision.listeners)
        }
        report.coveringNow = coverage.last ?? []
        report.coveringNowAt = sorted.last?.position
        return report
    }

    /// A decision made on the actor: its outcome, the user's beacons after it, the listeners to
    /// tell, and the commit ticket of its update (nil: nothing to write).
    private struct Decision: Sendable {
        var outcome: FenceEvaluator.FixOutcome
        var inside: [BeaconID]
        var listeners: [any LocationListener]
        var ticket: GroupCommitter<FenceUpdate>.Ticket?
    }

    private enum DecideResult: Sendable {
        case decided(Decision)
        /// A shared store's decision, durable already.
        case reported(FixReport)
    }

    private func decide(user: UserID, fixes sorted: [LocationFix], coverage: [[BeaconID]], tracking: [Beacon]) async throws -> DecideResult {
        try checkNotErased(user)
        if needsReload { try await reload() }
        if store.sharedFenceState {
            return .reported(try await reportShared(user: user, fixes: sorted, coverage: coverage, tracking: tracking))
        }
        var known: [BeaconID: Beacon] = [:]
        for b in tracking { known[b.id] = b }
        // Beacons only for what the fixes may enter or leave, and their perimeters only for what
        // they may leave (`needs`). A state added while suspended may need one more round (and a
        // beacon read bare its perimeter); ids still unknown after a fetch were deleted.
        // Exit cushions the index tells from a large polygon's compact vertices need no perimeter.
        var attempted = Set<BeaconID>(), asked = Set<BeaconID>(), judged = Set<BeaconID>()
        var bare = Set<BeaconID>()
        var cushions: [FenceEvaluator.Cushion: Bool] = [:]
        for _ in 0..<3 {
            var needs = evaluator.needs(user: user, fixes: sorted, coverage: coverage, known: known)
            for id in needs.perimeters where asked.insert(id).inserted {
                if judge(id, fixes: sorted, into: &cushions) { judged.insert(id) }
            }
            needs.perimeters.subtract(judged)
            let missing = needs.beacons.subtracting(attempted), completed = needs.perimeters.intersection(bare)
            if missing.isEmpty && completed.isEmpty { break }
            attempted.formUnion(missing)
            for id in completed { known[id] = nil } // deleted meanwhile, unless read again
            bare.subtract(completed)
            let read = try await Self.read(missing.union(completed), perimeters: needs.perimeters, from: engine)
            for b in read.whole { known[b.id] = b }
            for b in read.bare {
                known[b.id] = b
                bare.insert(b.id)
            }
        }

        // The decision: no suspension from here to the enqueue.
        try checkNotErased(user)  // (checked again after the reads above suspended)
        let outcome = evaluator.applyFixes(user: user, fixes: sorted, coverage: coverage, known: known, tracking: tracking,
                                           cushions: cushions, now: clock.now())
        let ticket = outcome.update.isEmpty ? nil : committer.enqueue(outcome.update)
        return .decided(Decision(outcome: outcome, inside: evaluator.insideBeacons(of: user), listeners: listeners, ticket: ticket))
    }

    /// Whether the engine tells every fix's exit cushion of beacon `id` without its perimeter;
    /// the answers go to `cushions`.
    private func judge(_ id: BeaconID, fixes: [LocationFix], into cushions: inout [FenceEvaluator.Cushion: Bool]) -> Bool {
        var answers: [(FenceEvaluator.Cushion, Bool)] = []
        for fix in fixes {
            let cushion = FenceEvaluator.Cushion(beacon: id, point: fix.position, limit: evaluator.cushion(of: fix))
            guard let within = engine.isWithin(cushion.limit, ofPerimeterOf: id, point: cushion.point) else { return false }
            answers.append((cushion, within))
        }
        for (cushion, within) in answers { cushions[cushion] = within }
        return true
    }

    /// The beacons among `ids`, whole where the decision reads their perimeters and bare (without
    /// them, which spares reading a large polygon's vertices) otherwise.
    private static func read(_ ids: Set<BeaconID>, perimeters: Set<BeaconID>,
                             from engine: any CoverageEngine) async throws -> (whole: [Beacon], bare: [Beacon]) {
        let whole = ids.intersection(perimeters), bare = ids.subtracting(perimeters)
        return (whole.isEmpty ? [] : try await engine.beacons(ids: Array(whole), perimeters: true),
                bare.isEmpty ? [] : try await engine.beacons(ids: Array(bare), perimeters: false))
    }

    /// Tells the listeners about an accepted fix; the report for the caller.
    private static func finish(user: UserID, outcome: FenceEvaluator.FixOutcome, inside: [BeaconID],
                               listeners: [any LocationListener]) async -> FixReport {
        var reported = outcome.userEvents
        if let location = outcome.location {
            for listener in listeners {
                reported += await listener.locationAccepted(location, events: outcome.userEvents).filter { $0.recipient == user }
            }
        }
        return FixReport(inside: inside, events: reported, accepted: outcome.accepted, ignored: outcome.ignored)
    }

    /// `report` on a shared store: coverage from the index, the decision on the stored state of
    /// the user (and of the users a moving beacon of theirs may now cover), under their locks.
    private func reportShared(user: UserID, fixes sorted: [LocationFix], coverage: [[BeaconID]], tracking: [Beacon]) async throws -> FixReport {
        var known: [BeaconID: Beacon] = [:]
        for b in tracking { known[b.id] = b }
        var boxes: [BoundingBox] = []
        if let last = sorted.last {
            for var b in tracking {
                b.location = last.position
                boxes += FenceEvaluator.searchBoxes(of: b)
            }
        }
        let (engine, clock, known0, covering) = (self.engine, self.clock, known, coverage)
        let (outcome, decided) = try await decideShared(lock: [user], near: boxes, inside: tracking.map(\.id)) { evaluator in
            var known = known0
            let needs = evaluator.needs(user: user, fixes: sorted, coverage: covering, known: known)
            let read = try await Self.read(needs.beacons, perimeters: needs.perimeters, from: engine)
            for b in read.whole + read.bare { known[b.id] = b }
            let outcome = evaluator.applyFixes(user: user, fixes: sorted, coverage: covering, known: known, tracking: tracking,
                                               now: clock.now())
            return (outcome.update, outcome)
        }
        return await Self.finish(user: user, outcome: outcome, inside: decided.insideBeacons(of: user), listeners: listeners)
    }

    /// A decision on a shared store over the stored state of the users it may touch: `decide`
    /// runs on an evaluator of that state and returns the update to write and a result; the
    /// users' decided state is adopted here. Returns the result and the deciding evaluator.
    private func decideShared<Result: Sendable>(
        lock users: [UserID], near boxes: [BoundingBox], inside beacons: [BeaconID],
        _ decide: @escaping @Sendable (inout FenceEvaluator) async throws -> (FenceUpdate, Result)
    ) async throws -> (result: Result, evaluator: FenceEvaluator) {
        let config = self.config
        let (result, decided, locked) = try await store.decideFence(lock: users, near: boxes, inside: beacons) { snapshot in
            var evaluator = FenceEvaluator(config: config, locations: snapshot.locations, states: snapshot.states)
            let (update, result) = try await decide(&evaluator)
            return (update, (result, evaluator, snapshot.users))
        }
        evaluator.adopt(locked, from: decided)
        return (result, decided)
    }

    /// `decideShared` for decisions whose result is their update.
    private func decideShared(lock users: [UserID], near boxes: [BoundingBox], inside beacons: [BeaconID],
                              _ decide: @escaping @Sendable (inout FenceEvaluator) async throws -> FenceUpdate) async throws -> FenceUpdate {
        try await decideShared(lock: users, near: boxes, inside: beacons) { evaluator in
            let update = try await decide(&evaluator)
            return (update, update)
        }.result
    }

    // MARK: Beacon changes

    /// Re-evaluates who is inside a beacon after it changed (edit, lifetime start or end) and
    /// returns once the resulting events are durable.
    package func beaconChanged(_ beacon: Beacon, reason: String) async throws {
        if needsReload { try await reload() }
        if store.sharedFenceState {
            let now = clock.now()
            _ = try await decideShared(lock: [], near: FenceEvaluator.searchBoxes(of: beacon), inside: [beacon.id]) { evaluator in
                evaluator.beaconChanged(beacon, reason: reason, now: now)
            }
            return
        }
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
        if store.sharedFenceState {
            // Every node ticks; the stored state decides, so each dwell or timeout is reported once.
            let due = try await store.fenceUsersDue(enteredBefore: now.adding(seconds: -config.dwellSeconds),
                                                    sightedBefore: now.adding(seconds: -config.sightingExitSeconds))
            guard !due.isEmpty else { return }
            let engine = self.engine
            _ = try await decideShared(lock: due, near: [], inside: []) { evaluator in
                var byID: [BeaconID: Beacon] = [:]
                for b in try await engine.beacons(ids: Array(evaluator.beaconsDueForTick(now: now))) { byID[b.id] = b }
                return evaluator.tick(now: now, beacons: byID)
            }
            return
        }
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
        try checkNotErased(user)
        if store.sharedFenceState {
            let now = clock.now()
            return try await decideShared(lock: [user], near: [], inside: []) { evaluator in
                evaluator.presence(user: user, sightings: sightings, now: now)
            }.events
        }
        let update = evaluator.presence(user: user, sightings: sightings, now: clock.now())
        try await commit(update)
        return update.events
    }

    // MARK: Region crossings

    /// Applies entries and exits the phone reported (see `FenceEvaluator.regionCrossings`);
    /// returns the events once durable, and the beacons the user is inside.
    package func reportRegions(user: UserID, crossings: [RegionCrossing]) async throws -> (events: [Event], inside: [BeaconID]) {
        if needsReload { try await reload() }
        try checkNotErased(user)
        let now = clock.now()
        if store.sharedFenceState {
            let events = try await decideShared(lock: [user], near: [], inside: []) { evaluator in
                evaluator.regionCrossings(user: user, crossings, now: now)
            }.events
            return (events, evaluator.insideBeacons(of: user))
        }
        let update = evaluator.regionCrossings(user: user, crossings, now: now)
        try await commit(update)
        return (update.events, evaluator.insideBeacons(of: user))
    }

    private func commit(_ update: FenceUpdate) async throws {
        guard !update.isEmpty else { return }
        try await awaitCommit(committer.enqueue(update))
    }

    /// Returns once `ticket`'s batch is durable; a failed commit makes the next decision reload
    /// the state from the store (the in-memory state went ahead of it).
    private nonisolated func awaitCommit(_ ticket: GroupCommitter<FenceUpdate>.Ticket) async throws {
        do {
            try await committer.wait(ticket)
        } catch {
            await invalidate()
            throw error
        }
    }
}
