import Crypto
package import DBeaconCore
package import DBeaconStore
import Synchronization

/// Issues and checks bearer tokens. Only SHA-256 hashes of tokens are stored; the admin
/// token's hash lives in the settings table.
package final class AuthService: Sendable {
    private let store: any BeaconStore
    /// Seals the page cursors of every list for their reader (one key per database).
    package let cursors: PageCursor
    private let clock: any WallClock
    private let adminHash: Mutex<[UInt8]?> = Mutex(nil)
    /// Token hash → principal, so the hot path does not hit the database.
    private let cache: Mutex<[[UInt8]: UserID]> = Mutex([:])

    package static let adminHashSetting = "admin_token_sha256"

    package init(store: any BeaconStore, clock: any WallClock = SystemClock()) {
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
