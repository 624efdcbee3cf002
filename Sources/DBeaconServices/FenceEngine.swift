package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import Foundation

/// Tunables of the fence state machine.
package struct FenceConfig: Sendable {
    /// Inside this long → `beacon.dwelled`.
    package var dwellSeconds = 300.0
    /// A user leaves only when farther outside than max(this, the fix's accuracy).
    package var exitCushionM = 25.0
    /// Locations older than this do not enter users into moving or changed beacons.
    package var presenceTTLSeconds = 900.0
    /// Fixes stamped further in the future than this are refused.
    package var maxFutureSkewSeconds = 300.0
    /// Largest batch of fixes in one request.
    package var maxFixesPerRequest = 1000
    /// A user inside a beacon by sighting its physical beacon exits after this long without
    /// a sighting (iOS reports beacon region exits after about 30 s).
    package var sightingExitSeconds = 30.0

    package init() {}
}

/// One location fix from a device.
package struct LocationFix: Sendable {
    package var position: Position
    package var accuracyM: Double
    package var timestamp: Timestamp

    package init(position: Position, accuracyM: Double, timestamp: Timestamp) {
        self.position = position
        self.accuracyM = accuracyM
        self.timestamp = timestamp
    }
}

/// A sighting of a physical beacon that stands for `beacon` (resolved and visible to the user).
package struct PresenceSighting: Sendable {
    package var beacon: Beacon
    /// When the device saw it.
    package var at: Timestamp
    /// Where the physical beacon is installed, if registered.
    package var installedAt: Position?
    package var distanceM: Double?
    package var registryEntry: RegistryID?

    package init(beacon: Beacon, at: Timestamp, installedAt: Position? = nil, distanceM: Double? = nil, registryEntry: RegistryID? = nil) {
        self.beacon = beacon
        self.at = at
        self.installedAt = installedAt
        self.distanceM = distanceM
        self.registryEntry = registryEntry
    }
}

/// What a batch of fixes did.
package struct FixReport: Sendable {
    /// Beacons the user is inside after the batch.
    package var inside: [BeaconID]
    /// Events addressed to the user that the batch produced.
    package var events: [Event]
    package var accepted: Int
    /// Fixes not newer than the newest already seen: they change nothing.
    package var ignored: Int
}

/// The fence state machine per (user, beacon): `beacon.entered` when a user's fix falls in a
/// visible, alive beacon; `beacon.exited` once the user is outside by the cushion (or the beacon
/// became invisible, ended or was deleted); `beacon.dwelled` after the dwell time. Containment
/// is re-evaluated both when a user moves and when a beacon moves or changes.
///
/// State lives in memory and in the database. Each decision runs in one actor turn without
/// suspension (coverage and beacons are fetched before), its update is enqueued to the group
/// committer in decision order, and the caller is answered once the update is durable.
package actor FenceEngine {
    private let store: any DBeaconStore
    private let engine: any CoverageEngine
    private let committer: GroupCommitter
    private let clock: any WallClock
    package let config: FenceConfig

    private var locations: [UserID: UserLocation] = [:]
    private var inside: [UserID: [BeaconID: FenceState]] = [:]
    /// Reverse index: who is inside each beacon.
    private var holders: [BeaconID: Set<UserID>] = [:]
    /// Inside states whose dwell event is still due.
    private var dwellPending: Set<FenceKey> = []
    /// Inside states held by sightings (their exit timeout runs in `tick()`).
    private var sightingPending: Set<FenceKey> = []
    private var grid = UserGrid()
    private var needsReload = true
    /// Services told about accepted fixes (group range alerts, tour progress).
    private var listeners: [any LocationListener] = []

    struct FenceKey: Hashable {
        let user: UserID
        let beacon: BeaconID
    }

    package init(store: any DBeaconStore, engine: any CoverageEngine, committer: GroupCommitter, clock: any WallClock,
                 config: FenceConfig = FenceConfig()) {
        self.store = store
        self.engine = engine
        self.committer = committer
        self.clock = clock
        self.config = config
    }

    /// Loads locations and fence states from the store (at start-up, and after a failed commit).
    package func reload() async throws {
        let snapshot = try await store.loadFenceSnapshot(locationsSince: Timestamp(millis: 0))
        locations = [:]
        inside = [:]
        holders = [:]
        dwellPending = []
        sightingPending = []
        grid = UserGrid()
        for l in snapshot.locations {
            locations[l.user] = l
            grid.move(l.user, to: l.position)
        }
        for (user, states) in snapshot.states {
            for s in states { setState(user, s) }
        }
        needsReload = false
    }

    /// Forgets the in-memory state: the next call reloads it from the store (another process
    /// wrote fence states or locations).
    package func invalidate() {
        needsReload = true
    }

    /// The beacons a user is inside now.
    package func insideBeacons(of user: UserID) -> [BeaconID] {
        (inside[user] ?? [:]).keys.sorted()
    }

    /// The user's latest fix.
    package func location(of user: UserID) -> UserLocation? { locations[user] }

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
            if let last = locations[user], fix.timestamp <= last.fixAt {
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
            let missing = Set((inside[user] ?? [:]).keys).subtracting(known.keys).subtracting(attempted)
            if missing.isEmpty { break }
            attempted.formUnion(missing)
            for b in try await engine.beacons(ids: Array(missing)) { known[b.id] = b }
        }

        // The decision: no suspension from here to the enqueue.
        let before = inside[user] ?? [:]
        var update = FenceUpdate()
        var events: [Event] = []
        var accepted = 0, ignored = 0
        var lastAccepted: LocationFix?
        for (i, fix) in sorted.enumerated() {
            if let last = locations[user], fix.timestamp <= last.fixAt {
                ignored += 1
                continue
            }
            accepted += 1
            lastAccepted = fix
            let covering = coverage[i].filter { !($0.tracksOwner && $0.owner == user) }
            events += step(user: user, fix: fix, covering: covering, known: known)
            let location = UserLocation(user: user, position: fix.position, accuracyM: fix.accuracyM, fixAt: fix.timestamp,
                                        receivedAt: clock.now())
            locations[user] = location
            grid.move(user, to: fix.position)
        }
        if let lastAccepted, let location = locations[user] {
            update.locations.append(location)
            diff(user: user, before: before, into: &update)
            for var beacon in tracking {
                beacon.location = lastAccepted.position
                update.moves.append((beacon.id, beacon.location, beacon.perimeter.radiusM))
                reevaluate(beacon, at: lastAccepted.timestamp, reason: "moved", except: user, into: &update)
            }
        }
        update.events = events + update.events
        let ticket = committer.enqueue(update)
        do {
            try await committer.wait(ticket)
        } catch {
            needsReload = true
            throw error
        }
        let inside = insideBeacons(of: user)
        var reported = events
        if lastAccepted != nil, let location = locations[user] {
            for listener in listeners {
                reported += await listener.locationAccepted(location, events: events).filter { $0.recipient == user }
            }
        }
        return FixReport(inside: inside, events: reported, accepted: accepted, ignored: ignored)
    }

    /// Applies one fix to the user's states; returns the events for the user.
    private func step(user: UserID, fix: LocationFix, covering: [Beacon], known: [BeaconID: Beacon]) -> [Event] {
        var events: [Event] = []
        let coveringIDs = Set(covering.map(\.id))
        for beacon in covering where inside[user]?[beacon.id] == nil {
            setState(user, FenceState(beacon: beacon.id, enteredAt: fix.timestamp, dwelled: false))
            events.append(fenceEvent(.entered, user: user, beacon: beacon, at: fix.timestamp, position: fix.position,
                                     accuracy: fix.accuracyM, reason: nil))
        }
        for id in (inside[user] ?? [:]).keys.sorted() where !coveringIDs.contains(id) {
            guard let beacon = known[id] else {
                removeState(user, id)  // deleted: its followers hear beacon.deleted instead
                continue
            }
            let available = beacon.isVisible(to: .user(user), at: fix.timestamp) && beacon.isAlive(at: fix.timestamp)
            if available {
                if let seen = inside[user]?[id]?.sightedAt, fix.timestamp.seconds(since: seen) < config.sightingExitSeconds { continue }
                let cushion = max(config.exitCushionM, fix.accuracyM)
                let distance = PerimeterDistance.outside(fix.position, perimeter: beacon.perimeter, center: beacon.location, covered: false)
                if distance < cushion { continue }
            }
            removeState(user, id)
            events.append(fenceEvent(.exited, user: user, beacon: beacon, at: fix.timestamp, position: fix.position,
                                     accuracy: fix.accuracyM, reason: available ? nil : "unavailable"))
        }
        events += dwellEvents(user: user, at: fix.timestamp, names: known)
        return events
    }

    private func dwellEvents(user: UserID, at t: Timestamp, names: [BeaconID: Beacon]) -> [Event] {
        var events: [Event] = []
        for (id, state) in (inside[user] ?? [:]).sorted(by: { $0.key < $1.key })
        where !state.dwelled && t.seconds(since: state.enteredAt) >= config.dwellSeconds {
            var s = state
            s.dwelled = true
            setState(user, s)
            events.append(dwellEvent(user: user, beacon: id, name: names[id]?.name, since: state.enteredAt, at: t))
        }
        return events
    }

    // MARK: Beacon changes

    /// Re-evaluates who is inside a beacon after it changed (edit, lifetime start or end) and
    /// returns once the resulting events are durable.
    package func beaconChanged(_ beacon: Beacon, reason: String) async throws {
        if needsReload { try await reload() }
        var update = FenceUpdate()
        reevaluate(beacon, at: clock.now(), reason: reason, except: nil, into: &update)
        try await commit(update)
    }

    /// Forgets a deleted beacon (the database cascade already removed its fence states).
    package func beaconDeleted(_ id: BeaconID) {
        for user in holders[id] ?? [] { removeState(user, id) }
        holders[id] = nil
    }

    /// Sends `beacon.dwelled` for users inside long enough who have not moved since, and exits
    /// users whose sightings stopped (see `reportPresence`).
    package func tick() async throws {
        if needsReload { try await reload() }
        let now = clock.now()
        let due = dwellPending.filter { key in
            guard let s = inside[key.user]?[key.beacon] else { return false }
            return now.seconds(since: s.enteredAt) >= config.dwellSeconds
        }
        let lapsed = sightingPending.filter { key in
            guard let seen = inside[key.user]?[key.beacon]?.sightedAt else { return false }
            return now.seconds(since: seen) >= config.sightingExitSeconds
        }
        guard !due.isEmpty || !lapsed.isEmpty else { return }
        let beacons = try await engine.beacons(ids: Array(Set(due.map(\.beacon)).union(lapsed.map(\.beacon))))
        var byID: [BeaconID: Beacon] = [:]
        for b in beacons { byID[b.id] = b }
        var update = FenceUpdate()
        sightingTimeouts(lapsed, beacons: byID, now: now, into: &update)
        for key in due.sorted(by: { ($0.user, $0.beacon) < ($1.user, $1.beacon) }) {
            guard var s = inside[key.user]?[key.beacon], !s.dwelled, let b = byID[key.beacon] else { continue }
            s.dwelled = true
            setState(key.user, s)
            update.states.append((key.user, s))
            update.events.append(dwellEvent(user: key.user, beacon: key.beacon, name: b.name, since: s.enteredAt, at: now))
        }
        try await commit(update)
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

    /// Enters users now covered by `beacon` and exits those no longer in it (no suspension).
    private func reevaluate(_ beacon: Beacon, at t: Timestamp, reason: String, except: UserID?, into update: inout FenceUpdate) {
        let tester = PerimeterTester(location: beacon.location, perimeter: beacon.perimeter)
        let boxes = beacon.perimeter.isCircle
            ? Geodesy.boundingBoxes(center: beacon.location, radiusM: beacon.perimeter.radiusM ?? 0)
            : beacon.perimeter.polygons.map { BoundingBox(of: $0.exterior) }
        var candidates = holders[beacon.id] ?? []
        for box in boxes { candidates.formUnion(grid.users(in: box)) }
        let now = clock.now()
        for user in candidates.sorted() where user != except && !(beacon.tracksOwner && user == beacon.owner) {
            let available = beacon.isVisible(to: .user(user), at: t) && beacon.isAlive(at: t)
            if let seen = inside[user]?[beacon.id]?.sightedAt, t.seconds(since: seen) < config.sightingExitSeconds {
                // Held by a recent sighting: only losing sight of the beacon exits.
                if available { continue }
                removeState(user, beacon.id)
                update.removed.append((user, beacon.id))
                update.events.append(presenceEvent(.exited, user: user, beacon: beacon, at: t, data: ["reason": .string(reason)]))
                continue
            }
            guard let location = locations[user] else { continue }
            let covered = available && tester.covers(location.position)
            let isInside = inside[user]?[beacon.id] != nil
            if !isInside && covered && now.seconds(since: location.receivedAt) <= config.presenceTTLSeconds {
                let state = FenceState(beacon: beacon.id, enteredAt: t, dwelled: false)
                setState(user, state)
                update.states.append((user, state))
                update.events.append(fenceEvent(.entered, user: user, beacon: beacon, at: t, position: location.position,
                                                accuracy: location.accuracyM, reason: reason))
            } else if isInside && !covered {
                if available {
                    let cushion = max(config.exitCushionM, location.accuracyM)
                    if PerimeterDistance.outside(location.position, perimeter: beacon.perimeter, center: beacon.location,
                                                 covered: false) < cushion { continue }
                }
                removeState(user, beacon.id)
                update.removed.append((user, beacon.id))
                update.events.append(fenceEvent(.exited, user: user, beacon: beacon, at: t, position: location.position,
                                                accuracy: location.accuracyM, reason: reason))
            }
        }
    }

    // MARK: Presence from sightings

    /// A user sighted physical beacons standing for digital beacons (resolved, visible to the
    /// user): each sighting puts the user inside its digital beacon, whatever its perimeter
    /// says (`beacon.entered` with reason `sighting`), or refreshes the presence. Returns the
    /// events once durable.
    ///
    /// The rule with location fixes: while the last sighting is younger than
    /// `sightingExitSeconds`, fixes outside the perimeter do not exit the user. Once sightings
    /// stop for that long, `tick()` exits the user (`beacon.exited`, reason
    /// `sighting_timeout`, `at` = last sighting + timeout) unless a location fix taken at or
    /// after the last sighting (such as the indoor position estimated from it) lies inside the
    /// perimeter: then the user stays inside as an ordinary geofence state, and later fixes
    /// decide the exit.
    package func reportPresence(user: UserID, sightings: [PresenceSighting]) async throws -> [Event] {
        if needsReload { try await reload() }
        let now = clock.now()
        var latest: [BeaconID: PresenceSighting] = [:]
        for var s in sightings where now.seconds(since: s.at) < config.sightingExitSeconds && !(s.beacon.tracksOwner && s.beacon.owner == user) {
            s.at = min(s.at, now)  // a device clock running ahead must not prolong the presence
            if let known = latest[s.beacon.id], known.at >= s.at { continue }
            latest[s.beacon.id] = s
        }
        var update = FenceUpdate()
        for (id, s) in latest.sorted(by: { $0.key < $1.key }) {
            guard s.beacon.isVisible(to: .user(user), at: s.at), s.beacon.isAlive(at: s.at) else { continue }
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
                update.events.append(presenceEvent(.entered, user: user, beacon: s.beacon, at: s.at, data: data))
            }
        }
        try await commit(update)
        return update.events
    }

    /// Exits (or hands over to location fixes) users whose sightings lapsed (no suspension).
    private func sightingTimeouts(_ lapsed: Set<FenceKey>, beacons: [BeaconID: Beacon], now: Timestamp, into update: inout FenceUpdate) {
        for key in lapsed.sorted(by: { ($0.user, $0.beacon) < ($1.user, $1.beacon) }) {
            guard var state = inside[key.user]?[key.beacon], let seen = state.sightedAt,
                  now.seconds(since: seen) >= config.sightingExitSeconds else { continue }
            guard let beacon = beacons[key.beacon] else {
                removeState(key.user, key.beacon)  // deleted: its followers hear beacon.deleted instead
                continue
            }
            let available = beacon.isVisible(to: .user(key.user), at: now) && beacon.isAlive(at: now)
            // The latest fix, if taken at or after the last sighting (the indoor position estimated
            // from that very batch counts: standing still must not exit, then re-enter, the user),
            // decides: inside the perimeter, the geofence takes over. Only inside: a fix near the
            // edge of a small perimeter, with sightings gone, is someone walking away, and after
            // a handover nothing but a later fix could exit them.
            if available, let location = locations[key.user], location.fixAt >= seen,
               now.seconds(since: location.receivedAt) <= config.presenceTTLSeconds {
                if PerimeterTester(location: beacon.location, perimeter: beacon.perimeter).covers(location.position) {
                    state.sightedAt = nil
                    setState(key.user, state)
                    update.states.append((key.user, state))
                    continue
                }
            }
            removeState(key.user, key.beacon)
            update.removed.append((key.user, key.beacon))
            update.events.append(presenceEvent(.exited, user: key.user, beacon: beacon, at: seen.adding(seconds: config.sightingExitSeconds),
                                               data: ["reason": .string(available ? "sighting_timeout" : "unavailable"),
                                                      "last_sighted_at": .string(seen.rfc3339)]))
        }
    }

    // MARK: State bookkeeping

    private func setState(_ user: UserID, _ state: FenceState) {
        inside[user, default: [:]][state.beacon] = state
        holders[state.beacon, default: []].insert(user)
        let key = FenceKey(user: user, beacon: state.beacon)
        if state.dwelled { dwellPending.remove(key) } else { dwellPending.insert(key) }
        if state.sightedAt == nil { sightingPending.remove(key) } else { sightingPending.insert(key) }
    }

    private func removeState(_ user: UserID, _ beacon: BeaconID) {
        inside[user]?[beacon] = nil
        if inside[user]?.isEmpty == true { inside[user] = nil }
        holders[beacon]?.remove(user)
        if holders[beacon]?.isEmpty == true { holders[beacon] = nil }
        dwellPending.remove(FenceKey(user: user, beacon: beacon))
        sightingPending.remove(FenceKey(user: user, beacon: beacon))
    }

    /// Turns the difference between two state maps of a user into store operations.
    private func diff(user: UserID, before: [BeaconID: FenceState], into update: inout FenceUpdate) {
        let after = inside[user] ?? [:]
        for (id, state) in after where before[id] != state { update.states.append((user, state)) }
        for id in before.keys where after[id] == nil { update.removed.append((user, id)) }
    }

    // MARK: Events

    private func fenceEvent(_ type: EventType, user: UserID, beacon: Beacon, at: Timestamp, position: Position,
                            accuracy: Double, reason: String?) -> Event {
        var data: JSONObject = [
            "beacon": .string(beacon.id.rawValue), "name": .string(beacon.name), "at": .string(at.rfc3339),
            "location": .object(["lat": .number(position.lat), "lon": .number(position.lon)]), "accuracy_m": .number(accuracy),
        ]
        if let reason { data["reason"] = .string(reason) }
        return Event(type: type, createdAt: clock.now(), recipient: user, beacon: beacon.id, data: data)
    }

    /// `beacon.entered` / `beacon.exited` decided by sightings: `{"beacon","name","at",…}`.
    private func presenceEvent(_ type: EventType, user: UserID, beacon: Beacon, at: Timestamp, data extra: JSONObject) -> Event {
        var data: JSONObject = ["beacon": .string(beacon.id.rawValue), "name": .string(beacon.name), "at": .string(at.rfc3339)]
        for (k, v) in extra.members { data[k] = v }
        return Event(type: type, createdAt: clock.now(), recipient: user, beacon: beacon.id, data: data)
    }

    private func dwellEvent(user: UserID, beacon: BeaconID, name: String?, since: Timestamp, at: Timestamp) -> Event {
        Event(type: .dwelled, createdAt: clock.now(), recipient: user, beacon: beacon, data: [
            "beacon": .string(beacon.rawValue), "name": .optional(name), "since": .string(since.rfc3339),
            "dwell_s": .number(at.seconds(since: since)),
        ])
    }
}

/// A spatial hash of user locations (cells of 0.01°, about 1 km), to find who is near a
/// beacon that moved or changed without scanning every user.
struct UserGrid {
    static let cellSize = 0.01
    private var cells: [Int64: Set<UserID>] = [:]
    private var cellOf: [UserID: Int64] = [:]

    private static func index(_ v: Double) -> Int32 { Int32((v / cellSize).rounded(.down)) }
    private static func key(_ lat: Int32, _ lon: Int32) -> Int64 { Int64(lat) << 32 | Int64(UInt32(bitPattern: lon)) }

    mutating func move(_ user: UserID, to p: Position) {
        let k = Self.key(Self.index(p.lat), Self.index(p.lon))
        if let old = cellOf[user] {
            if old == k { return }
            cells[old]?.remove(user)
            if cells[old]?.isEmpty == true { cells[old] = nil }
        }
        cells[k, default: []].insert(user)
        cellOf[user] = k
    }

    func users(in box: BoundingBox) -> Set<UserID> {
        let la0 = Self.index(box.south), la1 = Self.index(box.north)
        let lo0 = Self.index(box.west), lo1 = Self.index(box.east)
        let cellCount = (Int(la1) - Int(la0) + 1) * (Int(lo1) - Int(lo0) + 1)
        var result = Set<UserID>()
        if cellCount > cells.count {
            for (k, users) in cells {
                let lat = Int32(truncatingIfNeeded: k >> 32), lon = Int32(bitPattern: UInt32(truncatingIfNeeded: k))
                if lat >= la0 && lat <= la1 && lon >= lo0 && lon <= lo1 { result.formUnion(users) }
            }
            return result
        }
        for lat in la0...la1 {
            for lon in lo0...lo1 {
                if let users = cells[Self.key(lat, lon)] { result.formUnion(users) }
            }
        }
        return result
    }
}
