package import DBeaconCore
package import DBeaconStore
import Synchronization
import DBeaconGeo

/// A region an OwnTracks phone is told to monitor (a waypoint of `setWaypoints`), from
/// `GET /v1/regions`: the beacon circles, their iBeacon entries, and the refresh circle.
package struct PhoneWaypoint: Sendable, Hashable {
    /// `bcn_…`, `reg_…`, or `refresh`: what a transition names (`rid`).
    package var rid: String
    package var desc: String
    package var center: Position
    package var radiusM: Int
    /// The waypoint's `tst` (what the apps key a waypoint by): stable for a region id.
    package var wtst: Int
    /// For an iBeacon region: UUID (with dashes, upper case), major, minor (nil: any).
    package var iBeacon: (uuid: String, major: Int?, minor: Int?)?

    package static func == (a: PhoneWaypoint, b: PhoneWaypoint) -> Bool {
        a.rid == b.rid && a.center == b.center && a.radiusM == b.radiusM && a.desc == b.desc
    }

    package func hash(into h: inout Hasher) { h.combine(rid) }

    package init(rid: String, desc: String, center: Position, radiusM: Int, wtst: Int,
                 iBeacon: (uuid: String, major: Int?, minor: Int?)? = nil) {
        self.rid = rid
        self.desc = desc
        self.center = center
        self.radiusM = radiusM
        self.wtst = wtst
        self.iBeacon = iBeacon
    }

    /// A `tst` for a region id: a fixed point in 2001–2031 derived from the id (FNV-1a), so the
    /// same region is the same waypoint on the phone across answers.
    package static func wtst(_ rid: String) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in rid.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return 978_307_200 + Int(h % 946_080_000)
    }
}

/// A friend for the phone's map: a member of one of the caller's groups, where they may see
/// them.
package struct PhoneFriend: Sendable {
    package var user: UserID
    package var name: String
    package var location: UserLocation

    package init(user: UserID, name: String, location: UserLocation) {
        self.user = user
        self.name = name
        self.location = location
    }
}

/// What a phone is told after its post.
package struct PhoneAnswer: Sendable {
    /// New regions to monitor, when they changed or the phone left its refresh circle.
    package var waypoints: [PhoneWaypoint]?
    package var friends: [PhoneFriend] = []
    /// Group alerts addressed to the user since the phone's last post (a member out of range
    /// or back, joining or leaving), for the app to show as a friend's enter/leave.
    package var notices: [PhoneNotice] = []

    package init() {}
}

/// A group alert, as the phone apps show a friend's transition: `member` enters or leaves
/// (`entered`) the group `group` (its name).
package struct PhoneNotice: Sendable, Hashable {
    package var member: UserID
    package var group: String
    package var groupID: String
    package var entered: Bool
    package var at: Timestamp
    /// The member's name (for one no longer among the friends: a member who left).
    package var memberName: String?
    /// Where the group is now (for a member who left: their own position is no longer shared).
    package var groupLocation: Position?

    package init(member: UserID, group: String, groupID: String, entered: Bool, at: Timestamp, memberName: String?, groupLocation: Position?) {
        self.member = member
        self.group = group
        self.groupID = groupID
        self.entered = entered
        self.at = at
        self.memberName = memberName
        self.groupLocation = groupLocation
    }
}

/// The phone apps' protocols (OwnTracks in HTTP mode, Traccar Client / OsmAnd) over the same
/// services as the native API: fixes go through the fence engine, transitions through the
/// region crossings, iBeacon ranging through the registry; friends come from the caller's
/// groups as group status shows them, regions from `GET /v1/regions`.
package struct PhoneService: Sendable {
    package let fences: FenceEngine
    package let regions: RegionService
    package let sightings: SightingService
    package let groups: GroupService
    package let devices: any DeviceStore
    package let feed: EventFeed
    package let clock: any WallClock

    /// The phone states last read or written by this process, with their text.
    let decoded: PhoneStateCache
    /// Writes the states of concurrent posts in one transaction (a post whose regions changed
    /// writes its phone's state: in a city centre, about every other post).
    let stateWrites: GroupCommitter<PhoneStateWrite>

    /// Regions a phone is given: iOS monitors at most 20 per app.
    package static let maxRegions = 20

    package init(fences: FenceEngine, regions: RegionService, sightings: SightingService, groups: GroupService,
                 devices: any DeviceStore, feed: EventFeed, clock: any WallClock, states: PhoneStateCache = PhoneStateCache()) {
        self.decoded = states
        self.fences = fences
        self.regions = regions
        self.sightings = sightings
        self.groups = groups
        self.devices = devices
        stateWrites = GroupCommitter { try await devices.setPhoneStates($0) }
        self.feed = feed
        self.clock = clock
    }

    /// The event types a phone is told of (group tracking's alerts), as enter (true) or leave.
    static let noticeTypes: [EventType: Bool] = [
        .memberOutOfRange: false, .memberBackInRange: true, .memberJoined: true, .memberLeft: false,
    ]
    static let noticeKinds = Array(noticeTypes.keys).sorted { $0.rawValue < $1.rawValue }

    /// Fixes (Traccar Client / OsmAnd, or OwnTracks `location`s), oldest first.
    package func report(_ fixes: [LocationFix], user: UserID) async throws -> FixReport {
        try await fences.report(user: user, fixes: fixes.sorted { $0.timestamp < $1.timestamp })
    }

    /// An OwnTracks post: fixes, transitions, beacons, in that order; then what the phone
    /// should be told. `client` names the phone among the user's (a device id, or a name for
    /// the user's own token).
    package func ownTracks(fixes: [LocationFix], transitions: [PhoneTransition],
                           beacons: [SightingInput], user: UserID, client: String, by principal: Principal) async throws -> PhoneAnswer {
        var answer = PhoneAnswer()
        var latest: (Position, Timestamp)?
        func saw(_ p: Position?, _ t: Timestamp) {
            if let p, latest.map({ t >= $0.1 }) ?? true { latest = (p, t) }
        }
        // The fixes' coverage lookup at the last of them, where the phone is worked out from
        // (nil: from elsewhere, or another caller).
        var lookedUp: (at: Position, ids: [BeaconID])?
        if !fixes.isEmpty {
            let fixReport = try await report(fixes, user: user)
            for f in fixes { saw(f.position, f.timestamp) }
            if let at = fixReport.coveringNowAt, principal == .user(user) { lookedUp = (at, fixReport.coveringNow) }
        }
        let stored = try await state(user: user, client: client)
        if !transitions.isEmpty {
            var crossings: [RegionCrossing] = []
            for t in transitions {
                saw(t.position, t.at)
                // The region: `rid`, else the waypoint DBeacon gave with that `wtst`, else `desc`.
                let rid = t.rid ?? t.wtst.flatMap { stored?.region(wtst: $0) } ?? t.desc.flatMap { stored?.region(desc: $0) }
                guard let rid, rid != "refresh" else { continue }
                do {
                    crossings += try await regions.crossings([(rid, t.entered, t.at, "rid")], by: principal)
                } catch let error as DBeaconError where error.code == "unknown_region" {
                    // A region DBeacon did not give (the user's own waypoint), or one they may
                    // no longer see: left alone, as for any other app's region.
                    continue
                }
            }
            if !crossings.isEmpty { _ = try await fences.reportRegions(user: user, crossings: crossings) }
        }
        if !beacons.isEmpty { _ = try await sightings.process(beacons.map { .success($0) }, user: user) }
        // A phone's first post: no regions given yet (radius -1: no refresh circle to be inside).
        var state = stored ?? .initial
        var changed = stored == nil
        if let (position, _) = latest {
            let covering = lookedUp.flatMap { $0.at == position ? $0.ids : nil }
            if try await !keepsRegions(stored, at: position, by: principal, covering: covering) {
                let (waypoints, regionsState) = try await waypoints(at: position, stored: stored, by: principal, covering: covering)
                answer.waypoints = waypoints
                let events = state.events
                state = regionsState
                state.events = events
                changed = true
            }
        }
        answer.friends = try await friends(of: user, by: principal)
        // Group alerts since the last post, through the visibility gate as GET /v1/events reads
        // them; a phone's first post starts after the newest event (no history replayed).
        if let cursor = state.events {
            let (page, through) = try await feed.events(of: Self.noticeKinds, for: user, after: cursor, limit: 50)
            for event in page.items {
                // (An erased member is not named: nothing to show.)
                guard let entered = Self.noticeTypes[event.type], let data = event.groupMember, let member = data.member,
                      member != user else { continue }
                var groupLocation: Position?
                if event.type == .memberLeft, let beacon = event.beacon {
                    groupLocation = try await groups.beacons.gate.beacons([beacon], for: principal).first?.location
                }
                answer.notices.append(PhoneNotice(member: member, group: data.name, groupID: data.group.rawValue, entered: entered,
                                                  at: event.createdAt, memberName: data.memberName, groupLocation: groupLocation))
            }
            // Read through `through`, or up to the last alert when more are waiting. The stored
            // position moves on with an alert, or when the state is written anyway: the user's
            // other events (a fix's entries and exits, every post in a city centre) are passed
            // over in the store's index without a write per post, and a phone's state is written
            // at least every `regionsMaxAgeSeconds` while it posts.
            let next = max(cursor, page.next ?? through)
            if next != cursor, changed || !page.items.isEmpty || page.next != nil {
                state.events = next
                changed = true
            } else if next != cursor {
                // No alert for the user up to `next`: the state kept in this process reads on
                // from there (a restart, or another node, reads those events again and finds no
                // alert either). Without it, each post of a phone whose regions hold passed over
                // all the user's events since its state was last written (in a city centre, a
                // fix's entries and exits: some thousand a minute at five posts a second).
                decoded.advance(user: user, client: client, events: next)
            }
        } else {
            state.events = try await feed.latestPosition()
            changed = true
        }
        if changed {
            let text = state.encoded()
            try await stateWrites.commit(PhoneStateWrite(user: user, client: client, state: text, at: clock.now()))
            decoded.keep(text, state, user: user, client: client)
        }
        return answer
    }

    /// How long a phone keeps its regions without their being worked out again, at most: what
    /// no change announces (a lifetime beginning near the phone, an iBeacon registered for a
    /// beacon it monitors) reaches it within this.
    package static let regionsMaxAgeSeconds = 60.0

    /// Whether the phone's regions still hold at `position` without working them out again:
    /// they were worked out less than `regionsMaxAgeSeconds` ago, and either it is inside the
    /// refresh circle it was given, no beacon changed under that circle since
    /// (`RegionChanges`), and the beacons it monitors are the versions it was given and still
    /// visible to the user; or it was given no refresh circle because more beacons covered it
    /// than there are slots, and it is still inside most of what it was given, all unchanged,
    /// with more around it (`keepsCovered`).
    /// (An OwnTracks post used to search the regions every time: 7–10× the cost of a native fix.)
    ///
    /// `covering`: the coverage lookup at `position` already made for the caller (a fix's), if any.
    func keepsRegions(_ stored: PhoneState?, at position: Position, by principal: Principal,
                      covering: [BeaconID]? = nil) async throws -> Bool {
        guard let s = stored, let checkedAt = s.checkedAt, let stamp = s.stamp, let versions = s.versions,
              clock.now().seconds(since: Timestamp(millis: checkedAt)) < Self.regionsMaxAgeSeconds else { return false }
        if s.refreshRadius == 0 { return try await keepsCovered(versions, at: position, by: principal, covering: covering) }
        guard stamp > 0, s.refreshRadius > 0, Geodesy.distance(s.refreshCenter, position) <= s.refreshRadius,
              regions.changes.stamp(center: s.refreshCenter, radiusM: s.refreshRadius) == stamp else { return false }
        let current = try await regions.beacons.gate.versions(Array(versions.keys), for: principal)
        return current.count == versions.count && current.allSatisfy { versions[$0.key] == $0.value }
    }

    /// Whether regions given without a refresh circle (more beacons covered the phone than
    /// there are slots, so it was given the first covering beacons by id, all at distance 0)
    /// still hold at `position`: every beacon it monitors is in the version it was given, alive
    /// and visible to the user; more than half of them still cover it; and more beacons the user
    /// may see cover it than there are slots (so a complete answer is still out of reach there,
    /// and a refresh circle of no use). The set is kept while that holds, though a search there
    /// may now rank other covering beacons first by id and the phone has left some of its
    /// regions (issue 46: a phone's regions are worked out again when it has left most of them
    /// or one of them changes, not as the crowd around it shifts). Leaving a region it monitors
    /// still wakes the app to post; the fence engine sees its fixes whatever it monitors, and a
    /// phone that enters again a region it left reports that crossing. It costs the fix's
    /// coverage lookup and the gate's decisions on some thirty ids, where the search reads some
    /// twenty beacons, the phone is sent its regions again and re-registers all of them.
    ///
    /// What decides is what the user may see: the monitored beacons pass the gate or not, the
    /// count inside them is taken from the coverage lookup (which admits only beacons the user may
    /// see now), and the other covering beacons are put to the gate, as many as are missing, then
    /// a few at a time, until enough pass (a hidden one only costs another turn), so whether
    /// hidden beacons cover the phone does not change the outcome. The coverage lookup admits at
    /// least every beacon the search would.
    func keepsCovered(_ versions: [BeaconID: Int], at position: Position, by principal: Principal,
                      covering lookedUp: [BeaconID]? = nil) async throws -> Bool {
        let slots = Self.maxRegions - 1
        guard versions.count == slots else { return false }
        let now = clock.now()
        let covering: [BeaconID]
        if let lookedUp {
            covering = lookedUp
        } else {
            covering = try await regions.beacons.engine.coveringIDs(CoverQuery(point: position, tags: [], at: now, viewer: principal))
        }
        // The monitored beacons still covering the phone, and the other covering beacons.
        var inside = 0
        var others: [BeaconID] = []
        others.reserveCapacity(covering.count)
        for id in covering {
            if versions[id] != nil { inside += 1 } else { others.append(id) }
        }
        // Most of them still cover it, and more beacons than there are slots may.
        guard inside * 2 > slots, inside + others.count > slots else { return false }
        // Every monitored beacon, with as many others as it takes to make more than the slots
        // (nearly always enough: the lookup admits only beacons the user may see, though a
        // moving one does not count), then the rest of the others eight at a time.
        var needed = slots + 1 - inside
        var ids = Array(versions.keys)
        ids.append(contentsOf: others.prefix(needed))
        var seen = try await regions.beacons.gate.decisions(ids, for: principal)
        func counts(_ id: BeaconID) -> Bool { seen[id].map { $0.isAlive(at: now) && !$0.tracksOwner } ?? false }
        guard versions.allSatisfy({ counts($0.key) && seen[$0.key]?.version == $0.value }) else { return false }
        var start = 0, end = needed
        while start < others.count {
            if start > 0 { seen = try await regions.beacons.gate.decisions(Array(others[start..<end]), for: principal) }
            needed -= others[start..<end].count(where: counts)
            if needed <= 0 { return true }
            (start, end) = (end, min(end + 8, others.count))
        }
        return false
    }

    /// The regions at `position`, with the state to store: the waypoints when they differ from
    /// what the phone was last given or the phone left the refresh circle it was given (nil
    /// when the phone's regions still hold: then the state is the one stored, checked again).
    func waypoints(at position: Position, stored: PhoneState?, by principal: Principal,
                   covering: [BeaconID]? = nil) async throws -> ([PhoneWaypoint]?, PhoneState) {
        let before = regions.changes.sequence
        let found = try await regions.regions(at: position, max: Self.maxRegions, tags: [], by: principal, covering: covering)
        var waypoints: [PhoneWaypoint] = []
        var refresh: (Position, Double)?
        for r in found.regions {
            switch r.kind {
            case .circle(let center, let radius, _):
                guard let b = r.beacon else { continue }
                waypoints.append(PhoneWaypoint(rid: b.id.rawValue, desc: b.name, center: center, radiusM: Int(radius.rounded(.up)),
                                               wtst: PhoneWaypoint.wtst(b.id.rawValue)))
            case .iBeacon(let entry, let identity):
                guard let b = r.beacon else { continue }
                waypoints.append(PhoneWaypoint(rid: entry.rawValue, desc: "\(b.name) (iBeacon)", center: b.location, radiusM: 0,
                                               wtst: PhoneWaypoint.wtst(entry.rawValue),
                                               iBeacon: (Self.dashed(identity.id1), identity.id2, identity.id3)))
            case .refresh(let center, let radius):
                refresh = (center, radius)
                // Leaving it means "post again": the phone then gets the regions where it is.
                if radius > 0 {
                    waypoints.append(PhoneWaypoint(rid: "refresh", desc: "DBeacon: regions nearby", center: center,
                                                   radiusM: Int(radius.rounded(.down)), wtst: PhoneWaypoint.wtst("refresh")))
                }
            }
        }
        let signature = waypoints.filter { $0.rid != "refresh" }.map { "\($0.rid)@\($0.center.lat),\($0.center.lon),\($0.radiusM)" }.joined(separator: ";")
        // The check of what was worked out: when, what had changed near it, the beacons' versions.
        func checked(_ state: PhoneState) -> PhoneState {
            var state = state
            state.checkedAt = clock.now().millis
            let stamp = regions.changes.stamp(center: state.refreshCenter, radiusM: state.refreshRadius)
            // A change near the phone while this was worked out may be missing from it: again next time.
            state.stamp = stamp > before ? 0 : stamp
            state.versions = Dictionary(found.regions.compactMap { r -> (BeaconID, Int)? in
                guard case .circle = r.kind, let b = r.beacon else { return nil }
                return (b.id, b.version)
            }, uniquingKeysWith: { a, _ in a })
            return state
        }
        if let stored, stored.signature == signature,
           Geodesy.distance(stored.refreshCenter, position) <= stored.refreshRadius { return (nil, checked(stored)) }
        let state = PhoneState(signature: signature, refreshCenter: refresh?.0 ?? position, refreshRadius: refresh?.1 ?? 0,
                               waypoints: waypoints.map { PhoneState.Waypoint(wtst: $0.wtst, rid: $0.rid, desc: $0.desc) })
        return (waypoints, checked(state))
    }

    /// Members of the caller's groups with a position they may see (group status), latest fix
    /// per person, the caller left out.
    func friends(of user: UserID, by principal: Principal) async throws -> [PhoneFriend] {
        var latest: [UserID: PhoneFriend] = [:]
        for group in try await groups.mine(by: principal) {
            let status: GroupStatus
            do {
                status = try await groups.status(group.id, by: principal)
            } catch let error as DBeaconError where error.kind == .notFound {
                continue // the group ended between the listing and its status
            }
            for m in status.members where m.user != user {
                guard let l = m.location else { continue }
                if let known = latest[m.user], known.location.fixAt >= l.fixAt { continue }
                latest[m.user] = PhoneFriend(user: m.user, name: m.name, location: l)
            }
        }
        return latest.values.sorted { $0.user < $1.user }
    }

    static func dashed(_ hex: String) -> String {
        let h = Array(hex.uppercased())
        guard h.count == 32 else { return hex.uppercased() }
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(h[$0]) }.joined(separator: "-")
    }

    // MARK: What the phone was told

    /// The phone's stored state; nil before its first post. A state this version cannot read
    /// (written by another one) counts as none: the phone is simply given its regions again.
    func state(user: UserID, client: String) async throws -> PhoneState? {
        // Where this process writes every phone state, the one it wrote last is the stored one.
        if devices.phoneStatesStayInProcess, let known = decoded.latest(user: user, client: client) { return known }
        guard let text = try await devices.phoneState(user: user, client: client) else {
            decoded.forget(user, client: client)
            return nil
        }
        if let known = decoded.state(text, user: user, client: client) { return known }
        guard let state = try? PhoneState(decoding: text) else { return nil }
        decoded.keep(text, state, user: user, client: client)
        return state
    }
}

/// Phone states as decoded, per (user, client), with the stored text they were decoded from.
/// On PostgreSQL a post reads its phone's state from the store every time (another node may
/// have written it), and decodes it only when the text is not the one seen last (decoding was
/// 6 % of an OwnTracks post at 1M beacons); on SpatiaLite, where this process writes every
/// state, a post takes the one kept here and reads the store only without one (a read of some
/// 6 KB per post). Emptied when it holds `capacity` states (a state with its text takes some
/// 6 KB with 19 regions: at most about 60 MB; more phones than that per node read and decode
/// again after each emptying); a user's states are dropped when their account changes (a
/// device revoked, the user erased or disabled; all states when another process changed
/// accounts), and on any node when their phone's stored state is found gone.
package final class PhoneStateCache: Sendable {
    static let capacity = 10_000
    private struct Key: Hashable { let user: UserID, client: String }
    private let states = Mutex<[Key: (text: String, state: PhoneState)]>([:])

    /// The state `text` decodes to, when it is the text last seen for this phone.
    package func state(_ text: String, user: UserID, client: String) -> PhoneState? {
        states.withLock { s in s[Key(user: user, client: client)].flatMap { $0.text == text ? $0.state : nil } }
    }

    package init() {}

    /// The state last kept for this phone (`DeviceStore.phoneStatesStayInProcess`).
    package func latest(user: UserID, client: String) -> PhoneState? {
        states.withLock { $0[Key(user: user, client: client)]?.state }
    }

    /// Drops every state of `user` (an erasure; their account changed).
    package func forget(_ user: UserID) {
        states.withLock { s in s = s.filter { $0.key.user != user } }
    }

    /// Drops every state (accounts changed in another process, which does not say whose).
    package func forgetAll() {
        states.withLock { $0.removeAll() }
    }

    /// How many phones' states are kept (tests).
    package var count: Int { states.withLock { $0.count } }

    func forget(_ user: UserID, client: String) {
        _ = states.withLock { s in s.removeValue(forKey: Key(user: user, client: client)) }
    }

    /// Moves the kept state's event position on to `events` (past events that hold no alert
    /// for the phone), leaving the text it was decoded from as it is.
    package func advance(user: UserID, client: String, events: Int64) {
        states.withLock { s in
            let key = Key(user: user, client: client)
            guard var kept = s[key], (kept.state.events ?? .max) < events else { return }
            kept.state.events = events
            s[key] = kept
        }
    }

    package func keep(_ text: String, _ state: PhoneState, user: UserID, client: String) {
        states.withLock { s in
            if s.count >= Self.capacity { s.removeAll(keepingCapacity: true) }
            s[Key(user: user, client: client)] = (text, state)
        }
    }
}
