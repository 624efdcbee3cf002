import DBeaconApp
import DBeaconCore
import DBeaconHTTP
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// Per-token rate limits, bad-token floods per address and per-user quotas (issue 11.8).
@Suite(.bounded) struct RateLimitTests {
    @Test(arguments: Backend.all) func writesAreLimitedPerTokenWithRetryAfter(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) {
            $0.rateLimits = RateLimits()
            // Bursts of 5, refilled once per 100 s: a slow machine cannot refill between requests.
            $0.rateLimits.writesPerSecond = 0.01
            $0.rateLimits.burstSeconds = 500
        }
        let (_, ann) = try await h.user("ann")
        let (_, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let started = ContinuousClock.now
            for i in 0..<5 {
                #expect(try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "b\(i)")).status == .created)
            }
            let refused = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "one too many"))
            #expect(refused.status == .tooManyRequests && refused.errorCode == "rate_limited", "\(refused.text)")
            let wait = Int(refused.headers[.retryAfter] ?? "") ?? 0
            // One token comes back 100 s after the first write (minus the time the writes took).
            let elapsed = Int((ContinuousClock.now - started).components.seconds)
            #expect(wait >= 100 - elapsed - 1 && wait <= 100, "Retry-After \(wait) s, \(elapsed) s after the first write")
            #expect(try await client.call(.get, "/v1/beacons", token: ann).features.count == 5, "reads are not limited; nothing was stored")
            #expect(try await client.call(.post, "/v1/beacons", token: bob, json: feature(name: "bob's")).status == .created,
                    "the limit is per token")
            #expect(try await client.call(.post, "/v1/users", token: TestHarness.adminToken, json: ["name": "x"]).status == .created)
            let metrics = try await client.call(.get, "/metrics", token: TestHarness.adminToken)
            #expect(metrics.text.contains(#"dbeacon_rate_limited_total{category="writes"} 1"#), "\(metrics.text.prefix(2000))")
        }
    }

    @Test(arguments: Backend.all) func fixesAreLimitedPerUserAndMinute(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) {
            $0.rateLimits = RateLimits()
            $0.rateLimits.fixesPerMinute = 10
            $0.rateLimits.clock = { 1_000 }  // stopped: nothing refills between the two requests
        }
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let batch: JSONValue = ["fixes": .array((0..<8).map { i in
                ["lat": 48.7784, "lon": 9.18, "timestamp": .string(h.clock.now().adding(seconds: Double(i - 10)).rfc3339)]
            })]
            #expect(try await client.call(.post, "/v1/me/location", token: ann, json: batch).status == .ok)
            let more = try await client.call(.post, "/v1/me/location", token: ann, json: [
                "fixes": .array((0..<5).map { _ in ["lat": 48.7784, "lon": 9.18] }),
            ])
            #expect(more.status == .tooManyRequests && more.headers[.retryAfter] != nil, "\(more.text)")
        }
    }

    @Test(arguments: Backend.all) func badTokenFloodsAreCutOffPerAddress(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) {
            $0.rateLimits = RateLimits()
            $0.rateLimits.authFailuresPerSecond = 0.01  // bursts of 5, see above
            $0.rateLimits.burstSeconds = 500
        }
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            for _ in 0..<5 { #expect(try await client.call(.get, "/v1/beacons", token: "guess").status == .unauthorized) }
            let cut = try await client.call(.get, "/v1/beacons", token: "guess")
            #expect(cut.status == .tooManyRequests && cut.headers[.retryAfter] != nil)
            #expect(try await client.call(.get, "/v1/beacons").status == .tooManyRequests, "no token is a failure too")
            #expect(try await client.call(.get, "/healthz").status == .ok, "operations endpoints are not behind the limit")
            _ = ann
        }
    }

    @Test(arguments: Backend.all) func beaconsPerUserAreCapped(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.maxBeaconsPerUser = 2 }
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            #expect(try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "1")).status == .created)
            #expect(try await client.call(.post, "/v1/meetings", token: ann, json: [
                "name": "2", "location": ["lat": 48.7784, "lon": 9.18], "start": "2026-11-21T11:00:00Z", "end": "2026-11-21T13:00:00Z",
            ]).status == .created)
            let third = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "3"))
            #expect(third.status == .tooManyRequests && third.errorCode == "beacon_quota_exceeded", "\(third.text)")
            let group = try await client.call(.post, "/v1/groups", token: ann, json: ["name": "g", "range_m": 100])
            #expect(group.errorCode == "beacon_quota_exceeded")
            #expect(try await h.store.beaconCount() == 2)
        }
    }

    @Test(arguments: Backend.all) func promotionInteractionLimitSaysWhenToRetry(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.services.maxInteractionsPerMinute = 1 }
        let (_, ann) = try await h.user("ann")
        let (_, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let promo = try await client.call(.post, "/v1/promotions", token: ann, json: [
                "name": "Deal", "location": ["lat": 48.7784, "lon": 9.18], "perimeter": ["type": "Circle", "radius_m": 200],
                "category": "food",
            ])
            let id = try #require(promo.json?["id"]?.stringValue, "\(promo.text)")
            #expect(try await client.call(.post, "/v1/promotions/\(id)/interactions", token: bob, json: ["type": "clicked"]).status == .created)
            let again = try await client.call(.post, "/v1/promotions/\(id)/interactions", token: bob, json: ["type": "clicked"])
            #expect(again.status == .tooManyRequests && again.headers[.retryAfter] == "60")
        }
    }
}
