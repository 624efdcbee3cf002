import Crypto
package import DBeaconCore
package import DBeaconStore
import Synchronization

/// Issues and checks bearer tokens. Only SHA-256 hashes of tokens are stored; the admin
/// token's hash lives in the settings table.
package final class AuthService: Sendable {
    private let store: any BeaconStore & DeviceStore
    /// Seals the page cursors of every list for their reader (one key per database).
    package let cursors: PageCursor
    private let clock: any WallClock
    private let adminHash: Mutex<[UInt8]?> = Mutex(nil)
    /// Token hash → principal, so the hot path does not hit the database.
    private let cache: Mutex<[[UInt8]: UserID]> = Mutex([:])

    package static let adminHashSetting = "admin_token_sha256"

    package init(store: any BeaconStore & DeviceStore, clock: any WallClock = SystemClock()) {
        self.store = store
        self.cursors = PageCursor(store: store)
        self.clock = clock
    }

    /// SHA-256 of a token.
    package static func hash(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(token.utf8)))
    }

    /// A new random bearer token (256 bits of entropy).
    package static func makeToken() -> String {
        "dbt_" + RandomToken.base62(count: 43)
    }

    /// Sets up the admin token: a given token replaces the stored hash; without one the stored
    /// hash is kept, or, on first start, a token is generated and returned so it can be shown once.
    @discardableResult
    package func configureAdmin(token: String?) async throws -> String? {
        if let token, !token.isEmpty {
            let h = Self.hash(token)
            try await store.setSetting(Self.adminHashSetting, value: hex(h))
            adminHash.withLock { $0 = h }
            return nil
        }
        if let stored = try await store.setting(Self.adminHashSetting), let h = unhex(stored) {
            adminHash.withLock { $0 = h }
            return nil
        }
        let generated = Self.makeToken()
        let h = Self.hash(generated)
        let stored = try await store.setSettingIfAbsent(Self.adminHashSetting, value: hex(h))
        adminHash.withLock { $0 = unhex(stored) }
        return stored == hex(h) ? generated : nil
    }

    /// A new random device token (256 bits of entropy); `dbd_` tells it from a user's token.
    package static func makeDeviceToken() -> String {
        "dbd_" + RandomToken.base62(count: 43)
    }

    /// Active (not revoked) devices a user may have at once.
    package static let maxDevicesPerUser = 20

    /// The principal a token stands for, and the device when it is a device token (`dbd_…`).
    /// Device tokens are looked up every time, not cached, so a revocation holds at once on
    /// every node; their `last_seen_at` is updated at most once a minute.
    package func authenticateCaller(token: String) async throws -> (principal: Principal, device: DeviceID?)? {
        guard token.hasPrefix("dbd_") else { return try await authenticate(token: token).map { ($0, nil) } }
        guard token.utf8.count <= 200, let device = try await store.device(tokenHash: Self.hash(token)),
              device.revokedAt == nil else { return nil }
        let now = clock.now()
        if device.lastSeenAt.map({ now.seconds(since: $0) >= 60 }) ?? true {
            try await store.touchDevice(device.id, at: now)
        }
        return (.user(device.user), device.id)
    }

    /// Issues a device token for the caller (shown only this once). Devices are managed with
    /// the user's own token: a device token cannot add or revoke devices.
    package func createDevice(name: String, by principal: Principal, device: DeviceID?) async throws -> (Device, String) {
        let user = try Self.deviceOwner(principal, device)
        let trimmed = String(name.trimmingSpaces)
        guard !trimmed.isEmpty, trimmed.unicodeScalars.count <= 100 else {
            throw DBeaconError.invalid("name", "name must be 1–100 characters", code: "invalid_name")
        }
        let token = Self.makeDeviceToken()
        let created = Device(id: .generate(), user: user, name: trimmed, createdAt: clock.now())
        try await store.createDevice(created, tokenHash: Self.hash(token), maxActive: Self.maxDevicesPerUser)
        return (created, token)
    }

    /// The caller's devices, newest first.
    package func devices(by principal: Principal, device: DeviceID?) async throws -> [Device] {
        let user = try Self.deviceOwner(principal, device)
        return try await store.devices(user: user, limit: 100)
    }

    /// Revokes one of the caller's devices: its token stops working at once. 404 for a device
    /// that is not theirs (as for one that does not exist).
    package func revokeDevice(_ id: DeviceID, by principal: Principal, device: DeviceID?) async throws {
        let user = try Self.deviceOwner(principal, device)
        guard try await store.revokeDevice(id, user: user, at: clock.now()) else {
            throw DBeaconError.notFound("device \(id.rawValue)")
        }
    }

    private static func deviceOwner(_ principal: Principal, _ device: DeviceID?) throws -> UserID {
        guard let user = principal.userID else { throw DBeaconError.forbidden("devices belong to users; the admin token has none") }
        guard device == nil else {
            throw DBeaconError.forbidden("devices are managed with the user's own token, not a device token")
        }
        return user
    }

    /// The principal a bearer token stands for, or nil.
    package func authenticate(token: String) async throws -> Principal? {
        guard !token.isEmpty, token.utf8.count <= 200 else { return nil }
        let h = Self.hash(token)
        if let admin = adminHash.withLock({ $0 }), constantTimeEqual(admin, h) { return .admin }
        if let cached = cache.withLock({ $0[h] }) { return .user(cached) }
        guard let user = try await store.user(tokenHash: h) else { return nil }
        cache.withLock {
            if $0.count > 100_000 { $0.removeAll() }
            $0[h] = user.id
        }
        return .user(user.id)
    }

    /// Whether `name` names `user`: their id, or their name.
    package func isNamed(_ user: UserID, _ name: String) async throws -> Bool {
        if name == user.rawValue { return true }
        return try await store.user(id: user)?.name == name
    }

    /// Creates a user and returns it with its token (shown only this once).
    package func createUser(name: String, by principal: Principal) async throws -> (User, String) {
        guard principal.isAdmin else { throw DBeaconError.forbidden("only the admin token may create users") }
        return try await createUser(name: name)
    }

    /// Creates a user without an authorization check (CLI on the local database).
    package func createUser(name: String) async throws -> (User, String) {
        let trimmed = String(name.trimmingSpaces)
        guard !trimmed.isEmpty, trimmed.unicodeScalars.count <= 100 else { // counted as the schema counts: code points
            throw DBeaconError.invalid("name", "name must be 1–100 characters", code: "invalid_name")
        }
        let token = Self.makeToken()
        let user = User(id: .generate(), name: trimmed, createdAt: clock.now())
        try await store.createUser(user, tokenHash: Self.hash(token))
        return (user, token)
    }

    private func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    private func unhex(_ s: String) -> [UInt8]? {
        let chars = Array(s.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let b = UInt8(String(decoding: chars[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
