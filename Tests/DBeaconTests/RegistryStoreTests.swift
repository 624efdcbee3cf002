import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
import Testing

/// `RegistryStore` conformance on every backend: the same answers from SpatiaLite and PostGIS,
/// plus what only a shared PostgreSQL database can get wrong (racing registrations, a
/// database created before migration v3 existed).
@Suite(.bounded) struct RegistryStoreTests {
    static let uuid = "f7826da64fa24e988024bc5b71e0893e"
    static let other = "2f234454cf6d4a0fadf2f4911ba9ffa6"

    static func entry(_ beacon: Beacon, id1: String = uuid, major: Int? = nil, minor: Int? = nil,
                      status: RegistryEntry.Status = .active, at: Timestamp) -> RegistryEntry {
        RegistryEntry(id: .generate(), identity: .iBeacon(uuid: id1, major: major, minor: minor), beacon: beacon.id,
                      owner: beacon.owner, position: nil, measuredPower: nil, status: status, version: 1, createdAt: at, updatedAt: at)
    }

    @Test(arguments: Backend.all) func storesChecksListsAndResolvesLikeEveryBackend(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let store = h.store
        let now = h.clock.now()
        let (owner, _) = try await h.user("owner")
        let (bob, _) = try await h.user("bob")
        let (ann, _) = try await h.user("ann")
        let shop = try await h.beacon(feature(name: "shop"), owner: owner)
        let staff = try await h.beacon(feature(name: "staff room", members: [ann]), owner: owner)

        // Every field round-trips, including the installed position and measured power.
        var exact = Self.entry(shop, major: 1, minor: 2, at: now)
        exact.position = InstalledPosition(position: Position(lon: 9.1801, lat: 48.7785), level: -1)
        exact.measuredPower = -61
        try await store.insertRegistryEntry(exact)
        #expect(try await store.registryEntry(id: exact.id) == exact)
        #expect(try await store.registryEntry(id: .generate()) == nil)

        // A live duplicate identity is refused; a decommissioned one is history and may repeat.
        let duplicate = await #expect(throws: DBeaconError.self) {
            try await store.insertRegistryEntry(Self.entry(staff, major: 1, minor: 2, at: now))
        }
        #expect(duplicate?.kind == .conflict && duplicate?.code == "duplicate_identity")
        let retired = Self.entry(staff, major: 1, minor: 2, status: .decommissioned, at: now)
        try await store.insertRegistryEntry(retired)
        let major = Self.entry(shop, major: 1, at: now.adding(seconds: 1))
        let any = Self.entry(staff, at: now.adding(seconds: 2))
        try await store.insertRegistryEntry(major)
        try await store.insertRegistryEntry(any)
        let missing = await #expect(throws: DBeaconError.self) {
            try await store.insertRegistryEntry(Self.entry(shop, id1: Self.other, at: now).with { $0.beacon = .generate() })
        }
        #expect(missing?.kind == .notFound && missing?.path == "beacon")

        // Updates check the version first, then the identity.
        var inactive = exact
        inactive.status = .inactive
        inactive.version = 2
        let stale = await #expect(throws: DBeaconError.self) { try await store.updateRegistryEntry(inactive, expectedVersion: 5) }
        #expect(stale?.kind == .preconditionFailed)
        try await store.updateRegistryEntry(inactive, expectedVersion: 1)
        #expect(try await store.registryEntry(id: exact.id) == inactive)
        var clash = retired
        clash.status = .active
        clash.version = 2
        let revived = await #expect(throws: DBeaconError.self) { try await store.updateRegistryEntry(clash, expectedVersion: 1) }
        #expect(revived?.code == "duplicate_identity")

        // Resolution: active patterns only, most specific first.
        let exactID = PhysicalBeaconIdentity.iBeacon(uuid: Self.uuid, major: 1, minor: 2)
        let sibling = PhysicalBeaconIdentity.iBeacon(uuid: Self.uuid, major: 1, minor: 3)
        let elsewhere = PhysicalBeaconIdentity.iBeacon(uuid: Self.uuid, major: 2, minor: 2)
        let unknown = PhysicalBeaconIdentity.iBeacon(uuid: Self.other, major: 1, minor: 2)
        var matches = try await store.activeRegistryMatches([exactID, sibling, elsewhere, unknown, exactID])
        #expect(matches.count == 4)
        #expect(matches[exactID]?.map(\.id) == [major.id, any.id])
        #expect(matches[sibling]?.map(\.id) == [major.id, any.id])
        #expect(matches[elsewhere]?.map(\.id) == [any.id])
        #expect(matches[unknown]?.isEmpty == true)
        var active = inactive
        active.status = .active
        active.version = 3
        try await store.updateRegistryEntry(active, expectedVersion: 2)
        matches = try await store.activeRegistryMatches([exactID])
        #expect(matches[exactID]?.map(\.id) == [exact.id, major.id, any.id])
        #expect(try await store.activeRegistryMatches([]).isEmpty)

        // Listing: creation order, pages, filters, and the digital beacon's visibility.
        let all = [exact.id, retired.id, major.id, any.id]
        func list(_ query: RegistryListQuery, _ viewer: Principal) async throws -> [RegistryID] {
            try await store.listRegistryEntries(query, viewer: viewer, now: now).items.map(\.id)
        }
        #expect(try await list(RegistryListQuery(), .admin) == all)
        let first = try await store.listRegistryEntries(RegistryListQuery(limit: 3), viewer: .admin, now: now)
        #expect(first.items.map(\.id) == Array(all.prefix(3)))
        let next = try #require(first.next)
        #expect(try await list(RegistryListQuery(limit: 3, after: next), .admin) == [any.id])
        #expect(try await list(RegistryListQuery(status: .decommissioned), .admin) == [retired.id])
        #expect(try await list(RegistryListQuery(beacon: staff.id), .admin) == [retired.id, any.id])
        #expect(try await list(RegistryListQuery(kind: .eddystoneUID), .admin).isEmpty)
        #expect(try await list(RegistryListQuery(id1: Self.uuid, owner: owner), .admin) == all)
        #expect(try await list(RegistryListQuery(owner: bob), .admin).isEmpty)
        #expect(try await list(RegistryListQuery(), .user(bob)) == [exact.id, major.id])
        #expect(try await list(RegistryListQuery(), .user(ann)) == all)

        // Deleting an entry, then its digital beacon (which takes the remaining entries along).
        #expect(try await store.deleteRegistryEntry(id: major.id))
        #expect(try await !store.deleteRegistryEntry(id: major.id))
        try await store.deleteBeacon(id: staff.id, expectedVersion: nil, fanOut: nil)
        #expect(try await list(RegistryListQuery(), .admin) == [exact.id])
    }

    @Test(arguments: Backend.all) func sightingBatchAnswersAreKeptOnceAndExpire(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let store = h.store
        let t0 = h.clock.now()
        let (ann, _) = try await h.user("ann")
        let (bob, _) = try await h.user("bob")
        let first = try await store.storeSightingBatchResponse(user: ann, batchID: "b1", response: #"{"n":1}"#, at: t0,
                                                               expireBefore: t0.adding(seconds: -3600))
        #expect(first == #"{"n":1}"#)
        // A replay (or a concurrent twin) gets the answer stored first.
        let again = try await store.storeSightingBatchResponse(user: ann, batchID: "b1", response: #"{"n":2}"#, at: t0,
                                                               expireBefore: t0.adding(seconds: -3600))
        #expect(again == #"{"n":1}"#)
        #expect(try await store.sightingBatchResponse(user: ann, batchID: "b1") == #"{"n":1}"#)
        // Batch ids are per user.
        #expect(try await store.sightingBatchResponse(user: bob, batchID: "b1") == nil)
        // Racing stores of one new batch agree on one answer.
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<8 {
                group.addTask {
                    try await store.storeSightingBatchResponse(user: bob, batchID: "race", response: "\(i)", at: t0,
                                                               expireBefore: t0.adding(seconds: -3600))
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(answers.count == 1)
        // Storing a later batch deletes the answers older than the expiry.
        let later = t0.adding(seconds: 7200)
        _ = try await store.storeSightingBatchResponse(user: ann, batchID: "b2", response: "{}", at: later,
                                                       expireBefore: later.adding(seconds: -3600))
        #expect(try await store.sightingBatchResponse(user: ann, batchID: "b1") == nil)
        #expect(try await store.sightingBatchResponse(user: ann, batchID: "b2") == "{}")
    }

    /// Racing registrations of one identity: exactly one wins, the others get the same
    /// `duplicate_identity` conflict (on PostGIS possibly from the unique index, not the check).
    @Test(arguments: Backend.all) func racingRegistrationsOfOneIdentityLetOneWin(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let shop = try await h.beacon(feature(name: "shop"), owner: owner)
        let store = h.store, now = h.clock.now()
        for round in 0..<5 {
            let outcomes = await withTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        do {
                            try await store.insertRegistryEntry(Self.entry(shop, major: round, minor: 1, at: now))
                            return "ok"
                        } catch let error as DBeaconError {
                            return error.code
                        } catch {
                            return "\(error)"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.sorted() == Array(repeating: "duplicate_identity", count: 7) + ["ok"],
                    "round \(round): \(outcomes)")
        }
    }

    /// The sighting time of a fence state survives a reload (the sighting exit timer needs it).
    @Test(arguments: Backend.all) func fenceStatesKeepTheirSightingTime(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, _) = try await h.user("ann")
        let shop = try await h.beacon(feature(name: "shop"), owner: owner)
        let hall = try await h.beacon(feature(name: "hall"), owner: owner)
        let t0 = h.clock.now()
        var update = FenceUpdate()
        update.states = [(ann, FenceState(beacon: shop.id, enteredAt: t0, dwelled: false, sightedAt: t0.adding(seconds: 5))),
                         (ann, FenceState(beacon: hall.id, enteredAt: t0, dwelled: true))]
        try await h.store.applyFenceUpdates([update])
        var states = try await h.store.loadFenceSnapshot(locationsSince: t0).states[ann]?.sorted { $0.beacon < $1.beacon } ?? []
        #expect(states == [FenceState(beacon: shop.id, enteredAt: t0, dwelled: false, sightedAt: t0.adding(seconds: 5)),
                           FenceState(beacon: hall.id, enteredAt: t0, dwelled: true)].sorted { $0.beacon < $1.beacon })
        // A fix-based refresh clears it again.
        update.states = [(ann, FenceState(beacon: shop.id, enteredAt: t0, dwelled: true))]
        try await h.store.applyFenceUpdates([update])
        states = try await h.store.loadFenceSnapshot(locationsSince: t0).states[ann] ?? []
        #expect(states.first { $0.beacon == shop.id } == FenceState(beacon: shop.id, enteredAt: t0, dwelled: true))
    }

    /// Every PostGIS migration but v3, in order (what a database from before v3 has, once the
    /// later ones are applied), then v3 once it is added.
    /// (v11 changes v3's index, so it comes after v3 too.)
    static let withoutV3 = PostGISSchema.migrations.map(\.0).filter { $0 != "v3" && $0 != "v11" }

    /// A PostGIS database created before v3 existed (v1, v2 and v4 applied) receives v3 on
    /// the next start and keeps its data; the registry then works on it.
    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func aPostGISDatabaseFromBeforeV3GetsTheRegistry() async throws {
        let directory = try Scratch.directory("dbeacon-test")
        let url = try Backend.postgis.freshDatabase(in: directory)
        let old = try await PostgresStore.connect(url: url, listen: false, logger: TestHarness.logger, deadline: Backend.testDeadline,
                                                  migrations: PostGISSchema.migrations.filter { $0.0 != "v3" && $0.0 != "v11" })
        let at = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!
        let user = User(id: .generate(), name: "owner", createdAt: at)
        do {
            #expect(try await old.appliedMigrations() == Self.withoutV3)
            try await old.createUser(user, tokenHash: Array(repeating: 7, count: 32))
            await #expect(throws: DBeaconError.self) { _ = try await old.registryEntry(id: .generate()) }
        } catch {
            await old.shutdown()
            throw error
        }
        await old.shutdown()

        let store = try await PostgresStore.connect(url: url, listen: false, logger: TestHarness.logger, deadline: Backend.testDeadline)
        do {
            #expect(try await store.appliedMigrations() == Self.withoutV3 + ["v3", "v11"])
            #expect(try await store.user(id: user.id) == user)
            let draft = try BeaconFeatureCodec.decodeDraft(feature(name: "shop"))
            let beacon = Beacon(
                id: .generate(), name: draft.name, description: draft.description, owner: user.id, location: draft.location,
                perimeter: draft.perimeter, lifetime: draft.lifetime, members: draft.members, tags: draft.tags,
                relationships: draft.relationships, content: draft.content, tracksOwner: draft.tracksOwner,
                service: nil, followersCount: 0, version: 1, createdAt: at, updatedAt: at)
            try await store.insertBeacon(beacon)
            let entry = Self.entry(beacon, major: 1, at: at)
            try await store.insertRegistryEntry(entry)
            #expect(try await store.registryEntry(id: entry.id) == entry)
            // Connecting again applies nothing twice.
            let again = try await PostgresStore.connect(url: url, listen: false, logger: TestHarness.logger, deadline: Backend.testDeadline)
            #expect(try await again.appliedMigrations() == Self.withoutV3 + ["v3", "v11"])
            await again.shutdown()
        } catch {
            await store.shutdown()
            throw error
        }
        await store.shutdown()
    }
}

extension RegistryEntry {
    func with(_ change: (inout RegistryEntry) -> Void) -> RegistryEntry {
        var copy = self
        change(&copy)
        return copy
    }
}

extension RegistryStore {
    /// As the operator, who sees every entry: every live duplicate conflicts.
    func insertRegistryEntry(_ entry: RegistryEntry) async throws {
        try await insertRegistryEntry(entry, conflictsVisibleTo: .admin, now: entry.createdAt)
    }

    func updateRegistryEntry(_ entry: RegistryEntry, expectedVersion: Int) async throws {
        try await updateRegistryEntry(entry, expectedVersion: expectedVersion, conflictsVisibleTo: .admin, now: entry.updatedAt)
    }
}
