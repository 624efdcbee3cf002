import Crypto
package import DBeaconCore
package import DBeaconStore
import Synchronization

/// Issues and checks bearer tokens. Only SHA-256 hashes of tokens are stored; the admin
/// token's hash lives in the settings table.
///
/// **Credentials end at once.** A user's token is cached (hash → user) only where the store
/// says every change of it reaches this process before its next request (`cachesCredentials`:
/// SpatiaLite, one server process); on PostgreSQL every request reads it (concurrent requests
/// share one statement), so a token rotated, a user disabled or erased on one node is refused
/// by every node from the commit on. Device tokens are read every time. The cache is emptied
/// for a user when the store reports their account changed, and an entry read before such a
/// change is never cached after it (`CredentialCache.generation`).
///
/// Open event streams register their credential (`watch`): when an account changes (here or
/// on another node), the streams of that user check their credential again and end if it no
/// longer stands for the same caller.
package final class AuthService: Sendable {
    private let store: any BeaconStore & DeviceStore & AccountStore
    /// Seals the page cursors of every list for their reader (one key per database).
    package let cursors: PageCursor
    private let clock: any WallClock
    private let adminHash: Mutex<[UInt8]?> = Mutex(nil)
    /// Token hash → user, so the hot path does not hit the database (SpatiaLite only).
    private let cache = Mutex(CredentialCache())
    private let watchers = Mutex(Watchers())
    /// Hashes of tokens that authenticated lately (forgotten with their account's changes): a
    /// lock-out of an address or a name lets these through to their normal check, so an attacker
    /// behind a carrier's NAT does not lock out every phone behind it (`seenValid`).
    private let recentlyValid = Mutex(Set<[UInt8]>())

    package static let adminHashSetting = "admin_token_sha256"

    /// The authenticated caller of a request: who, with which device token (if one), and the
    /// hash of the token presented (nil for a caller made in process, such as the CLI).
    package struct Caller: Sendable {
        package var principal: Principal
        package var device: DeviceID?
        package var tokenHash: [UInt8]?

        package init(principal: Principal, device: DeviceID? = nil, tokenHash: [UInt8]? = nil) {
            self.principal = principal
            self.device = device
            self.tokenHash = tokenHash
        }
    }

    struct CredentialCache {
        var users: [[UInt8]: UserID] = [:]
        /// Bumped by every account change: a credential read before it is not cached after it.
        var generation: UInt64 = 0
    }

    struct Watchers {
        var next: UInt64 = 0
        var open: [UInt64: (caller: Caller, revoked: @Sendable () -> Void)] = [:]
    }

    package init(store: any BeaconStore & DeviceStore & AccountStore, clock: any WallClock = SystemClock()) {
        self.store = store
        self.cursors = PageCursor(store: store)
        self.clock = clock
        // Weakly: the store keeps its observers, and this service holds the store.
        store.observeAccountChanges { [weak self] user in self?.accountChanged(user) }
    }

    /// SHA-256 of a token.
    package static func hash(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(token.utf8)))
    }

    /// A new random bearer token (256 bits of entropy).
    package static func makeToken() -> String {
        "dbt_" + RandomToken.base62(count: 43)
    }

    /// An account changed (nil: some account): its cached tokens are forgotten at once, and
    /// the streams of its user check their credential again.
    private func accountChanged(_ user: UserID?) {
        cache.withLock { c in
            c.generation &+= 1
            if let user { c.users = c.users.filter { $0.value != user } } else { c.users.removeAll() }
        }
        recentlyValid.withLock { $0.removeAll() }
        let affected = watchers.withLock { w in w.open.filter { user == nil || $0.value.caller.principal.userID == user } }
        guard !affected.isEmpty else { return }
        DatabaseDeadline.unboundedTask {
            for (id, watcher) in affected {
                guard let hash = watcher.caller.tokenHash else { continue }
                let current: Caller?
                do { current = try await self.verify(tokenHash: hash, device: watcher.caller.device != nil) } catch {
                    continue  // a database fault keeps the stream (it is checked again at the next change)
                }
                if current?.principal != watcher.caller.principal || current?.device != watcher.caller.device {
                    self.unwatch(id)
                    watcher.revoked()
                }
            }
        }
    }

    /// Registers an open stream's caller: `revoked` is called (once) when its credential stops
    /// standing for it. Returns the id to `unwatch` with when the stream ends.
    package func watch(_ caller: Caller, revoked: @escaping @Sendable () -> Void) -> UInt64 {
        watchers.withLock { w in
            w.next += 1
            w.open[w.next] = (caller, revoked)
            return w.next
        }
    }

    package func unwatch(_ id: UInt64) {
        _ = watchers.withLock { $0.open.removeValue(forKey: id) }
    }

    /// Sets up the admin token: a given token replaces the stored hash; without one the stored
    /// hash is kept, or, on first start, a token is generated and returned so it can be shown once.
    @discardableResult
    package func configureAdmin(token: String?) async throws -> String? {
        if let token, !token.isEmpty {
            let h = Self.hash(token)
            try await store.setSetting(Self.adminHashSetting, value: Hex.string(h))
            adminHash.withLock { $0 = h }
            return nil
        }
        if let stored = try await store.setting(Self.adminHashSetting), let h = Hex.bytes(stored) {
            adminHash.withLock { $0 = h }
            return nil
        }
        let generated = Self.makeToken()
        let h = Self.hash(generated)
        let text = Hex.string(h)
        let stored = try await store.setSettingIfAbsent(Self.adminHashSetting, value: text)
        adminHash.withLock { $0 = Hex.bytes(stored) }
        return stored == text ? generated : nil
    }

    /// A new random device token (256 bits of entropy); `dbd_` tells it from a user's token.
    package static func makeDeviceToken() -> String {
        "dbd_" + RandomToken.base62(count: 43)
    }

    /// Active (not revoked) devices a user may have at once.
    package static let maxDevicesPerUser = 20

    /// The caller a token stands for (with its device for a device token, `dbd_…`), or nil.
    /// Device tokens are read every time, not cached, so a revocation holds at once on every
    /// node; their `last_seen_at` is updated at most once a minute.
    package func authenticateCaller(token: String) async throws -> Caller? {
        guard !token.isEmpty, token.utf8.count <= 200 else { return nil }
        let h = Self.hash(token)
        if let admin = adminHash.withLock({ $0 }), constantTimeEqual(admin, h) { return Caller(principal: .admin, tokenHash: h) }
        let isDevice = token.hasPrefix("dbd_")
        if !isDevice, store.cachesCredentials, let cached = cache.withLock({ $0.users[h] }) {
            return Caller(principal: .user(cached), tokenHash: h)
        }
        return try await verify(tokenHash: h, device: isDevice)
    }

    /// Whether `token` authenticated lately on this process (and its account did not change
    /// since): a request presenting it during a lock-out of its address is checked as usual,
    /// any other is refused without a look at the database.
    package func seenValid(token: String) -> Bool {
        guard !token.isEmpty, token.utf8.count <= 200 else { return false }
        let h = Self.hash(token)
        if let admin = adminHash.withLock({ $0 }), constantTimeEqual(admin, h) { return true }
        return recentlyValid.withLock { $0.contains(h) }
    }

    /// What a token hash stands for now, read from the store (the user's token is cached
    /// where the store allows it).
    private func verify(tokenHash h: [UInt8], device isDevice: Bool) async throws -> Caller? {
        let generation = cache.withLock { $0.generation }
        guard let credential = try await store.credential(tokenHash: h, device: isDevice) else { return nil }
        recentlyValid.withLock { seen in
            if seen.count > 100_000 { seen.removeAll() }
            seen.insert(h)
        }
        switch credential {
        case .user(let user):
            if store.cachesCredentials {
                cache.withLock { c in
                    guard c.generation == generation else { return }
                    if c.users.count > 100_000 { c.users.removeAll() }
                    c.users[h] = user
                }
            }
            return Caller(principal: .user(user), tokenHash: h)
        case .device(let device, let user, let lastSeenAt):
            let now = clock.now()
            if lastSeenAt.map({ now.seconds(since: $0) >= 60 }) ?? true {
                try await store.touchDevice(device, at: now)
            }
            return Caller(principal: .user(user), device: device, tokenHash: h)
        }
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
        try await authenticateCaller(token: token)?.principal
    }

    /// Gives the user a new token (shown only this once): the old one is refused from the
    /// commit on, on every node; devices keep theirs. 404 when there is no such user.
    package func replaceToken(of user: UserID) async throws -> (User, String) {
        let token = Self.makeToken()
        guard let updated = try await store.replaceToken(of: user, tokenHash: Self.hash(token), at: clock.now()) else {
            throw DBeaconError.notFound("user \(user)")
        }
        return (updated, token)
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
        for _ in 0..<3 {
            let user = User(id: .generate(), name: trimmed, createdAt: clock.now())
            do {
                try await store.createUser(user, tokenHash: Self.hash(token))
                return (user, token)
            } catch let error as DBeaconError where error.code == "user_id_retired" {
                continue  // an erased user's id (astronomically rare): draw another
            }
        }
        throw DBeaconError.internalError("no fresh user id")
    }

    private func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

