package import DBeaconCore

/// A user's phone with its own token (issue 30): revoked alone when lost, without changing the
/// user's token.
package struct Device: Sendable, Hashable {
    package var id: DeviceID
    package var user: UserID
    package var name: String
    package var createdAt: Timestamp
    /// When it last authenticated (updated at most once a minute).
    package var lastSeenAt: Timestamp?
    package var revokedAt: Timestamp?

    package init(id: DeviceID, user: UserID, name: String, createdAt: Timestamp, lastSeenAt: Timestamp? = nil, revokedAt: Timestamp? = nil) {
        self.id = id
        self.user = user
        self.name = name
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.revokedAt = revokedAt
    }
}

/// Devices and what the phone protocols last told each phone.
package protocol DeviceStore: Sendable {
    /// Adds a device; `conflict` (`too_many_devices`) when the user already has `maxActive`
    /// devices not revoked.
    func createDevice(_ device: Device, tokenHash: [UInt8], maxActive: Int) async throws
    /// The device a token hash belongs to (revoked ones too: the caller decides).
    func device(tokenHash: [UInt8]) async throws -> Device?
    /// The user's devices, newest first (at most `limit`).
    func devices(user: UserID, limit: Int) async throws -> [Device]
    /// Revokes one of the user's devices; false when the user has no such device.
    func revokeDevice(_ id: DeviceID, user: UserID, at: Timestamp) async throws -> Bool
    /// Records that the device authenticated at `at`.
    func touchDevice(_ id: DeviceID, at: Timestamp) async throws
    /// The phone protocol's state for one of the user's clients (JSON), if any.
    func phoneState(user: UserID, client: String) async throws -> String?
    func setPhoneState(user: UserID, client: String, state: String, at: Timestamp) async throws
}
