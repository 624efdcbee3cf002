package import DBeaconCore

/// What a bearer token stands for, as stored now: a user whose account is enabled, or a device
/// (not revoked) of such a user. A disabled user's tokens stand for nothing.
package enum StoredCredential: Sendable, Hashable {
    case user(UserID)
    case device(DeviceID, user: UserID, lastSeenAt: Timestamp?)

    package var user: UserID {
        switch self {
        case .user(let id), .device(_, let id, _): id
        }
    }
}

/// Accounts: the admin's list and edits, token rotation, the credential check of every
/// request, a user's data for export, and erasure. One method is one transaction.
package protocol AccountStore: Sendable {
    /// The credential a token's SHA-256 stands for now (the user's own token, or a device's).
    /// Read on every request whose token is not cached; on PostgreSQL, concurrent checks share
    /// one statement.
    func credential(tokenHash: [UInt8], device: Bool) async throws -> StoredCredential?
    /// Whether this process may cache user tokens (`AuthService`): true where every change of
    /// a token is seen by this process before it answers another request (SpatiaLite: one
    /// server process; the CLI's changes arrive through the change log within a quarter
    /// second); false where other nodes change them (PostgreSQL: every request is checked).
    var cachesCredentials: Bool { get }
    /// Users in creation order after the position `after`, whose name starts with `namePrefix`.
    func users(namePrefix: String?, after: Int64?, limit: Int) async throws -> Page<User>
    /// Renames and/or disables (`disabled: true`) or enables a user; nil when there is none.
    func updateUser(_ id: UserID, name: String?, disabled: Bool?, at: Timestamp) async throws -> User?
    /// Replaces a user's token hash (the old token stops at once); nil when there is no such user.
    func replaceToken(of id: UserID, tokenHash: [UInt8], at: Timestamp) async throws -> User?
    /// Whether `id` belonged to a user who was erased (only a hash of it is kept).
    func isRetired(_ id: UserID) async throws -> Bool
    /// Erases a user and everything that is theirs, in one transaction (`ErasurePlan`); nil when
    /// there is no such user (erased already, or never). `skipping` leaves out the named tables'
    /// rules: only for the erasure suite's mutants.
    func eraseUser(_ id: UserID, at: Timestamp, skipping: Set<String>) async throws -> ErasureReport?
    /// One page of a section of the user's data, as stored (`ExportSection`).
    func exportRows(_ section: ExportSection, user: UserID, after: Int64?, limit: Int) async throws -> Page<JSONObject>
    /// Receives the users whose account changed (token, disabled, erased), committed by this
    /// process or another; nil: some account changed (another process on SpatiaLite, which
    /// does not say whose).
    func observeAccountChanges(_ observer: @escaping @Sendable (UserID?) -> Void)
}

extension AccountStore {
    package func eraseUser(_ id: UserID, at: Timestamp) async throws -> ErasureReport? {
        try await eraseUser(id, at: at, skipping: [])
    }
}

/// The sections of a user's export that come from one table each (the rest, such as beacons,
/// events and webhooks, are read through their own services).
package enum ExportSection: String, Sendable, CaseIterable {
    case devices, content, media, follows, tagFollows = "tag_follows", interests, saved, ratings, feedback, interactions
    case groups, invitations, attending, memberships, tours, tourVisits = "tour_visits", location
    case fenceStates = "fence_states", phoneStates = "phone_states", sightingBatches = "sighting_batches", registry
}
