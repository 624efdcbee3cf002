package import DBeaconCore

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
    /// Stores phone states (`PhoneService` groups those of concurrent posts into one call),
    /// in one transaction, in order (a later one for the same client replaces an earlier one).
    /// A state for a user no longer stored is left out: the user was erased meanwhile, and
    /// the others are written.
    func setPhoneStates(_ states: [PhoneStateWrite]) async throws
    /// Whether every phone state is written by this process, so a copy kept here is the stored
    /// one (SpatiaLite: the server that serves the phones writes them; a device revoked or a
    /// user erased by another process arrives as an account change within a quarter second);
    /// false where other nodes write them (PostgreSQL: a post reads its phone's state).
    var phoneStatesStayInProcess: Bool { get }
}

/// A phone's state to store (`DeviceStore.setPhoneStates`): the phone protocol's JSON for one
/// of the user's clients, as of `at`.
package struct PhoneStateWrite: Sendable {
    package var user: UserID
    package var client: String
    package var state: String
    package var at: Timestamp

    package init(user: UserID, client: String, state: String, at: Timestamp) {
        self.user = user
        self.client = client
        self.state = state
        self.at = at
    }
}
