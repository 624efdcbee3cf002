import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Testing

/// The fence state machine alone: scenarios of fixes, sightings, beacon changes and time, with
/// the events each step must produce. No database, no engine: coverage is computed here from
/// the scenario's beacons (what the engine would answer).
@Suite(.bounded) struct FenceEvaluatorTests {
    static let t0 = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!
    static let center = Position(lon: 9.18, lat: 48.7784)
    static let owner = UserID(uncheckedRawValue: "usr_owner")
    static let ann = UserID(uncheckedRawValue: "usr_ann")

    /// Metres north of the centre.
    static func north(_ m: Double) -> Position { Position(lon: center.lon, lat: center.lat + m / 111_200) }

    static func square(radius: Double = 100, members: [UserID]? = nil, id: String = "bcn_square") -> Beacon {
        Beacon(id: BeaconID(uncheckedRawValue: id), name: "square", owner: owner, location: center,
               perimeter: .circle(radiusM: radius), members: members, createdAt: t0, updatedAt: t0)
    }

    enum Step {
        /// A fix of ann `m` metres north at `t0 + s` seconds.
        case fix(m: Double, at: Double, accuracy: Double = 5)
        case tick(at: Double)
        /// The beacon is replaced by this one (edit), at `t0 + s`.
        case change(Beacon, at: Double)
        case delete(at: Double)
        /// Ann sights a physical beacon standing for the square at `t0 + s`.
        case sighting(at: Double)
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        let beacon: Beacon
        let steps: [Step]
        /// The event types of each step, in order (`entered` for `beacon.entered`, …).
        let expected: [[String]]
        var config = FenceConfig()
        var testDescription: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "enters inside, not outside", beacon: square(),
                 steps: [.fix(m: 300, at: 0), .fix(m: 50, at: 10), .fix(m: 60, at: 20)],
                 expected: [[], ["entered"], []]),
        Scenario(name: "exits only beyond the cushion", beacon: square(),
                 steps: [.fix(m: 50, at: 0), .fix(m: 110, at: 10), .fix(m: 130, at: 20), .fix(m: 50, at: 30)],
                 expected: [["entered"], [], ["exited"], ["entered"]]),
        Scenario(name: "a poor accuracy widens the cushion", beacon: square(),
                 steps: [.fix(m: 50, at: 0), .fix(m: 140, at: 10, accuracy: 60), .fix(m: 140, at: 20, accuracy: 5)],
                 expected: [["entered"], [], ["exited"]]),
        Scenario(name: "older fixes change nothing", beacon: square(),
                 steps: [.fix(m: 50, at: 10), .fix(m: 500, at: 5), .fix(m: 500, at: 9), .fix(m: 50, at: 10)],
                 expected: [["entered"], [], [], []]),
        // Whole-second protocols (OwnTracks' `tst`) send two fixes of one second: the later one,
        // elsewhere, is taken (the same one again is not).
        Scenario(name: "a fix of the same instant elsewhere is taken", beacon: square(),
                 steps: [.fix(m: 50, at: 10), .fix(m: 500, at: 10), .fix(m: 500, at: 10)],
                 expected: [["entered"], ["exited"], []]),
        Scenario(name: "dwells on a fix and through the ticker", beacon: square(),
                 steps: [.fix(m: 10, at: 0), .fix(m: 12, at: 30), .tick(at: 59), .tick(at: 61), .tick(at: 200), .fix(m: 11, at: 300)],
                 expected: [["entered"], [], [], ["dwelled"], [], []],
                 config: { var c = FenceConfig(); c.dwellSeconds = 60; return c }()),
        Scenario(name: "a beacon that grows or shrinks around a standing user (the cushion holds at 20 m out)", beacon: square(radius: 30),
                 steps: [.fix(m: 50, at: 0), .change(square(radius: 100), at: 10), .change(square(radius: 30), at: 15),
                         .change(square(radius: 20), at: 20)],
                 expected: [[], ["entered"], [], ["exited"]]),
        Scenario(name: "losing sight of a private beacon exits at once", beacon: square(members: [ann]),
                 steps: [.fix(m: 10, at: 0), .change(square(members: []), at: 10)],
                 expected: [["entered"], ["exited"]]),
        Scenario(name: "a deleted beacon is forgotten without an exit", beacon: square(),
                 steps: [.fix(m: 10, at: 0), .delete(at: 10), .fix(m: 500, at: 20)],
                 expected: [["entered"], [], []]),
        Scenario(name: "a sighting holds presence against far fixes, then times out", beacon: square(radius: 20),
                 steps: [.sighting(at: 0), .fix(m: 2000, at: 10), .tick(at: 29), .tick(at: 31)],
                 expected: [["entered"], [], [], ["exited"]]),
        Scenario(name: "a fix inside at the last sighting hands over to the geofence", beacon: square(radius: 40),
                 steps: [.sighting(at: 0), .fix(m: 5, at: 0.5), .tick(at: 31), .tick(at: 100), .fix(m: 6, at: 120), .fix(m: 200, at: 130)],
                 expected: [["entered"], [], [], [], [], ["exited"]]),
        Scenario(name: "a fix at the edge of a small perimeter does not hold a lapsed sighting", beacon: square(radius: 3),
                 steps: [.sighting(at: 0), .fix(m: 20, at: 0), .tick(at: 31)],
                 expected: [["entered"], [], ["exited"]]),
    ]

    @Test(arguments: scenarios)
    func scenario(_ s: Scenario) {
        var evaluator = FenceEvaluator(config: s.config)
        var beacon: Beacon? = s.beacon
        var produced: [[String]] = []
        for step in s.steps {
            var events: [Event] = []
            switch step {
            case .fix(let m, let at, let accuracy):
                let t = Self.t0.adding(seconds: at)
                let fix = LocationFix(position: Self.north(m), accuracyM: accuracy, timestamp: t)
                let covering = beacon.map { b in
                    b.allows(.see, to: .user(Self.ann), at: t) && b.isAlive(at: t)
                        && PerimeterTester(location: b.location, perimeter: b.perimeter).covers(fix.position) ? [b] : []
                } ?? []
                var known: [BeaconID: Beacon] = [:]
                if let beacon { known[beacon.id] = beacon }
                events = evaluator.applyFixes(user: Self.ann, fixes: [fix], coverage: [covering.map(\.id)], known: known, tracking: [], now: t)
                    .update.events
            case .tick(let at):
                let t = Self.t0.adding(seconds: at)
                let due = evaluator.beaconsDueForTick(now: t)
                var byID: [BeaconID: Beacon] = [:]
                if let beacon, due.contains(beacon.id) { byID[beacon.id] = beacon }
                events = evaluator.tick(now: t, beacons: byID).events
            case .change(let changed, let at):
                beacon = changed
                events = evaluator.beaconChanged(changed, reason: "updated", now: Self.t0.adding(seconds: at)).events
            case .delete:
                if let id = beacon?.id { evaluator.beaconDeleted(id) }
                beacon = nil
            case .sighting(let at):
                let t = Self.t0.adding(seconds: at)
                events = evaluator.presence(user: Self.ann, sightings: [PresenceSighting(beacon: beacon!, at: t)], now: t).events
            }
            #expect(events.allSatisfy { $0.recipient == Self.ann })
            produced.append(events.map { String($0.type.rawValue.dropFirst("beacon.".count)) })
        }
        #expect(produced == s.expected)
    }

    /// The fence engine fetches whole beacons only for what a fix may enter or leave
    /// (`beaconsNeeded`); given exactly those, the decision is the one made knowing every beacon.
    @Test func aFixNeedsOnlyTheBeaconsItMayEnterOrLeave() {
        let big = Self.square(radius: 400, id: "bcn_big"), mid = Self.square(radius: 200, id: "bcn_mid")
        let small = Self.square(radius: 50, id: "bcn_small"), other = Self.square(radius: 300, id: "bcn_other")
        let all = [big.id: big, mid.id: mid, small.id: small, other.id: other]
        var full = FenceEvaluator(config: FenceConfig())
        var lean = FenceEvaluator(config: FenceConfig())
        // At the centre: inside big, mid and small.
        let first = LocationFix(position: Self.north(0), accuracyM: 5, timestamp: Self.t0)
        _ = full.applyFixes(user: Self.ann, fixes: [first], coverage: [[big.id, mid.id, small.id]], known: all, tracking: [], now: Self.t0)
        let needed0 = lean.beaconsNeeded(user: Self.ann, fixes: [first], coverage: [[big.id, mid.id, small.id]], known: [BeaconID: Beacon]())
        #expect(needed0 == [big.id, mid.id, small.id]) // entries
        _ = lean.applyFixes(user: Self.ann, fixes: [first], coverage: [[big.id, mid.id, small.id]],
                            known: all.filter { needed0.contains($0.key) }, tracking: [], now: Self.t0)
        // 150 m north: still in big and mid, out of small, into other (a second beacon id).
        let second = LocationFix(position: Self.north(150), accuracyM: 5, timestamp: Self.t0.adding(seconds: 30))
        let coverage = [[big.id, mid.id, other.id]]
        let needed = lean.beaconsNeeded(user: Self.ann, fixes: [second], coverage: coverage, known: [BeaconID: Beacon]())
        #expect(needed == [small.id, other.id]) // the exit to check and the entry; not the two it stays in
        let a = full.applyFixes(user: Self.ann, fixes: [second], coverage: coverage, known: all, tracking: [], now: Self.t0)
        let b = lean.applyFixes(user: Self.ann, fixes: [second], coverage: coverage, known: all.filter { needed.contains($0.key) },
                                tracking: [], now: Self.t0)
        #expect(b.update.events.map { "\($0.type.rawValue) \($0.beacon?.rawValue ?? "")" }.sorted()
                == ["beacon.entered bcn_other", "beacon.exited bcn_small"])
        #expect(a.update.events.map(\.type) == b.update.events.map(\.type))
        #expect(full.insideBeacons(of: Self.ann) == lean.insideBeacons(of: Self.ann))
        #expect(lean.insideBeacons(of: Self.ann) == [big.id, mid.id, other.id])
        // An hour later (dwell due), the names of the beacons dwelled in are needed too.
        let later = LocationFix(position: Self.north(150), accuracyM: 5, timestamp: Self.t0.adding(seconds: 3600))
        #expect(lean.beaconsNeeded(user: Self.ann, fixes: [later], coverage: coverage, known: [BeaconID: Beacon]())
                == [big.id, mid.id, other.id])
    }

    /// The update carries what the store must write: the location, the new state, the events.
    @Test func anEntryIsWrittenWithItsLocationAndState() {
        var evaluator = FenceEvaluator(config: FenceConfig())
        let b = Self.square()
        let fix = LocationFix(position: Self.north(10), accuracyM: 5, timestamp: Self.t0)
        let outcome = evaluator.applyFixes(user: Self.ann, fixes: [fix], coverage: [[b.id]], known: [b.id: b], tracking: [], now: Self.t0)
        #expect(outcome.accepted == 1 && outcome.ignored == 0)
        #expect(outcome.update.locations.map(\.user) == [Self.ann])
        #expect(outcome.update.states.map(\.state.beacon) == [b.id])
        #expect(outcome.update.events.map(\.type) == [.entered] && outcome.userEvents.map(\.type) == [.entered])
        #expect(evaluator.insideBeacons(of: Self.ann) == [b.id])
        // Reloaded from what was written, the evaluator decides the same.
        var reloaded = FenceEvaluator(config: FenceConfig(), locations: outcome.update.locations,
                                      states: [Self.ann: outcome.update.states.map(\.state)])
        let far = LocationFix(position: Self.north(500), accuracyM: 5, timestamp: Self.t0.adding(seconds: 10))
        #expect(reloaded.applyFixes(user: Self.ann, fixes: [far], coverage: [[]], known: [b.id: b], tracking: [], now: Self.t0)
            .update.events.map(\.type) == [.exited])
    }

    /// A node on a shared store adopts the states decided on a fresher copy: afterwards it
    /// answers for those users exactly as that copy does (beacons inside, each state, the dwell
    /// and sighting timers due), whichever states were kept, changed, added or dropped, and
    /// users it did not adopt keep theirs.
    @Test func adoptedStatesAnswerAsTheDecidingCopy() {
        func id(_ n: Int) -> BeaconID { BeaconID(uncheckedRawValue: "bcn_\(n)") }
        let bob = UserID(uncheckedRawValue: "usr_bob"), cyd = UserID(uncheckedRawValue: "usr_cyd")
        let t = Self.t0
        func state(_ n: Int, _ entered: Double, dwelled: Bool = false, sighted: Double? = nil) -> FenceState {
            FenceState(beacon: id(n), enteredAt: t.adding(seconds: entered), dwelled: dwelled, sightedAt: sighted.map { t.adding(seconds: $0) })
        }
        let before: [UserID: [FenceState]] = [
            Self.ann: [state(1, 0), state(2, 0), state(3, 0, sighted: 5), state(5, 0, dwelled: true)],
            bob: [state(1, 0), state(4, 0)],
            cyd: [state(6, 0, sighted: 1)],
        ]
        let decided: [UserID: [FenceState]] = [
            // 1 kept, 2 dwelled now, 3 sighted later, 4 entered, 5 left
            Self.ann: [state(1, 0), state(2, 0, dwelled: true), state(3, 0, sighted: 50), state(4, 20)],
            // bob left everything; cyd is not adopted (the decided copy knows nothing of her)
            bob: [],
        ]
        var node = FenceEvaluator(config: FenceConfig(), locations: [], states: before)
        let fresh = FenceEvaluator(config: FenceConfig(), locations: [], states: decided)
        node.adopt([Self.ann, bob], from: fresh)
        for user in [Self.ann, bob] {
            #expect(node.insideBeacons(of: user) == fresh.insideBeacons(of: user), "\(user)")
            for n in 1...6 { #expect(node.state(of: user, in: id(n)) == fresh.state(of: user, in: id(n)), "\(user) \(n)") }
        }
        #expect(node.insideBeacons(of: cyd) == [id(6)])
        // The timers at +400 s: dwell due for ann's 1, 3 and 4 (not 2, dwelled now), ann's 3
        // sighted too long ago; the node's are the fresh copy's and cyd's 6, nothing left over
        // from the states it dropped or changed.
        let late = t.adding(seconds: 400)
        var expected = fresh.beaconsDueForTick(now: late)
        expected.insert(id(6))
        #expect(node.beaconsDueForTick(now: late) == expected)
        #expect(fresh.beaconsDueForTick(now: late) == [id(1), id(3), id(4)])
    }
}
