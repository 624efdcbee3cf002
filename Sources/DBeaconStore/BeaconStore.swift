package import DBeaconCore

extension BeaconStore {
    /// `insertBeacon` without events.
    package func insertBeacon(_ beacon: Beacon) async throws {
        try await insertBeacon(beacon, events: [])
    }

    /// `updateBeacon` without extra events.
    package func updateBeacon(_ beacon: Beacon, expectedVersion: Int, fanOut: FollowerFanOut?) async throws {
        try await updateBeacon(beacon, expectedVersion: expectedVersion, fanOut: fanOut, events: [])
    }
}

/// Persistent storage of DBeacon. One method is one transaction; implementations must keep
/// the invariants documented on each method. The SpatiaLite implementation is the embedded
/// default; a PostGIS implementation serves scale-out deployments.
package protocol BeaconStore: Sendable {
    // MARK: Settings and users

    /// A server setting (such as the admin token hash), or nil.
    func setting(_ key: String) async throws -> String?
    /// Stores a setting unless one exists; returns the value now stored.
    func setSettingIfAbsent(_ key: String, value: String) async throws -> String
    /// Replaces a setting.
    func setSetting(_ key: String, value: String) async throws

    /// Adds a user with the SHA-256 hash of their token.
    func createUser(_ user: User, tokenHash: [UInt8]) async throws
    func user(tokenHash: [UInt8]) async throws -> User?
    func user(id: UserID) async throws -> User?
    func users(named name: String) async throws -> [User]

    // MARK: Beacons

    /// Inserts a new beacon and writes `events` in the same transaction; `conflict` when the id exists.
    func insertBeacon(_ beacon: Beacon, events: [Event]) async throws
    /// Inserts many beacons in one transaction (import, samples, benchmarks).
    func insertBeacons(_ beacons: [Beacon]) async throws
    func beacon(id: BeaconID) async throws -> Beacon?
    /// The beacons that exist among `ids`, in no particular order.
    func beacons(ids: [BeaconID]) async throws -> [Beacon]
    /// Replaces a beacon if its stored version is still `expectedVersion` (else
    /// `preconditionFailed`); the caller sets the new version and `updatedAt`. With `fanOut`,
    /// an event goes to each follower who may see the updated beacon, and `events` are
    /// written, in the same transaction. Invariant: a meeting's attendees who may no longer
    /// see it (taken off a private meeting's invitees) stop attending and following it in that
    /// transaction. Returns the followers count after the update.
    @discardableResult
    func updateBeacon(_ beacon: Beacon, expectedVersion: Int, fanOut: FollowerFanOut?, events: [Event]) async throws -> Int
    /// Deletes a beacon (with its tags, members, relationships from and to it, followers)
    /// if its stored version is `expectedVersion` (or unconditionally when nil). With `fanOut`,
    /// an event goes to each follower who could see it, in the same transaction.
    func deleteBeacon(id: BeaconID, expectedVersion: Int?, fanOut: FollowerFanOut?) async throws
    /// Beacons visible to `viewer` at `now`, filtered, in creation order, one page.
    func listBeacons(_ query: BeaconListQuery, viewer: Principal, now: Timestamp) async throws -> Page<Beacon>
    /// The SQL reference path for "which beacons cover this point", with visibility, lifetime
    /// and tag filters applied in the database. Unordered.
    func coveringBeacons(_ query: CoverQuery) async throws -> [Beacon]
    /// The beacons of `owner` whose location tracks the owner.
    func trackingBeacons(owner: UserID) async throws -> [Beacon]
    /// Every beacon, in batches, for loading in-memory indexes; with `shard` (index, count)
    /// only the beacons in the shard's blocks of `batchSize` sequence numbers (block `index`,
    /// then every `count`-th), so that several readers can load in parallel. `body` may suspend (a loader waiting for room) before the
    /// next batch is read.
    func forEachBeacon(batchSize: Int, shard: (index: Int, count: Int), _ body: @Sendable ([Beacon]) async throws -> Void) async throws
    /// Number of stored beacons.
    func beaconCount() async throws -> Int
    /// Number of beacons `owner` owns (per-user quota).
    func beaconCount(owner: UserID) async throws -> Int

    // MARK: Followers

    /// Adds a follower; false when already following.
    func follow(beacon: BeaconID, user: UserID, at: Timestamp) async throws -> Bool
    /// Removes a follower; false when not following.
    func unfollow(beacon: BeaconID, user: UserID) async throws -> Bool
    func followers(of beacon: BeaconID, limit: Int, after: Int64?) async throws -> Page<Follower>
    func isFollowing(beacon: BeaconID, user: UserID) async throws -> Bool
}

extension BeaconStore {
    /// Every beacon, in batches (one reader).
    package func forEachBeacon(batchSize: Int, _ body: @Sendable ([Beacon]) async throws -> Void) async throws {
        try await forEachBeacon(batchSize: batchSize, shard: (0, 1), body)
    }
}
