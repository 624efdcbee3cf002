package import DBeaconCore
import Foundation

/// What one client may do how often (`dbeacon serve --help`, README "Limits"). A rate of 0
/// turns that limit off. Bursts are `burstSeconds` worth of the rate.
package struct RateLimits: Sendable {
    /// Writes (POST, PUT, PATCH, DELETE other than location reports) per second per token.
    package var writesPerSecond = 20.0
    /// Location reports (`POST /v1/me/location`, `/v1/sightings`) per second per token.
    package var locationReportsPerSecond = 20.0
    /// Location fixes per user and minute (a batch counts each fix).
    package var fixesPerMinute = 1_200.0
    /// Requests with a missing or bad token per second per client address; beyond it the
    /// token is not even checked.
    package var authFailuresPerSecond = 2.0
    /// How many seconds of the rate a client may spend at once.
    package var burstSeconds = 5.0
    /// Seconds on a monotonic clock, which the buckets refill by (tests stop it, so a slow
    /// machine does not refill a bucket between two requests).
    package var clock: @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }

    package init() {}

    /// No limits (benchmarks, outside test suites that probe the API itself).
    package static var off: RateLimits {
        var r = RateLimits()
        r.writesPerSecond = 0
        r.locationReportsPerSecond = 0
        r.fixesPerMinute = 0
        r.authFailuresPerSecond = 0
        return r
    }
}

/// Token buckets by key (`writes:usr_…`, `auth:127.0.0.1`), refilled continuously. One lock
/// around a dictionary: a request takes it once, for a few hundred nanoseconds. Buckets that
/// have refilled completely are dropped now and then, so idle clients cost nothing.
package final class RateLimiter: @unchecked Sendable {
    /// The kinds of limit, also the `category` label of the Prometheus counter.
    package enum Category: String, Sendable, CaseIterable {
        case writes, locationReports = "location_reports", fixes, authFailures = "auth_failures"
    }

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private let limits: RateLimits
    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]
    private var lastSweep = 0.0
    /// Called with the category each time a request is refused.
    private let refused: @Sendable (Category) -> Void

    package init(_ limits: RateLimits, refused: @escaping @Sendable (Category) -> Void = { _ in }) {
        self.limits = limits
        self.refused = refused
    }

    /// Per second, and the bucket size, of a category.
    private func rate(_ category: Category) -> (perSecond: Double, capacity: Double) {
        let perSecond: Double
        switch category {
        case .writes: perSecond = limits.writesPerSecond
        case .locationReports: perSecond = limits.locationReportsPerSecond
        case .fixes: perSecond = limits.fixesPerMinute / 60
        case .authFailures: perSecond = limits.authFailuresPerSecond
        }
        // A batch of fixes may be as large as a minute's worth.
        let capacity = category == .fixes ? max(limits.fixesPerMinute, 1) : max(perSecond * limits.burstSeconds, 1)
        return (perSecond, capacity)
    }

    /// Takes `cost` tokens from the bucket of `category` and `key`, or throws 429 with the
    /// seconds until that many tokens are there again.
    package func consume(_ category: Category, key: String, cost: Double = 1) throws(DBeaconError) {
        if let wait = take(category, key: key, cost: cost, dryRun: false) {
            refused(category)
            throw Self.error(category, wait: wait, cost: cost)
        }
    }

    /// Whether the bucket is empty (without taking from it); throws 429 if so.
    package func check(_ category: Category, key: String) throws(DBeaconError) {
        if let wait = take(category, key: key, cost: 1, dryRun: true) {
            refused(category)
            throw Self.error(category, wait: wait, cost: 1)
        }
    }

    /// Nil when taken (or available, for a dry run); otherwise seconds to wait.
    private func take(_ category: Category, key: String, cost: Double, dryRun: Bool) -> Double? {
        let (perSecond, capacity) = rate(category)
        guard perSecond > 0 else { return nil }
        let t = limits.clock()
        let id = category.rawValue + ":" + key
        lock.lock()
        defer { lock.unlock() }
        if t - lastSweep > 60 { sweep(at: t) }
        var bucket = buckets[id] ?? Bucket(tokens: capacity, updated: t)
        bucket.tokens = min(capacity, bucket.tokens + (t - bucket.updated) * perSecond)
        bucket.updated = t
        let needed = min(cost, capacity)
        guard bucket.tokens >= needed else {
            buckets[id] = bucket
            return (needed - bucket.tokens) / perSecond
        }
        if !dryRun { bucket.tokens -= needed }
        buckets[id] = bucket
        return nil
    }

    /// Drops buckets that are full again. Holds the lock.
    private func sweep(at t: Double) {
        lastSweep = t
        buckets = buckets.filter { id, bucket in
            let category = Category(rawValue: String(id.prefix { $0 != ":" })) ?? .writes
            let (perSecond, capacity) = rate(category)
            return bucket.tokens + (t - bucket.updated) * perSecond < capacity
        }
    }

    private static func error(_ category: Category, wait: Double, cost: Double) -> DBeaconError {
        let seconds = max(1, Int(wait.rounded(.up)))
        let what: String
        switch category {
        case .writes: what = "too many writes with this token"
        case .locationReports: what = "too many location reports with this token"
        case .fixes: what = "too many location fixes for this user (a batch counts each fix)"
        case .authFailures: what = "too many requests without a valid token from this address"
        }
        return .tooManyRequests("\(what); retry in \(seconds) s", retryAfter: seconds)
    }
}
