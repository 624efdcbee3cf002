import CPrefetch
package import DBeaconCore
import DBeaconGeo
package import DBeaconStore

/// The fence state machine per (user, beacon), without I/O: state and inputs in, the store
/// operations (`FenceUpdate`) and events out. `FenceEngine` fetches what a decision needs
/// (coverage, beacons), calls one of these methods, and commits the update.
///
/// The rules: `beacon.entered` when a fix falls in a visible, alive beacon; `beacon.exited`
/// once the user is outside by the cushion (max of `exitCushionM` and the fix's accuracy), or
/// the beacon became invisible, ended or was deleted; `beacon.dwelled` after the dwell time.
/// A sighting of a physical beacon puts the user inside its digital beacon whatever the
/// perimeter; while the last sighting is younger than `sightingExitSeconds`, fixes do not exit
/// the user; once sightings lapse, a fix taken at or after the last sighting inside the
/// perimeter hands the state over to the geofence, otherwise the user exits
/// (`sighting_timeout`). Containment is decided again when a user moves and when a beacon moves
/// or changes (users near it, found through `UserGrid`).
///
/// Every method is deterministic given its inputs (`now` included), apart from the random ids
/// of the events it creates.
package struct FenceEvaluator: Sendable {
    package let config: FenceConfig

    package private(set) var locations: [UserID: UserLocation] = [:]
    private var inside: [UserID: UserStates] = [:]
    /// Reverse index: who is inside each beacon.
    private var holders: [BeaconID: Set<UserID>] = [:]
    /// Counts `setState`/`removeState` calls: a batch of fixes that made none has no states to diff.
    private var stateWrites = 0
    /// Inside states whose dwell event is still due.
    private var dwellPending: Set<FenceKey> = []
    /// Inside states held by sightings (their exit timeout runs in `tick`).
    private var sightingPending: Set<FenceKey> = []
    private var grid = UserGrid()

    struct FenceKey: Hashable, Sendable {
        let user: UserID
        let beacon: BeaconID
    }

    package init(config: FenceConfig) {
        self.config = config
    }

    /// The state as loaded from the store.
    package init(config: FenceConfig, locations: [UserLocation], states: [UserID: [FenceState]]) {
        self.config = config
        for l in locations {
            self.locations[l.user] = l
            grid.move(l.user, to: l.position)
        }
        for (user, list) in states {
            for s in list { setState(user, s) }
        }
    }

    /// Replaces what this evaluator knows of `users` with what `other` knows (a decision made
    /// on a fresher copy of their state, read from a store other processes write too).
    ///
    /// Only the states that differ are written (both lists are in beacon id order): a fix
    /// changes few or none of a user's states, and removing and setting every one of them (a
    /// hash table and two sets each) was 4 % of a PostgreSQL node's CPU under fixes at 100k.
    package mutating func adopt(_ users: [UserID], from other: FenceEvaluator) {
        for user in users {
            let old = inside[user]?.states ?? [], new = other.inside[user]?.states ?? []
            var i = 0, j = 0
            while i < old.count || j < new.count {
                if j == new.count || (i < old.count && old[i].beacon < new[j].beacon) {
                    removeState(user, old[i].beacon)
                    i += 1
                } else if i == old.count || new[j].beacon < old[i].beacon {
                    setState(user, new[j])
                    j += 1
                } else {
                    if old[i] != new[j] { setState(user, new[j]) }
                    i += 1
                    j += 1
                }
            }
            if let location = other.locations[user] {
                locations[user] = location
                grid.move(user, to: location.position)
            }
        }
    }

    // MARK: Reading the state

    /// The beacons a user is inside, in id order.
    package func insideBeacons(of user: UserID) -> [BeaconID] {
        inside[user]?.states.map(\.beacon) ?? []
    }

    /// A user's state in one beacon, if inside.
    package func state(of user: UserID, in beacon: BeaconID) -> FenceState? {
        inside[user]?[beacon]
    }

    /// Whether a fix at `t` is newer than the user's last one (older ones change nothing), or
    /// of the same instant but elsewhere: protocols that stamp whole seconds (OwnTracks' `tst`)
    /// send two fixes of one second, and the later one moved.
    package func accepts(_ user: UserID, at t: Timestamp, position: Position? = nil) -> Bool {
        guard let last = locations[user] else { return true }
        return t > last.fixAt || (t == last.fixAt && position.map { $0 != last.position } ?? false)
    }

    /// The beacons `applyFixes(fixes, coverage)` needs that are not among `known`: those a fix
    /// covers and the user is not inside yet (entries), those the user is inside and a fix does
    /// not cover (exit cushions), and those whose dwell event falls due (their names). Beacons
    /// the user stays inside need only their ids: at 1M beacons a user is inside about twenty,
    /// and copying them all for every fix was most of a fix's cost.
    package func beaconsNeeded<Known>(user: UserID, fixes: [LocationFix], coverage: [[BeaconID]],
                                      known: [BeaconID: Known]) -> Set<BeaconID> {
        needs(user: user, fixes: fixes, coverage: coverage, known: known).beacons
    }

    /// `beaconsNeeded`, and the beacons whose perimeters the batch reads, known or not: those it
    /// may leave (an exit is judged on the perimeter's cushion), and, with more than one fix,
    /// those covered by some fixes but not all (entered, then left within the batch). A beacon
    /// it enters or names in a dwell event is read for its visibility and name only. One pass
    /// over the user's states.
    package func needs<Known>(user: UserID, fixes: [LocationFix], coverage: [[BeaconID]],
                              known: [BeaconID: Known]) -> (beacons: Set<BeaconID>, perimeters: Set<BeaconID>) {
        var missing = Set<BeaconID>(), perimeters = Set<BeaconID>()
        let states = inside[user] ?? UserStates()
        guard let last = fixes.map(\.timestamp).max() else { return (missing, perimeters) }
        func unknown(_ id: BeaconID) -> Bool { known.isEmpty || known.index(forKey: id) == nil }
        for list in coverage {
            let uncovered = states.uncovered(by: list) { id in
                if unknown(id) { missing.insert(id) }
            }
            for i in uncovered { // exit cushions
                let id = states.states[i].beacon
                perimeters.insert(id)
                if unknown(id) { missing.insert(id) }
            }
        }
        if coverage.count > 1 {
            let everywhere = coverage.dropFirst().reduce(Set(coverage[0])) { $0.intersection($1) }
            for list in coverage { for id in list where !everywhere.contains(id) { perimeters.insert(id) } }
        }
        for state in states.states where !state.dwelled && last.seconds(since: state.enteredAt) >= config.dwellSeconds
            && unknown(state.beacon) {
            missing.insert(state.beacon)
        }
        return (missing, perimeters)
    }

    /// The beacons `tick(now:beacons:)` will need: dwell events due and sightings lapsed.
    package func beaconsDueForTick(now: Timestamp) -> Set<BeaconID> {
        var ids = Set<BeaconID>()
        for key in dwellPending {
            if let s = inside[key.user]?[key.beacon], now.seconds(since: s.enteredAt) >= config.dwellSeconds { ids.insert(key.beacon) }
        }
        for key in sightingPending {
            if let seen = inside[key.user]?[key.beacon]?.sightedAt, now.seconds(since: seen) >= config.sightingExitSeconds {
                ids.insert(key.beacon)
            }
        }
        return ids
    }

    // MARK: Location fixes

    /// What a batch of fixes of one user did.
    package struct FixOutcome: Sendable {
        /// The store operations: locations, states, removed states, moves, and every event.
        package var update: FenceUpdate
        /// The events of the fixes themselves (addressed to the user), in order.
        package var userEvents: [Event]
        package var accepted: Int
        package var ignored: Int
        /// The user's location after the batch, when a fix was accepted.
        package var location: UserLocation?
    }

    /// An exit cushion judged before the decision: whether the fix at `point` lies within
    /// `limit` metres of beacon `beacon`'s perimeter (`PerimeterDistance.isWithin`).
    package struct Cushion: Hashable, Sendable {
        package var beacon: BeaconID
        package var point: Position
        package var limit: Double

        package init(beacon: BeaconID, point: Position, limit: Double) {
            self.beacon = beacon
            self.point = point
            self.limit = limit
        }
    }

    /// The exit cushion of a fix: `exitCushionM`, or its accuracy when that is larger.
    package func cushion(of fix: LocationFix) -> Double { max(config.exitCushionM, fix.accuracyM) }

    /// Applies a batch of fixes (sorted by time). `coverage[i]` are the ids of the beacons
    /// covering fix `i` (visible to the user and alive then), `known` every beacon the decision
    /// may need by id (at least `beaconsNeeded`; a covering id missing from it was deleted
    /// meanwhile and is not entered), `tracking` the beacons that follow this user's location.
    /// `cushions`: exit cushions judged already (by the index, from its compact vertices), for
    /// beacons in `known` without their perimeters.
    package mutating func applyFixes(user: UserID, fixes: [LocationFix], coverage: [[BeaconID]], known: [BeaconID: Beacon],
                                     tracking: [Beacon], cushions: [Cushion: Bool] = [:], now: Timestamp) -> FixOutcome {
        let before = inside[user] ?? UserStates()
        let writesBefore = stateWrites
        var update = FenceUpdate()
        var events: [Event] = []
        var accepted = 0, ignored = 0
        var lastAccepted: LocationFix?
        for (i, fix) in fixes.enumerated() {
            guard accepts(user, at: fix.timestamp, position: fix.position) else {
                ignored += 1
                continue
            }
            accepted += 1
            lastAccepted = fix
            events += step(user: user, fix: fix, covering: coverage[i], known: known, cushions: cushions, now: now)
            locations[user] = UserLocation(user: user, position: fix.position, accuracyM: fix.accuracyM, fixAt: fix.timestamp,
                                           receivedAt: now)
            grid.move(user, to: fix.position)
        }
        var location: UserLocation?
        if let lastAccepted, let current = locations[user] {
            location = current
            update.locations.append(current)
            if stateWrites != writesBefore { diff(user: user, before: before, into: &update) }
            for var beacon in tracking {
                beacon.location = lastAccepted.position
                update.moves.append((beacon.id, beacon.location, beacon.perimeter.radiusM))
                reevaluate(beacon, at: lastAccepted.timestamp, reason: "moved", except: user, now: now, into: &update)
            }
        }
        update.events = events + update.events
        return FixOutcome(update: update, userEvents: events, accepted: accepted, ignored: ignored, location: location)
    }

    /// One fix: enters covering beacons, exits the others beyond the cushion; the user's events.
    private mutating func step(user: UserID, fix: LocationFix, covering: [BeaconID], known: [BeaconID: Beacon],
                               cushions: [Cushion: Bool], now: Timestamp) -> [Event] {
        var events: [Event] = []
        var entering: [Beacon] = []
        var leaving: [BeaconID] = []
        do {
            // The user's states looked up once; changed after the scan, so this copy is gone
            // before they change (no copy-on-write of them).
            let states = inside[user] ?? UserStates()
            let uncovered = states.uncovered(by: covering) { id in
                // A beacon that moves with this user never contains them.
                guard let beacon = known[id], !(beacon.tracksOwner && beacon.owner == user) else { return }
                entering.append(beacon)
            }
            leaving = uncovered.map { states.states[$0].beacon } // in id order
        }
        // In id order, as exits: the index's own order depends on its history (which slots
        // deleted beacons freed), and no answer may (noninterference; erasure).
        entering.sort { $0.id < $1.id }
        for beacon in entering {
            setState(user, FenceState(beacon: beacon.id, enteredAt: fix.timestamp, dwelled: false))
            events.append(Self.fenceEvent(.entered, user: user, beacon: beacon, at: fix.timestamp, position: fix.position,
                                          accuracy: fix.accuracyM, reason: nil, now: now))
        }
        for id in leaving {
            guard let beacon = known[id] else {
                removeState(user, id)  // deleted: its followers hear beacon.deleted instead
                continue
            }
            // Judged now as well as at the fix's time: a backdated fix cannot reach into a lifetime
            // that has ended or a group the user has left.
            let available = beacon.covers(.user(user), at: fix.timestamp, now: now)
            if available {
                if let seen = inside[user]?[id]?.sightedAt, fix.timestamp.seconds(since: seen) < config.sightingExitSeconds { continue }
                let limit = cushion(of: fix)
                if cushions[Cushion(beacon: id, point: fix.position, limit: limit)]
                    ?? PerimeterDistance.isWithin(limit, of: beacon.perimeter, center: beacon.location, point: fix.position) { continue }
            }
            removeState(user, id)
            events.append(Self.shared(beacon, with: user, at: fix.timestamp)
                ? Self.fenceEvent(.exited, user: user, beacon: beacon, at: fix.timestamp, position: fix.position,
                                  accuracy: fix.accuracyM, reason: available ? nil : "ended", now: now)
                : Self.lossNotice(user: user, beacon: beacon.id, at: fix.timestamp, now: now))
        }
        events += dwellEvents(user: user, at: fix.timestamp, names: known, now: now)
        return events
    }

    private mutating func dwellEvents(user: UserID, at t: Timestamp, names: [BeaconID: Beacon], now: Timestamp) -> [Event] {
        var events: [Event] = []
        let states = inside[user]?.states ?? []
        guard states.contains(where: { !$0.dwelled && t.seconds(since: $0.enteredAt) >= config.dwellSeconds }) else { return [] }
        for state in states where !state.dwelled && t.seconds(since: state.enteredAt) >= config.dwellSeconds { // in id order
            var s = state
            s.dwelled = true
            setState(user, s)
            events.append(Self.dwellEvent(user: user, beacon: state.beacon, name: names[state.beacon]?.name, since: state.enteredAt,
                                          at: t, now: now))
        }
        return events
    }

    // MARK: Beacon changes

    /// Enters users now covered by a changed beacon and exits those no longer in it.
    package mutating func beaconChanged(_ beacon: Beacon, reason: String, now: Timestamp) -> FenceUpdate {
        var update = FenceUpdate()
        reevaluate(beacon, at: now, reason: reason, except: nil, now: now, into: &update)
        return update
    }

    /// Forgets a deleted beacon (the store's cascade already removed its states).
    /// Forgets everything about a user (an erased account): location, states, pending dwells
    /// and sightings. Nothing is written: the erasure deleted their rows.
    package mutating func forget(_ user: UserID) {
        for state in inside[user]?.states ?? [] { removeState(user, state.beacon) }
        locations[user] = nil
        grid.remove(user)
    }

    package mutating func beaconDeleted(_ id: BeaconID) {
        for user in holders[id] ?? [] { removeState(user, id) }
        holders[id] = nil
    }

    private mutating func reevaluate(_ beacon: Beacon, at t: Timestamp, reason: String, except: UserID?, now: Timestamp,
                                     into update: inout FenceUpdate) {
        let tester = PerimeterTester(location: beacon.location, perimeter: beacon.perimeter)
        var candidates = holders[beacon.id] ?? []
        for box in Self.searchBoxes(of: beacon) { candidates.formUnion(grid.users(in: box)) }
        for user in candidates.sorted() where user != except && !(beacon.tracksOwner && user == beacon.owner) {
            let available = beacon.covers(.user(user), at: t, now: t)
            if let seen = inside[user]?[beacon.id]?.sightedAt, t.seconds(since: seen) < config.sightingExitSeconds {
                // Held by a recent sighting: only losing sight of the beacon exits.
                if available { continue }
                removeState(user, beacon.id)
                update.removed.append((user, beacon.id))
                update.events.append(Self.shared(beacon, with: user, at: t)
                    ? Self.presenceEvent(.exited, user: user, beacon: beacon, at: t, data: ["reason": .string(reason)], now: now)
                    : Self.lossNotice(user: user, beacon: beacon.id, at: t, now: now))
                continue
            }
            guard let location = locations[user] else { continue }
            let covered = available && tester.covers(location.position)
            let isInside = inside[user]?[beacon.id] != nil
            if !isInside && covered && now.seconds(since: location.receivedAt) <= config.presenceTTLSeconds {
                let state = FenceState(beacon: beacon.id, enteredAt: t, dwelled: false)
                setState(user, state)
                update.states.append((user, state))
                update.events.append(Self.fenceEvent(.entered, user: user, beacon: beacon, at: t, position: location.position,
                                                     accuracy: location.accuracyM, reason: reason, now: now))
            } else if isInside && !covered {
                if available {
                    let cushion = max(config.exitCushionM, location.accuracyM)
                    if PerimeterDistance.isWithin(cushion, of: beacon.perimeter, center: beacon.location, point: location.position) { continue }
                }
                removeState(user, beacon.id)
                update.removed.append((user, beacon.id))
                update.events.append(Self.shared(beacon, with: user, at: t)
                    ? Self.fenceEvent(.exited, user: user, beacon: beacon, at: t, position: location.position,
                                      accuracy: location.accuracyM, reason: reason, now: now)
                    : Self.lossNotice(user: user, beacon: beacon.id, at: t, now: now))
            }
        }
    }

    /// Where users a beacon may now cover can stand: its perimeter's boxes.
    package static func searchBoxes(of beacon: Beacon) -> [BoundingBox] {
        beacon.perimeter.isCircle
            ? Geodesy.boundingBoxes(center: beacon.location, radiusM: beacon.perimeter.radiusM ?? 0)
            : beacon.perimeter.polygons.map { BoundingBox(of: $0.exterior) }
    }

    // MARK: Presence from sightings

    /// Sightings of physical beacons standing for (resolved, visible) digital beacons: each puts
    /// the user inside (`beacon.entered`, reason `sighting`) or refreshes the presence.
    package mutating func presence(user: UserID, sightings: [PresenceSighting], now: Timestamp) -> FenceUpdate {
        var latest: [BeaconID: PresenceSighting] = [:]
        for var s in sightings where now.seconds(since: s.at) < config.sightingExitSeconds && !(s.beacon.tracksOwner && s.beacon.owner == user) {
            s.at = min(s.at, now)  // a device clock running ahead must not prolong the presence
            if let known = latest[s.beacon.id], known.at >= s.at { continue }
            latest[s.beacon.id] = s
        }
        var update = FenceUpdate()
        for (id, s) in latest.sorted(by: { $0.key < $1.key }) {
            guard s.beacon.covers(.user(user), at: s.at, now: s.at) else { continue }
            if var state = inside[user]?[id] {
                if let seen = state.sightedAt, seen >= s.at { continue }
                state.sightedAt = s.at
                setState(user, state)
                update.states.append((user, state))
            } else {
                let state = FenceState(beacon: id, enteredAt: s.at, dwelled: false, sightedAt: s.at)
                setState(user, state)
                update.states.append((user, state))
                var data: JSONObject = ["reason": "sighting"]
                if let p = s.installedAt { data["location"] = .object(["lat": .number(p.lat), "lon": .number(p.lon)]) }
                if let d = s.distanceM { data["distance_m"] = .number(d) }
                if let entry = s.registryEntry { data["registry_entry"] = .string(entry.rawValue) }
                update.events.append(Self.presenceEvent(.entered, user: user, beacon: s.beacon, at: s.at, data: data, now: now))
            }
        }
        return update
    }

    // MARK: Region crossings reported by the phone

    /// Entries and exits the phone decided itself (region monitoring, `POST /v1/me/region-events`):
    /// applied in time order, an entry for a region the user is not inside enters them, an exit
    /// for one they are inside exits them (reason `region`); repeats change nothing. No location
    /// is stored: this is the privacy-friendly mode. Dwell times then run as for any entry.
    package mutating func regionCrossings(user: UserID, _ crossings: [RegionCrossing], now: Timestamp) -> FenceUpdate {
        var update = FenceUpdate()
        for c in crossings.sorted(by: { ($0.at, $0.beacon.id) < ($1.at, $1.beacon.id) }) {
            guard !(c.beacon.tracksOwner && c.beacon.owner == user) else { continue }
            var data: JSONObject = ["reason": "region"]
            if let region = c.region { data["region"] = .string(region) }
            if c.entered {
                guard inside[user]?[c.beacon.id] == nil, c.beacon.covers(.user(user), at: c.at, now: c.at) else { continue }
                let state = FenceState(beacon: c.beacon.id, enteredAt: c.at, dwelled: false)
                setState(user, state)
                update.states.append((user, state))
                update.events.append(Self.presenceEvent(.entered, user: user, beacon: c.beacon, at: c.at, data: data, now: now))
            } else {
                guard inside[user]?[c.beacon.id] != nil else { continue }
                removeState(user, c.beacon.id)
                update.removed.append((user, c.beacon.id))
                update.events.append(Self.presenceEvent(.exited, user: user, beacon: c.beacon, at: c.at, data: data, now: now))
            }
        }
        return update
    }

    // MARK: Time passing

    /// Dwell events for users inside long enough, and exits (or hand-overs to the geofence) of
    /// users whose sightings lapsed. `beacons` holds those of `beaconsDueForTick(now:)` that
    /// still exist.
    package mutating func tick(now: Timestamp, beacons: [BeaconID: Beacon]) -> FenceUpdate {
        let due = dwellPending.filter { key in
            guard let s = inside[key.user]?[key.beacon] else { return false }
            return now.seconds(since: s.enteredAt) >= config.dwellSeconds
        }
        let lapsed = sightingPending.filter { key in
            guard let seen = inside[key.user]?[key.beacon]?.sightedAt else { return false }
            return now.seconds(since: seen) >= config.sightingExitSeconds
        }
        var update = FenceUpdate()
        sightingTimeouts(lapsed, beacons: beacons, now: now, into: &update)
        for key in due.sorted(by: { ($0.user, $0.beacon) < ($1.user, $1.beacon) }) {
            guard var s = inside[key.user]?[key.beacon], !s.dwelled, let b = beacons[key.beacon] else { continue }
            s.dwelled = true
            setState(key.user, s)
            update.states.append((key.user, s))
            update.events.append(Self.dwellEvent(user: key.user, beacon: key.beacon, name: b.name, since: s.enteredAt, at: now, now: now))
        }
        return update
    }

    private mutating func sightingTimeouts(_ lapsed: Set<FenceKey>, beacons: [BeaconID: Beacon], now: Timestamp,
                                           into update: inout FenceUpdate) {
        for key in lapsed.sorted(by: { ($0.user, $0.beacon) < ($1.user, $1.beacon) }) {
            guard var state = inside[key.user]?[key.beacon], let seen = state.sightedAt,
                  now.seconds(since: seen) >= config.sightingExitSeconds else { continue }
            guard let beacon = beacons[key.beacon] else {
                removeState(key.user, key.beacon)  // deleted: its followers hear beacon.deleted instead
                continue
            }
            let available = beacon.covers(.user(key.user), at: now, now: now)
            // The latest fix, if taken at or after the last sighting (the indoor position estimated
            // from that very batch counts: standing still must not exit, then re-enter, the user),
            // decides: inside the perimeter, the geofence takes over. Only inside: a fix near the
            // edge of a small perimeter, with sightings gone, is someone walking away, and after
            // a handover nothing but a later fix could exit them.
            if available, let location = locations[key.user], location.fixAt >= seen,
               now.seconds(since: location.receivedAt) <= config.presenceTTLSeconds,
               PerimeterTester(location: beacon.location, perimeter: beacon.perimeter).covers(location.position) {
                state.sightedAt = nil
                setState(key.user, state)
                update.states.append((key.user, state))
                continue
            }
            removeState(key.user, key.beacon)
            update.removed.append((key.user, key.beacon))
            update.events.append(Self.shared(beacon, with: key.user, at: now)
                ? Self.presenceEvent(.exited, user: key.user, beacon: beacon, at: seen.adding(seconds: config.sightingExitSeconds),
                                     data: ["reason": .string(available ? "sighting_timeout" : "ended"), "last_sighted_at": .string(seen.rfc3339)],
                                     now: now)
                : Self.lossNotice(user: key.user, beacon: key.beacon, at: now, now: now))
        }
    }

    // MARK: State bookkeeping

    private mutating func setState(_ user: UserID, _ state: FenceState) {
        stateWrites &+= 1
        inside[user, default: UserStates()][state.beacon] = state
        holders[state.beacon, default: []].insert(user)
        let key = FenceKey(user: user, beacon: state.beacon)
        if state.dwelled { dwellPending.remove(key) } else { dwellPending.insert(key) }
        if state.sightedAt == nil { sightingPending.remove(key) } else { sightingPending.insert(key) }
    }

    private mutating func removeState(_ user: UserID, _ beacon: BeaconID) {
        stateWrites &+= 1
        inside[user]?[beacon] = nil
        if inside[user]?.isEmpty == true { inside[user] = nil }
        holders[beacon]?.remove(user)
        if holders[beacon]?.isEmpty == true { holders[beacon] = nil }
        dwellPending.remove(FenceKey(user: user, beacon: beacon))
        sightingPending.remove(FenceKey(user: user, beacon: beacon))
    }

    /// Turns the difference between two state maps of a user into store operations.
    private func diff(user: UserID, before: UserStates, into update: inout FenceUpdate) {
        let after = inside[user] ?? UserStates()
        for state in after.states where before[state.beacon] != state { update.states.append((user, state)) }
        for state in before.states where after[state.beacon] == nil { update.removed.append((user, state.beacon)) }
    }

    // MARK: Events

    static func fenceEvent(_ type: EventType, user: UserID, beacon: Beacon, at: Timestamp, position: Position,
                           accuracy: Double, reason: String?, now: Timestamp) -> Event {
        var data: JSONObject = [
            "beacon": .string(beacon.id.rawValue), "name": .string(beacon.name), "at": .string(at.rfc3339),
            "location": .object(["lat": .number(position.lat), "lon": .number(position.lon)]), "accuracy_m": .number(accuracy),
        ]
        if let reason { data["reason"] = .string(reason) }
        return Event(type: type, createdAt: now, recipient: user, beacon: beacon.id, data: data)
    }

    /// Whether the beacon is still shared with the user (public, theirs, or they are a member),
    /// whatever its lifetime: an exit from it is an ordinary one (its lifetime may have ended);
    /// otherwise they lost access and hear only `lossNotice`.
    static func shared(_ beacon: Beacon, with user: UserID, at t: Timestamp) -> Bool {
        beacon.allows(.lossNotice, to: .user(user), at: t)
    }

    /// `beacon.exited` with reason `unavailable`: the user was inside a beacon that they may no
    /// longer see (made private, their access revoked, its lifetime ended for them). The one
    /// event about it that still reaches them (`Event.isAccessLossNotice`), so it carries nothing
    /// but its id and when: not its name or anything else it may have become.
    static func lossNotice(user: UserID, beacon: BeaconID, at: Timestamp, now: Timestamp) -> Event {
        Event(type: .exited, createdAt: now, recipient: user, beacon: beacon,
              data: ["beacon": .string(beacon.rawValue), "reason": "unavailable", "at": .string(at.rfc3339)])
    }

    /// `beacon.entered` / `beacon.exited` decided by sightings: `{"beacon","name","at",…}`.
    static func presenceEvent(_ type: EventType, user: UserID, beacon: Beacon, at: Timestamp, data extra: JSONObject,
                              now: Timestamp) -> Event {
        var data: JSONObject = ["beacon": .string(beacon.id.rawValue), "name": .string(beacon.name), "at": .string(at.rfc3339)]
        for (k, v) in extra.members { data[k] = v }
        return Event(type: type, createdAt: now, recipient: user, beacon: beacon.id, data: data)
    }

    static func dwellEvent(user: UserID, beacon: BeaconID, name: String?, since: Timestamp, at: Timestamp, now: Timestamp) -> Event {
        Event(type: .dwelled, createdAt: now, recipient: user, beacon: beacon, data: [
            "beacon": .string(beacon.rawValue), "name": .optional(name), "since": .string(since.rfc3339),
            "dwell_s": .number(at.seconds(since: since)),
        ])
    }
}

/// One user's fence states, sorted by beacon id. A user is inside a few dozen beacons at most:
/// a sorted array is compact (a fix reads a few cache lines, where a hash table's probes land
/// on as many lines as lookups), needs no hashing, and lists the beacons in id order as answers do.
package struct UserStates: Sendable {
    package private(set) var states: [FenceState] = []

    package init() {}

    package var isEmpty: Bool { states.isEmpty }

    /// The index of `id`'s state, or where it would go.
    private func position(of id: BeaconID) -> (index: Int, found: Bool) {
        var low = 0, high = states.count
        while low < high {
            let mid = (low + high) / 2
            let b = states[mid].beacon
            if b == id { return (mid, true) }
            if b < id { low = mid + 1 } else { high = mid }
        }
        return (low, false)
    }

    package subscript(id: BeaconID) -> FenceState? {
        get {
            let p = position(of: id)
            return p.found ? states[p.index] : nil
        }
        set {
            let p = position(of: id)
            switch (newValue, p.found) {
            case (let state?, true): states[p.index] = state
            case (let state?, false): states.insert(state, at: p.index)
            case (nil, true): states.remove(at: p.index)
            case (nil, false): break
            }
        }
    }

    /// Calls `outside` with each id of `covering` (distinct ids) that has no state here, and
    /// returns the indexes, in id order, of the states whose beacon is not among `covering`.
    package func uncovered(by covering: [BeaconID], outside: (BeaconID) -> Void) -> [Int] {
        if states.isEmpty {
            covering.forEach(outside)
            return []
        }
        // A user's states are cold by the next fix: their lines are requested all at once, so
        // the misses overlap instead of coming one per step of each binary search.
        states.withUnsafeBytes { dbeacon_prefetch_range($0.baseAddress, $0.count) }
        if states.count <= 64 { // one bit per state, no allocation
            var covered: UInt64 = 0
            for id in covering {
                let p = position(of: id)
                if p.found { covered |= 1 << UInt64(p.index) } else { outside(id) }
            }
            let all: UInt64 = states.count == 64 ? ~0 : (1 << UInt64(states.count)) - 1
            guard covered != all else { return [] } // the common case: nothing to leave
            return states.indices.filter { covered & (1 << UInt64($0)) == 0 }
        }
        var covered = [Bool](repeating: false, count: states.count)
        for id in covering {
            let p = position(of: id)
            if p.found { covered[p.index] = true } else { outside(id) }
        }
        return covered.indices.filter { !covered[$0] }
    }
}
