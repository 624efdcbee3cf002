import DBeaconCore
import DBeaconIndex
import DBeaconServices
import DBeaconStore
import Foundation
import Testing

/// The one visibility rule (issue 26): every home of visibility agrees with
/// `VisibilityPolicy` — the SQL rendered from it on both stores, the in-memory index's member
/// masks, and the follower fan-out — on random beacons, viewers and times.
@Suite(.bounded) struct VisibilityPolicyTests {
    /// The rule as the model states it, written out once more by hand as the test's oracle.
    static func oracle(_ access: BeaconAccess, _ b: Beacon, _ viewer: Principal, _ now: Timestamp) -> Bool {
        guard case .user(let uid) = viewer else { return true } // the operator: everything (coverage checks lifetimes)
        let owner = uid == b.owner, shared = b.members.map { $0.contains(uid) } ?? true
        switch access {
        case .see:
            let invited = b.service == ServiceKind.meeting && b.members != nil && !(b.lifetime?.end.map { $0 <= now } ?? false)
            return owner || (shared && (b.isAlive(at: now) || invited))
        case .cover: return owner || (shared && b.isAlive(at: now))
        case .lossNotice: return owner || shared
        case .modify: return owner
        }
    }

    @Test func thePolicyIsTheModelsRule() {
        var g = RandomBeacons(seed: 2626, users: ["usr_a", "usr_b", "usr_c"].map { UserID(uncheckedRawValue: $0) })
        var checked = 0
        for i in 0..<3000 {
            var b = g.beacon(index: i)
            if i % 7 == 0 { b.service = ServiceKind.meeting }
            let now = RandomBeacons.base.adding(seconds: Double(Int.random(in: -4...8, using: &g.rng)) * 3600)
            for viewer in g.users.map(Principal.user) + [.admin, .user(UserID(uncheckedRawValue: "usr_stranger"))] {
                for access in BeaconAccess.allCases {
                    #expect(b.allows(access, to: viewer, at: now) == Self.oracle(access, b, viewer, now), "\(access) \(viewer) \(i)")
                    checked += 1
                }
                // What covers a viewer they may see (a fix's answer names its covering beacons on that).
                if b.allows(.cover, to: viewer, at: now) { #expect(b.allows(.see, to: viewer, at: now), "cover without see \(viewer) \(i)") }
            }
        }
        #expect(checked == 3000 * 5 * BeaconAccess.allCases.count)
    }

    /// The SQL clause rendered from the policy (lists) and the index's member masks and
    /// lifetimes (coverage) decide as the Swift policy does, on both stores.
    @Test(arguments: Backend.all) func sqlAndIndexFollowThePolicy(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, engine: .memory)
        let memory = try #require(h.services.engine as? MemoryCoverageEngine)
        var users: [UserID] = []
        for name in ["ann", "ben", "chen", "dora"] { users.append(try await h.user(name).id) }
        var g = RandomBeacons(seed: 4242, users: users)
        var beacons = (0..<400).map { g.beacon(index: $0) }
        for i in stride(from: 0, to: beacons.count, by: 9) { beacons[i].service = ServiceKind.meeting }
        try await h.store.insertBeacons(beacons)
        let stranger = try await h.user("stranger").id
        let viewers: [Principal] = (users + [stranger]).map(Principal.user) + [.admin]
        var compared = 0
        for hours in [-3.0, 0, 2, 5, 9] {
            let now = RandomBeacons.base.adding(seconds: hours * 3600)
            for viewer in viewers {
                // Lists: the rendered `.see` clause.
                var listed = Set<BeaconID>()
                var after: Int64?
                repeat {
                    let page = try await h.store.listBeacons(BeaconListQuery(limit: 500, after: after), viewer: viewer, now: now)
                    listed.formUnion(page.items.map(\.id))
                    after = page.next
                } while after != nil
                #expect(listed == Set(beacons.filter { $0.allows(.see, to: viewer, at: now) }.map(\.id)), "list \(viewer) at \(hours) h")
                // Coverage: the index (member masks) against the policy's `covers`, at every beacon's location.
                for b in beacons.prefix(80) {
                    let query = CoverQuery(point: b.location, at: now, viewer: viewer)
                    let fromIndex = Set(try await memory.covering(query).map(\.id))
                    let everything = try await memory.covering(CoverQuery(point: b.location, at: now, viewer: .admin))
                    let expected = Set(everything.filter { $0.covers(viewer, at: now, now: now) }.map(\.id))
                    #expect(fromIndex == expected, "index \(viewer) at \(hours) h near \(b.id)")
                    compared += 1
                }
            }
        }
        #expect(compared == 5 * viewers.count * 80)
    }

    /// The follower fan-out uses the same rendered clause with the follower as the viewer.
    @Test(arguments: Backend.all) func fanOutReachesWhomThePolicyAllows(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let member = try await h.user("member").id, outsider = try await h.user("outsider").id
        let shared = try await h.beacon(feature(name: "shared", members: [member]), owner: owner)
        for user in [owner, member, outsider] { _ = try await h.store.follow(beacon: shared.id, user: user, at: h.clock.now()) }
        _ = try await h.beacons.update(shared.id, ifMatch: nil, by: .user(owner)) { b in
            var d = BeaconDraft(b)
            d.name = "renamed"
            return d
        }
        for user in [owner, member, outsider] {
            let got = try await h.events(user).contains { $0.type == .updated }
            #expect(got == shared.allows(.see, to: .user(user), at: h.clock.now()), "\(user)")
        }
    }
}
