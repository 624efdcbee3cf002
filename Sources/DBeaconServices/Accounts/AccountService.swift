package import DBeaconCore
package import DBeaconStore
import Synchronization

/// The account lifecycle (issue 43): a user rotates their token, exports their data and
/// erases their account; the admin lists, shows, renames, disables, enables and erases users
/// and rotates their tokens.
///
/// Authorization is decided here: the user-management operations are the admin token's only
/// (403 for anyone else, whatever the id, so they say nothing about which users exist); a
/// user's own operations need the user's own token, not a device's (a lost phone must not
/// be able to lock its owner out or take their data).
package final class AccountService: Sendable {
    let store: any ServiceBackingStore
    package let auth: AuthService
    package let beacons: BeaconService
    package let fences: FenceEngine
    package let feed: EventFeed
    let clock: any WallClock
    /// Run after each erasure (the server scrubs its index of the user and writes its snapshot
    /// anew, on a compacted coordinate file, so no file keeps their beacons); awaited by `settle`.
    private let afterErasure: (@Sendable (UserID, ErasureReport) async -> Void)?
    private let followUps = Mutex<[Task<Void, Never>]>([])

    package static let maxPageSize = 500

    package init(store: any ServiceBackingStore, auth: AuthService, beacons: BeaconService, fences: FenceEngine, feed: EventFeed,
                 clock: any WallClock, afterErasure: (@Sendable (UserID, ErasureReport) async -> Void)? = nil) {
        self.store = store
        self.auth = auth
        self.beacons = beacons
        self.fences = fences
        self.feed = feed
        self.clock = clock
        self.afterErasure = afterErasure
    }

    // MARK: The caller's own account

    /// The caller's own user (403 for the admin token, which belongs to no user).
    package func me(_ principal: Principal) async throws -> User {
        guard let id = principal.userID else { throw DBeaconError.forbidden("the admin token belongs to no user") }
        guard let user = try await store.user(id: id) else { throw DBeaconError.unauthorized("the account no longer exists") }
        return user
    }

    /// `POST /v1/me/token`: a new token for the caller (shown once); the old one stops at once.
    package func rotateOwnToken(by principal: Principal, device: DeviceID?) async throws -> (User, String) {
        let user = try Self.ownAccount(principal, device, "rotate the token")
        return try await auth.replaceToken(of: user)
    }

    /// `DELETE /v1/me?confirm=<id>`: erases the caller's account. `confirm` must repeat the
    /// caller's id (a guard against an accidental call): 422 naming `confirm` otherwise.
    package func eraseOwnAccount(confirm: String?, by principal: Principal, device: DeviceID?) async throws -> ErasureReport {
        let user = try Self.ownAccount(principal, device, "delete the account")
        guard let confirm, !confirm.isEmpty else {
            throw DBeaconError.invalid("confirm", "repeat your user id (\(user.rawValue)) in confirm to delete your account",
                                       code: "confirmation_required")
        }
        guard confirm == user.rawValue else {
            throw DBeaconError.invalid("confirm", "confirm must be your own user id", code: "confirmation_mismatch")
        }
        guard let report = try await erase(user) else { throw DBeaconError.unauthorized("the account no longer exists") }
        return report
    }

    private static func ownAccount(_ principal: Principal, _ device: DeviceID?, _ what: String) throws -> UserID {
        guard let user = principal.userID else {
            throw DBeaconError.forbidden("the admin token belongs to no user; it is set with --admin-token")
        }
        guard device == nil else {
            throw DBeaconError(.forbidden, code: "device_token", message: "a device token cannot \(what): use the user's own token")
        }
        return user
    }

    // MARK: The admin's user management

    package struct UserSummary: Sendable {
        package var user: User
        package var beacons: Int
        package var devices: Int
    }

    /// 403 `admin_only` for anyone but the admin token.
    package static func requireAdmin(_ principal: Principal) throws {
        guard principal.isAdmin else { throw DBeaconError(.forbidden, code: "admin_only", message: "only the admin token manages users") }
    }

    /// Users in creation order, whose name starts with `namePrefix`.
    package func list(namePrefix: String?, after: Int64?, limit: Int, by principal: Principal) async throws -> Page<User> {
        try Self.requireAdmin(principal)
        return try await store.users(namePrefix: namePrefix, after: after, limit: min(max(limit, 1), Self.maxPageSize))
    }

    /// One user with how many beacons and active devices they have; 404 when there is none.
    package func get(_ id: UserID, by principal: Principal) async throws -> UserSummary {
        try Self.requireAdmin(principal)
        guard let user = try await store.user(id: id) else { throw DBeaconError.notFound("user \(id)") }
        return try await summary(user)
    }

    package func summary(_ user: User) async throws -> UserSummary {
        let devices = try await store.devices(user: user.id, limit: 1000).filter { $0.revokedAt == nil }.count
        return UserSummary(user: user, beacons: try await store.beaconCount(owner: user.id), devices: devices)
    }

    /// Renames a user and/or disables or enables them. A disabled user and their devices get
    /// 401 everywhere, their event streams end, their webhooks wait; enabling restores all.
    package func update(_ id: UserID, name: String?, disabled: Bool?, by principal: Principal) async throws -> UserSummary {
        try Self.requireAdmin(principal)
        var trimmed: String?
        if let name {
            let t = String(name.trimmingSpaces)
            guard !t.isEmpty, t.unicodeScalars.count <= 100 else {
                throw DBeaconError.invalid("name", "name must be 1–100 characters", code: "invalid_name")
            }
            trimmed = t
        }
        guard let user = try await store.updateUser(id, name: trimmed, disabled: disabled, at: clock.now()) else {
            throw DBeaconError.notFound("user \(id)")
        }
        return try await summary(user)
    }

    /// A new token for a user (shown once to the admin).
    package func rotateToken(of id: UserID, by principal: Principal) async throws -> (User, String) {
        try Self.requireAdmin(principal)
        return try await auth.replaceToken(of: id)
    }

    /// `DELETE /v1/users/{id}`: erases a user. Erasing again changes nothing and answers 404,
    /// as for an id that never was a user: no answer tells an erased user from one who never
    /// existed.
    package func erase(_ id: UserID, by principal: Principal) async throws -> ErasureReport {
        try Self.requireAdmin(principal)
        guard let report = try await erase(id) else { throw DBeaconError.notFound("user \(id)") }
        return report
    }

    // MARK: Erasure

    /// Erases a user and everything that is theirs (`ErasurePlan`, one transaction); nil when
    /// there is no such user. Their fixes are refused from the start and their in-memory fence
    /// state forgotten; a transaction that fails rolls back whole (the user stays, and may be
    /// erased again), one that lost a deadlock is retried. `skipping` is the erasure suite's
    /// mutants only.
    package func erase(_ id: UserID, skipping: Set<String> = []) async throws -> ErasureReport? {
        guard try await store.user(id: id) != nil else { return nil }
        try await fences.forget(id)
        let report: ErasureReport?
        do {
            var attempt = 0
            while true {
                do {
                    report = try await store.eraseUser(id, at: clock.now(), skipping: skipping)
                    break
                } catch let error as DBeaconError where error.code == "database_busy" && attempt < 3 {
                    attempt += 1
                    try await Task.sleep(for: .milliseconds(20 << attempt))
                }
            }
        } catch {
            await fences.restore(id)
            throw error
        }
        // Again, in case a reload read their state back while the transaction ran. The user is
        // dropped from memory before anything can fail; what may fail is waiting for the
        // engine's pending writes, which the erasure (committed) no longer depends on.
        try? await fences.forget(id)
        if let report, let afterErasure {
            // (Work after the answer: not bounded by the request's deadline.)
            let task = DatabaseDeadline.unboundedTask { await afterErasure(id, report) }
            followUps.withLock { $0.append(task) }
        }
        return report
    }

    /// Waits for the work that follows erasures (index snapshots without the erased beacons).
    package func settle() async {
        while true {
            let tasks = followUps.withLock { t in defer { t = [] }; return t }
            if tasks.isEmpty { return }
            for task in tasks { await task.value }
        }
    }
}
