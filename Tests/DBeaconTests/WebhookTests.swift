import DBeaconApp
import DBeaconCore
import DBeaconHTTP
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.serialized, .bounded) struct WebhookTests {
    /// A harness whose clock is real time (the reference verifier checks timestamps) and whose
    /// webhooks may reach the loopback receiver.
    func setUp(_ backend: Backend, schedule: [Double] = [0, 5, 300], allowPrivate: Bool = true) async throws -> TestHarness {
        try await TestHarness.make(backend: backend, start: Timestamp.now()) { c in
            c.allowPrivateWebhooks = allowPrivate
            c.webhookRetrySchedule = schedule
        }
    }

    /// Ann follows a beacon; the owner edits it, which produces one `beacon.updated` for Ann.
    func produceEvent(_ h: TestHarness, ann: UserID) async throws -> Beacon {
        let (owner, _) = try await h.user("owner")
        let b = try await h.beacon(feature(name: "cafe"), owner: owner)
        _ = try await h.beacons.follow(b.id, by: .user(ann))
        _ = try await h.beacons.update(b.id, patch: ["properties": ["name": "café"]], ifMatch: nil, by: .user(owner))
        return b
    }

    func verify(_ received: [WebhookReceiver.Received], secret: String) async throws -> [JSONValue] {
        let input: JSONValue = .object(["deliveries": .array(received.map { r in
            .object(["secret": .string(secret), "body": .string(r.body),
                     "headers": .object(JSONObject(r.headers.map { ($0.key, .string($0.value)) }))])
        })])
        return try await runReference("verify_webhooks.py", input: input)["results"]?.arrayValue ?? []
    }

    @Test(arguments: Backend.all) func deliversSignedEventsThatTheReferenceVerifierAccepts(_ backend: Backend) async throws {
        let h = try await setUp(backend)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, annToken) = try await h.user("ann")
        let created = try await h.app().test(.router) { client in
            try await client.call(.post, "/v1/webhooks", token: annToken, json: ["url": .string(receiver.url), "events": ["beacon.*"]])
        }
        #expect(created.status == .created)
        let secret = try #require(created.json?["secret"]?.stringValue)
        #expect(secret.hasPrefix("whsec_"))
        #expect(StandardWebhooks.key(of: secret)?.count ?? 0 >= 24)

        _ = try await produceEvent(h, ann: ann)
        #expect(try await h.services.deliverer.runOnce() == 1)
        let received = receiver.received
        #expect(received.count == 1)
        let body = try JSONParser.parse(received[0].body)
        #expect(body["type"] == "beacon.updated")
        #expect(body["recipient"] == .string(ann.rawValue))
        #expect(received[0].headers["webhook-id"] == body["id"]?.stringValue)
        #expect(received[0].headers["webhook-signature"]?.hasPrefix("v1,") == true)
        #expect(try await verify(received, secret: secret) == [true])
        #expect(try await verify(received, secret: StandardWebhooks.newSecret()) != [true], "a wrong secret must not verify")
    }

    /// An idle deliverer sleeps: its own (empty) claims are commits, which on PostgreSQL wake
    /// it, and it once claimed in a tight loop (an idle PostGIS server used half a core). It
    /// still delivers at once what a commit queues while it sleeps.
    @Test(arguments: Backend.all) func anIdleDelivererSleepsAndWakesForNewDeliveries(_ backend: Backend) async throws {
        let h = try await setUp(backend)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, annToken) = try await h.user("ann")
        _ = try await h.app().test(.router) { client in
            try await client.call(.post, "/v1/webhooks", token: annToken, json: ["url": .string(receiver.url), "events": ["beacon.*"]])
        }
        let deliverer = h.services.deliverer
        let loop = Task { try await deliverer.run() }
        defer { loop.cancel() }
        try await Task.sleep(for: .milliseconds(1500))
        #expect(deliverer.wake.waits <= 3, "an idle deliverer waited \(deliverer.wake.waits) times in 1.5 s")
        _ = try await produceEvent(h, ann: ann)
        for _ in 0..<100 where receiver.received.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        #expect(receiver.received.count == 1, "the new delivery was sent within 2 s")
    }

    @Test(arguments: Backend.all) func retriesOnTheScheduleKeepingTheWebhookID(_ backend: Backend) async throws {
        let h = try await setUp(backend, schedule: [0, 5, 300])
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, _) = try await h.user("ann")
        let w = try await h.services.webhooks.create(url: receiver.url, events: nil, scope: nil, description: nil, by: .user(ann))
        receiver.script([(500, [:]), (302, ["Location": "http://127.0.0.1:1/elsewhere"]), (200, [:])])
        _ = try await produceEvent(h, ann: ann)
        #expect(try await h.services.deliverer.runOnce() == 1)
        #expect(try await h.services.deliverer.runOnce() == 0, "not due before the next scheduled attempt")
        h.clock.advance(seconds: 5.6)
        #expect(try await h.services.deliverer.runOnce() == 1)
        h.clock.advance(seconds: 330)  // 300 s after the first attempt, plus at most 10% jitter of the gap
        #expect(try await h.services.deliverer.runOnce() == 1)
        let ids = Set(receiver.received.compactMap { $0.headers["webhook-id"] })
        #expect(receiver.received.count == 3 && ids.count == 1)
        #expect(receiver.received.allSatisfy { $0.path == "/hook" }, "redirects are not followed")
        let page = try await h.services.webhooks.deliveries(w.id, after: nil, limit: 10, by: .user(ann))
        let (delivery, attempts) = try #require(page.items.first)
        #expect(delivery.status == .delivered)
        #expect(attempts.map(\.statusCode) == [500, 302, 200])
        // (The third attempt is stamped with the test clock, 335 s ahead: beyond the verifier's 5-minute tolerance.)
        #expect(try await verify(Array(receiver.received.prefix(2)), secret: w.secret).allSatisfy { $0 == true })
    }

    @Test(arguments: Backend.all) func givesUpAfterTheLastAttemptAndHonoursRetryAfter(_ backend: Backend) async throws {
        let h = try await setUp(backend, schedule: [0, 1])
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, _) = try await h.user("ann")
        let w = try await h.services.webhooks.create(url: receiver.url, events: ["*"], scope: "user", description: nil, by: .user(ann))
        receiver.script([(429, ["Retry-After": "120"]), (503, [:])])
        _ = try await produceEvent(h, ann: ann)
        try await h.services.deliverer.runOnce()
        var delivery = try #require(try await h.services.webhooks.deliveries(w.id, after: nil, limit: 1, by: .user(ann)).items.first?.0)
        #expect(delivery.status == .pending)
        #expect(delivery.nextAttemptAt.seconds(since: h.clock.now()) >= 119, "Retry-After pushes the retry back")
        h.clock.advance(seconds: 60)
        #expect(try await h.services.deliverer.runOnce() == 0)
        h.clock.advance(seconds: 61)
        #expect(try await h.services.deliverer.runOnce() == 1)
        delivery = try #require(try await h.services.webhooks.deliveries(w.id, after: nil, limit: 1, by: .user(ann)).items.first?.0)
        #expect(delivery.status == .failed)
        #expect(delivery.attempts == 2)
        // A manual redelivery goes out again with the same webhook-id.
        try await h.services.webhooks.redeliver(w.id, delivery: delivery.seq, by: .user(ann))
        #expect(try await h.services.deliverer.runOnce() == 1)
        #expect(Set(receiver.received.compactMap { $0.headers["webhook-id"] }).count == 1)
        #expect(try await h.services.webhooks.deliveries(w.id, after: nil, limit: 1, by: .user(ann)).items.first?.0.status == .delivered)
    }

    @Test(arguments: Backend.all) func goneDisablesTheEndpoint(_ backend: Backend) async throws {
        let h = try await setUp(backend)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, _) = try await h.user("ann")
        let w = try await h.services.webhooks.create(url: receiver.url, events: nil, scope: nil, description: nil, by: .user(ann))
        receiver.script([(410, [:])])
        _ = try await produceEvent(h, ann: ann)
        try await h.services.deliverer.runOnce()
        let disabled = try await h.services.webhooks.get(w.id, by: .user(ann))
        #expect(disabled.status == .disabled)
        #expect(disabled.disabledReason?.contains("410") == true)
        // Nothing more goes to a disabled endpoint; once enabled again, new events do.
        _ = try await produceEvent(h, ann: ann)
        #expect(try await h.services.deliverer.runOnce() == 0)
        _ = try await h.services.webhooks.enable(w.id, by: .user(ann))
        _ = try await produceEvent(h, ann: ann)
        #expect(try await h.services.deliverer.runOnce() == 1)
        #expect(receiver.received.count == 2)
    }

    @Test(arguments: Backend.all) func pendingDeliveriesSurviveARestartWithTheirAttempts(_ backend: Backend) async throws {
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let h = try await setUp(backend, schedule: [0, 5, 10])
        let (ann, _) = try await h.user("ann")
        let w = try await h.services.webhooks.create(url: receiver.url, events: nil, scope: nil, description: nil, by: .user(ann))
        receiver.script([(500, [:])])
        _ = try await produceEvent(h, ann: ann)
        try await h.services.deliverer.runOnce()
        // Also leave one delivery "in flight", as a crash mid-request would.
        _ = try await h.beacons.follow(try await h.store.listBeacons(BeaconListQuery(), viewer: .admin, now: h.clock.now()).items[0].id, by: .user(ann))
        try await h.store.appendEvents([Event(type: .updated, createdAt: h.clock.now(), recipient: ann, beacon: nil, data: ["n": 1])])
        _ = try await h.store.claimDueDeliveries(now: h.clock.now(), limit: 10)

        // A new process on the same database. On PostGIS a claim is released when the claiming
        // session is gone, so the first process must stop as a crashed one would.
        if let postgres = h.store as? PostgresStore {
            await postgres.shutdown()
            try await Task.sleep(for: .milliseconds(300))
        }
        var config = h.services.config
        config.runBackgroundServices = false
        let clock = ManualClock(h.clock.now().adding(seconds: 6))
        let restarted = try await AppServices.make(config, clock: clock, logger: TestHarness.logger)
        try await restarted.store.resetInFlightDeliveries()
        #expect(try await restarted.deliverer.runOnce() == 2)
        let page = try await restarted.webhooks.deliveries(w.id, after: nil, limit: 10, by: .user(ann))
        let attempts = page.items.map { $0.0.attempts }.sorted()
        #expect(attempts == [1, 2], "the retried delivery keeps its first attempt")
        #expect(page.items.allSatisfy { $0.0.status == .delivered })
    }

    @Test(arguments: Backend.all) func rotatedSecretsBothSignDuringTheGracePeriod(_ backend: Backend) async throws {
        let h = try await setUp(backend)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, _) = try await h.user("ann")
        let w = try await h.services.webhooks.create(url: receiver.url, events: nil, scope: nil, description: nil, by: .user(ann))
        let rotated = try await h.services.webhooks.rotateSecret(w.id, by: .user(ann))
        #expect(rotated.secret != w.secret)
        _ = try await produceEvent(h, ann: ann)
        try await h.services.deliverer.runOnce()
        #expect(try await verify(receiver.received, secret: w.secret) == [true])
        #expect(try await verify(receiver.received, secret: rotated.secret) == [true])
        #expect(receiver.received[0].headers["webhook-signature"]?.split(separator: " ").count == 2)
    }

    @Test(arguments: Backend.all) func visibilityIsCheckedAgainAtDelivery(_ backend: Backend) async throws {
        let h = try await setUp(backend)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (owner, _) = try await h.user("owner")
        let (ann, _) = try await h.user("ann")
        _ = try await h.services.webhooks.create(url: receiver.url, events: nil, scope: nil, description: nil, by: .user(ann))
        let b = try await h.beacon(feature(name: "club", members: [ann]), owner: owner)
        _ = try await h.beacons.follow(b.id, by: .user(ann))
        _ = try await h.beacons.update(b.id, patch: ["properties": ["name": "club night"]], ifMatch: nil, by: .user(owner))
        // Ann is removed from the group before the delivery goes out.
        var hidden = try #require(try await h.store.beacon(id: b.id))
        hidden.members = []
        hidden.version += 1
        try await h.store.updateBeacon(hidden, expectedVersion: hidden.version - 1, fanOut: nil)
        try await h.services.deliverer.runOnce()
        #expect(receiver.received.isEmpty)
    }

    @Test(arguments: Backend.all) func allScopeNeedsTheAdminAndReceivesEveryRecipient(_ backend: Backend) async throws {
        let h = try await setUp(backend)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, annToken) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let denied = try await client.call(.post, "/v1/webhooks", token: annToken, json: ["url": .string(receiver.url), "scope": "all"])
            #expect(denied.status == .forbidden)
            let ok = try await client.call(.post, "/v1/webhooks", token: TestHarness.adminToken, json: ["url": .string(receiver.url), "scope": "all"])
            #expect(ok.status == .created)
            let bad = try await client.call(.post, "/v1/webhooks", token: annToken, json: ["url": .string(receiver.url), "events": ["beacon.nope"]])
            #expect(bad.status == .unprocessableContent)
            #expect(bad.errorPath == "events[0]")
        }
        _ = try await produceEvent(h, ann: ann)
        try await h.services.deliverer.runOnce()
        #expect(receiver.received.count == 1)
        #expect(try JSONParser.parse(receiver.received[0].body)["recipient"] == .string(ann.rawValue))
    }

    @Test(arguments: Backend.all) func theConnectTimeCheckBlocksPrivateAddresses(_ backend: Backend) async throws {
        // Registered while private addresses were allowed, delivered by a server that refuses them.
        let h = try await setUp(backend, allowPrivate: true)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (ann, _) = try await h.user("ann")
        let w = try await h.services.webhooks.create(url: receiver.url, events: nil, scope: nil, description: nil, by: .user(ann))
        _ = try await produceEvent(h, ann: ann)
        let strict = WebhookDeliverer(feed: h.services.feed, ssrf: SSRFGuard(allowPrivate: false), clock: h.clock, schedule: [0, 60],
                                      wake: WakeSignal(), logger: TestHarness.logger)
        try await strict.runOnce()
        #expect(receiver.received.isEmpty)
        let attempts = try #require(try await h.services.webhooks.deliveries(w.id, after: nil, limit: 1, by: .user(ann)).items.first?.1)
        #expect(attempts.first?.error?.contains("non-public") == true)
    }

    static let forbiddenURLs = [
        "http://127.0.0.1/hook", "http://localhost:8080/", "http://[::1]/", "http://2130706433/", "http://0177.0.0.1/",
        "http://0x7f.1/", "http://127.1/", "http://10.1.2.3/", "http://172.16.5.4/", "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/", "http://224.0.0.1/", "http://0.0.0.0/",
        "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::ffff:169.254.169.254]/", "http://[fe80::1]/",
        "http://[fc00::1]/", "http://[fd12:3456::1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[::]/", "http://[ff02::1]/",
        "http://198.18.0.1/", "http://255.255.255.255/",
    ]
    static let malformedURLs = [
        "ftp://example.com/", "file:///etc/passwd", "gopher://example.com/", "javascript:alert(1)", "http://user:pass@93.184.216.34/",
        "http:///nohost", "http://93.184.216.34:99999/", "not a url", "//93.184.216.34/",
    ]

    @Test(arguments: Backend.all) func ssrfCorpusIsRefusedAtRegistration(_ backend: Backend) async throws {
        let h = try await setUp(backend, allowPrivate: false)
        let (_, annToken) = try await h.user("ann")
        try await h.app().test(.router) { client in
            for url in Self.forbiddenURLs + Self.malformedURLs {
                let r = try await client.call(.post, "/v1/webhooks", token: annToken, json: ["url": .string(url)])
                #expect(r.status == .unprocessableContent, "\(url): \(r.text)")
                #expect(r.errorPath == "url", "\(url)")
            }
            let ok = try await client.call(.post, "/v1/webhooks", token: annToken, json: ["url": "https://93.184.216.34/hook"])
            #expect(ok.status == .created, "a public address is accepted: \(ok.text)")
            let list = try await client.call(.get, "/v1/webhooks", token: annToken)
            #expect(list.json?["webhooks"]?.arrayValue?.count == 1)
            #expect(list.json?["webhooks"]?.arrayValue?.first?["secret"] == nil, "secrets are shown only at creation")
        }
    }

    @Test func addressClassification() {
        #expect(SSRFGuard.isForbidden([8, 8, 8, 8]) == false)
        #expect(SSRFGuard.isForbidden([93, 184, 216, 34]) == false)
        #expect(SSRFGuard.isForbidden([172, 15, 0, 1]) == false)
        #expect(SSRFGuard.isForbidden([172, 32, 0, 1]) == false)
        #expect(SSRFGuard.isForbidden([100, 63, 0, 1]) == false)
        #expect(SSRFGuard.isForbidden([100, 128, 0, 1]) == false)
        let google6: [UInt8] = [0x20, 0x01, 0x48, 0x60, 0x48, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x88]
        #expect(SSRFGuard.isForbidden(google6) == false)
        for v4 in [[127, 0, 0, 1], [10, 0, 0, 1], [169, 254, 169, 254], [100, 100, 0, 1], [0, 0, 0, 0], [239, 1, 1, 1]] as [[UInt8]] {
            #expect(SSRFGuard.isForbidden(v4))
            #expect(SSRFGuard.isForbidden([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + v4), "mapped \(v4)")
        }
    }

    /// A phone speaking OwnTracks or the OsmAnd protocol produces the same events and webhook
    /// deliveries as the native API: ann walks in and out with OwnTracks then OsmAnd, bob the
    /// same walk with `POST /v1/me/location`; both receive `beacon.entered` then
    /// `beacon.exited` with the same data, signed, verified by the reference verifier.
    @Test(arguments: Backend.all) func phoneProtocolsDeliverLikeTheNativeAPI(_ backend: Backend) async throws {
        let h = try await setUp(backend)
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let (owner, _) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let (bob, bobToken) = try await h.user("bob")
        let kiosk = try await h.beacon(feature(name: "kiosk", perimeter: circle(100)), owner: owner)
        let secrets = try await h.app().test(.router) { client in
            var secrets: [UserID: String] = [:]
            for (user, token) in [(ann, annToken), (bob, bobToken)] {
                let hook = try await client.call(.post, "/v1/webhooks", token: token,
                                                 json: ["url": .string(receiver.url), "events": ["beacon.entered", "beacon.exited"]])
                secrets[user] = try #require(hook.json?["secret"]?.stringValue)
            }
            let device = try await client.call(.post, "/v1/me/devices", token: annToken, json: ["name": "Pixel"])
            let deviceToken = try #require(device.json?["token"]?.stringValue)
            let basic: HTTPFields = [.authorization: "Basic " + Data("ann:\(deviceToken)".utf8).base64EncodedString()]
            let t0 = Int(h.clock.now().millis / 1000)
            let inside = try await client.call(.post, "/v1/owntracks", json: [
                "_type": "location", "lat": 48.7784, "lon": 9.18, "acc": 10, "tst": .int(t0), "tid": "an"], headers: basic)
            #expect(inside.status == .ok, "\(inside.text)")
            #expect(try await client.call(.post, "/v1/me/location", token: bobToken,
                                          json: ["lat": 48.7784, "lon": 9.18, "accuracy_m": 10]).status == .ok)
            h.clock.advance(seconds: 30)
            let out = try await client.call(.get, "/v1/osmand?id=\(deviceToken)&lat=48.79&lon=9.18&accuracy=10&timestamp=\(t0 + 30)")
            #expect(out.status == .ok, "\(out.text)")
            #expect(try await client.call(.post, "/v1/me/location", token: bobToken,
                                          json: ["lat": 48.79, "lon": 9.18, "accuracy_m": 10]).status == .ok)
            return secrets
        }
        var delivered = 0
        while try await h.services.deliverer.runOnce() > 0 { delivered += 1 }
        let received = receiver.received
        #expect(received.count == 4)
        // Oldest first by the time of the crossing (deliveries may arrive in any order).
        func deliveries(_ user: UserID) throws -> [JSONValue] {
            try received.map { try JSONParser.parse($0.body) }.filter { $0["recipient"] == .string(user.rawValue) }
                .sorted { ($0["data"]?["at"]?.stringValue ?? "") < ($1["data"]?["at"]?.stringValue ?? "") }
        }
        let anns = try deliveries(ann), bobs = try deliveries(bob)
        #expect(anns.map { $0["type"] } == ["beacon.entered", "beacon.exited"])
        #expect(bobs.map { $0["type"] } == ["beacon.entered", "beacon.exited"])
        // The same data whatever protocol the position came in by, but for the time: OwnTracks
        // and OsmAnd send whole seconds, the native fixes here carry the server's milliseconds.
        func withoutTime(_ e: JSONValue) -> JSONValue? {
            guard var data = e["data"]?.objectValue else { return nil }
            data["at"] = nil
            return .object(data)
        }
        #expect(anns.map(withoutTime) == bobs.map(withoutTime), "\(anns) vs \(bobs)")
        for (a, b) in zip(anns, bobs) {
            let ta = Timestamp(rfc3339: a["data"]?["at"]?.stringValue ?? ""), tb = Timestamp(rfc3339: b["data"]?["at"]?.stringValue ?? "")
            #expect(ta != nil && tb != nil && abs(ta!.millis - tb!.millis) < 1_000)
        }
        #expect(anns.first?["data"]?["beacon"] == .string(kiosk.id.rawValue))
        for user in [ann, bob] {
            let mine = received.filter { (try? JSONParser.parse($0.body)["recipient"]) == .string(user.rawValue) }
            #expect(try await verify(mine, secret: try #require(secrets[user])) == [true, true])
        }
    }
}
