import AsyncHTTPClient
import DBeaconCore
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The account lifecycle (issue 43): token rotation, the admin's user management, disabling,
/// export, and erasure's answers (what erasure leaves behind is `ErasureTests`).
@Suite(.bounded) struct AccountTests {
    static let admin = TestHarness.adminToken

    @Test(arguments: Backend.all) func aRotatedTokenStopsAtOnceAndDevicesKeepTheirs(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, first) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let device = try #require(try await client.call(.post, "/v1/me/devices", token: first, json: ["name": "phone"]).json?["token"]?.stringValue)
            // Used (and, on SpatiaLite, cached) before it is rotated.
            #expect(try await client.call(.get, "/v1/me", token: first).status == .ok)
            let rotated = try await client.call(.post, "/v1/me/token", token: first)
            #expect(rotated.status == .ok)
            #expect(rotated.headers[.cacheControl] == "no-store")
            let second = try #require(rotated.json?["token"]?.stringValue)
            #expect(second.hasPrefix("dbt_") && second != first)
            #expect(rotated.json?["id"] == .string(ann.rawValue))
            #expect(try await client.call(.get, "/v1/me", token: first).status == .unauthorized)
            let me = try await client.call(.get, "/v1/me", token: second)
            #expect(me.status == .ok && me.json?["token_rotated_at"] == .string(h.clock.now().rfc3339))
            // The device keeps working, and cannot rotate the user's token; nor can the admin token.
            #expect(try await client.call(.get, "/v1/me", token: device).json?["device"]?.stringValue?.hasPrefix("dev_") == true)
            let byDevice = try await client.call(.post, "/v1/me/token", token: device)
            #expect(byDevice.status == .forbidden && byDevice.errorCode == "device_token")
            #expect(try await client.call(.post, "/v1/me/token", token: Self.admin).status == .forbidden)
            // The admin rotates it for her: the token she had stops too.
            let third = try #require(try await client.call(.post, "/v1/users/\(ann.rawValue)/token", token: Self.admin).json?["token"]?.stringValue)
            #expect(try await client.call(.get, "/v1/me", token: second).status == .unauthorized)
            #expect(try await client.call(.get, "/v1/me", token: third).status == .ok)
            #expect(try await client.call(.post, "/v1/users/\(ann.rawValue)/token", token: third).status == .forbidden)
            #expect(try await client.call(.post, "/v1/users/usr_nobody/token", token: Self.admin).status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func theAdminListsShowsAndRenamesUsers(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        var users: [(UserID, String)] = []
        for name in ["Anna", "anton", "Ben", "chen", "André"] { users.append(try await h.user(name)) }
        let made = users
        try await h.app().test(.router) { client in
            // Pages of two in creation order, with an opaque cursor.
            var names: [String] = [], cursor: String?
            repeat {
                let page = try await client.call(.get, "/v1/users?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), token: Self.admin)
                #expect(page.status == .ok)
                let users = page.json?["users"]?.arrayValue ?? []
                #expect(users.count <= 2)
                names += users.compactMap { $0["name"]?.stringValue }
                cursor = page.json?["next_cursor"]?.stringValue
            } while cursor != nil
            #expect(names == ["Anna", "anton", "Ben", "chen", "André"])
            // A name prefix, ASCII letters in any case (a prefix with % or _ is taken as it is).
            let an = try await client.call(.get, "/v1/users?name_prefix=AN", token: Self.admin).json?["users"]?.arrayValue ?? []
            #expect(an.compactMap { $0["name"]?.stringValue } == ["Anna", "anton", "André"])
            #expect(try await client.call(.get, "/v1/users?name_prefix=a%25", token: Self.admin).json?["users"] == [])
            #expect(try await client.call(.get, "/v1/users?cursor=nonsense", token: Self.admin).status == .badRequest)
            // One user, with counts; renamed; bad input named.
            let (anna, annaToken) = made[0]
            _ = try await client.call(.post, "/v1/beacons", token: annaToken, json: feature(name: "kiosk"))
            let shown = try await client.call(.get, "/v1/users/\(anna.rawValue)", token: Self.admin)
            #expect(shown.json?["beacons"] == 1 && shown.json?["devices"] == 0 && shown.json?["disabled"] == false)
            let renamed = try await client.call(.patch, "/v1/users/\(anna.rawValue)", token: Self.admin, json: ["name": "Anna K."])
            #expect(renamed.status == .ok && renamed.json?["name"] == "Anna K.")
            let blank = try await client.call(.patch, "/v1/users/\(anna.rawValue)", token: Self.admin, json: ["name": "  "])
            #expect(blank.status == .unprocessableContent && blank.errorPath == "name")
            let unknown = try await client.call(.patch, "/v1/users/\(anna.rawValue)", token: Self.admin, json: ["admin": true])
            #expect(unknown.status.code == 400 || unknown.status.code == 422)
            #expect(unknown.errorPath == "admin")
            let wrongType = try await client.call(.patch, "/v1/users/\(anna.rawValue)", token: Self.admin, json: ["disabled": "yes"])
            #expect(wrongType.status.code >= 400 && wrongType.errorPath == "disabled")
            // A null is refused before the user is looked up (schemathesis: not a 404 either).
            let null = try await client.call(.patch, "/v1/users/usr_nobody", token: Self.admin, json: ["name": nil])
            #expect(null.status == .unprocessableContent && null.errorPath == "name")
            #expect(try await client.call(.get, "/v1/users/usr_nobody", token: Self.admin).status == .notFound)
            #expect(try await client.call(.get, "/v1/users/nonsense", token: Self.admin).status == .notFound)
            // Anyone else: 403 whatever the id (nothing learnt about who exists).
            for path in ["/v1/users", "/v1/users/\(anna.rawValue)", "/v1/users/usr_nobody", "/v1/users/nonsense/export"] {
                let r = try await client.call(.get, path, token: annaToken)
                #expect(r.status == .forbidden && r.errorCode == "admin_only", "\(path)")
            }
            #expect(try await client.call(.delete, "/v1/users/\(made[1].0.rawValue)", token: annaToken).status == .forbidden)
        }
    }

    @Test(arguments: Backend.all) func aDisabledUserIsRefusedEverywhereAndLosesNothing(_ backend: Backend) async throws {
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        let h = try await TestHarness.make(backend: backend, start: Timestamp.now()) { $0.allowPrivateWebhooks = true }
        let (ann, token) = try await h.user("ann")
        let (owner, ownerToken) = try await h.user("owner")
        let kiosk = try await h.beacon(feature(name: "kiosk"), owner: owner)
        try await h.app().test(.router) { client in
            let device = try #require(try await client.call(.post, "/v1/me/devices", token: token, json: ["name": "phone"]).json?["token"]?.stringValue)
            #expect(try await client.call(.post, "/v1/webhooks", token: token, json: ["url": .string(receiver.url), "events": ["*"]]).status == .created)
            #expect(try await client.call(.post, "/v1/beacons/\(kiosk.id)/followers", token: token).status.code < 300)
            #expect(try await client.call(.patch, "/v1/users/\(ann.rawValue)", token: Self.admin, json: ["disabled": true]).json?["disabled"] == true)

            // Refused: the user's token, their device's, Basic auth (OwnTracks) and OsmAnd's id.
            #expect(try await client.call(.get, "/v1/me", token: token).status == .unauthorized)
            #expect(try await client.call(.get, "/v1/me", token: device).status == .unauthorized)
            let basic = "Basic " + Data("ann:\(device)".utf8).base64EncodedString()
            #expect(try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7784, "lon": 9.18, "tst": 1],
                                          headers: [.authorization: basic]).status == .unauthorized)
            #expect(try await client.call(.get, "/v1/osmand?id=\(device)&lat=48.7784&lon=9.18").status == .unauthorized)

            // Events still reach the log while disabled; the webhook holds them.
            #expect(try await client.call(.patch, "/v1/beacons/\(kiosk.id)", token: ownerToken, json: ["properties": ["name": "kiosk 2"]]).status == .ok)
            #expect(try await h.services.deliverer.runOnce() == 0, "a disabled user's webhook delivered")
            #expect(receiver.received.isEmpty)

            // Enabled again: everything as it was, and the held delivery goes out.
            #expect(try await client.call(.patch, "/v1/users/\(ann.rawValue)", token: Self.admin, json: ["disabled": false]).json?["disabled"] == false)
            #expect(try await client.call(.get, "/v1/me", token: token).status == .ok)
            #expect(try await client.call(.get, "/v1/me", token: device).status == .ok)
            #expect(try await h.services.deliverer.runOnce() == 1)
            #expect(receiver.received.count == 1)
            let events = try await client.call(.get, "/v1/events", token: token).json?["events"]?.arrayValue ?? []
            #expect(events.map { $0["type"] } == ["beacon.updated"])
        }
    }

    /// A user's open event streams end when their token is rotated, when they are disabled, and
    /// when they are erased; a device's, when it is revoked.
    @Test(arguments: Backend.all) func openStreamsEndWhenTheirCredentialDoes(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.eventStreamMaxSeconds = 60 }
        let (ann, token) = try await h.user("ann")
        try await h.app().test(.live) { client in
            let port = try #require(client.port)
            let device = try #require(try await client.call(.post, "/v1/me/devices", token: token, json: ["name": "phone"]).json)
            let deviceToken = try #require(device["token"]?.stringValue), deviceID = try #require(device["id"]?.stringValue)
            func endsAfter(_ streamToken: String, _ action: () async throws -> Void) async throws -> Bool {
                let stream = try await EventStreamTests.open(port, token: streamToken)
                #expect(stream.status == .ok)
                try await action()
                return try await Self.ends(stream, within: .seconds(10))
            }
            var ended = try await endsAfter(deviceToken) {
                let status = try await client.call(.delete, "/v1/me/devices/\(deviceID)", token: token).status
                #expect(status == .noContent)
            }
            #expect(ended, "a revoked device's stream")
            var current = token
            ended = try await endsAfter(current) {
                current = try #require(try await client.call(.post, "/v1/me/token", token: current).json?["token"]?.stringValue)
            }
            #expect(ended, "a rotated token's stream")
            ended = try await endsAfter(current) {
                _ = try await client.call(.patch, "/v1/users/\(ann.rawValue)", token: Self.admin, json: ["disabled": true])
            }
            #expect(ended, "a disabled user's stream")
            _ = try await client.call(.patch, "/v1/users/\(ann.rawValue)", token: Self.admin, json: ["disabled": false])
            ended = try await endsAfter(current) {
                let status = try await client.call(.delete, "/v1/me?confirm=\(ann.rawValue)", token: current).status
                #expect(status == .ok)
            }
            #expect(ended, "an erased user's stream")
        }
    }

    /// Whether the stream's body ends (the server closes it) within `limit`.
    static func ends(_ response: HTTPClientResponse, within limit: Duration) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for try await _ in response.body {}
                return true
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    @Test(arguments: Backend.all) func theExportHoldsEverythingAndNoSecret(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.allowPrivateWebhooks = true }
        try await h.app().test(.router) { client in
            let s = try await ErasureScenario.build(.erased, h: h, client: client, erase: false)
            let token = try #require(s.uTokens.last)
            // Many events: written and read a page at a time.
            let many = (0..<1_200).map { i in
                Event(type: .updated, createdAt: h.clock.now(), recipient: s.u, beacon: nil, data: ["n": .int(i)])
            }
            try await h.store.appendEvents(many)
            let r = try await client.call(.get, "/v1/me/export", token: token)
            #expect(r.status == .ok)
            #expect(r.headers[.contentDisposition]?.contains("dbeacon-export-\(s.u.rawValue).json") == true)
            let doc = try #require(r.json)
            #expect(doc["format"] == "dbeacon-export/1" && doc["profile"]?["id"] == .string(s.u.rawValue))
            #expect(doc["beacons"]?["features"]?.arrayValue?.count == 9, "stall, garden, secret, future, ended, meeting, tour, promotion, group")
            for section in ["devices", "content", "media", "follows", "tag_follows", "interests", "saved", "ratings", "feedback", "interactions",
                            "groups", "invitations", "attending", "memberships", "tours", "tour_visits", "fence_states", "phone_states",
                            "sighting_batches", "registry", "visits", "webhooks"] {
                #expect(doc[section]?.arrayValue?.isEmpty == false, "\(section) is empty")
            }
            #expect(doc["location"]?["lat"] != nil)
            #expect(doc["events"]?.arrayValue?.count ?? 0 > 1_200)
            #expect(doc["content"]?.arrayValue?.first?["beacon"] == .string(s.vars["wall"] ?? ""))
            // No secret: no token or its hash, no webhook secret, no device token.
            let text = r.text
            for secret in s.uTokens + [s.uDeviceToken] + (s.uTokens + [s.uDeviceToken]).map({ AuthService.hash($0).map { String(format: "%02x", $0) }.joined() }) {
                #expect(!text.contains(secret))
            }
            #expect(!text.contains("whsec_"))
            // The admin's export of U is the same document; a device token may not export.
            let byAdmin = try await client.call(.get, "/v1/users/\(s.u.rawValue)/export", token: Self.admin)
            #expect(byAdmin.json?["events"]?.arrayValue?.count == doc["events"]?.arrayValue?.count)
            #expect(try await client.call(.get, "/v1/me/export", token: s.uDeviceToken).status == .forbidden)
            #expect(try await client.call(.get, "/v1/me/export", token: Self.admin).status == .forbidden)
            #expect(try await client.call(.get, "/v1/users/usr_nobody/export", token: Self.admin).status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func erasingAnAccountIsGuarded(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ann, token) = try await h.user("ann")
        let (ben, benToken) = try await h.user("ben")
        try await h.app().test(.router) { client in
            let device = try #require(try await client.call(.post, "/v1/me/devices", token: token, json: ["name": "phone"]).json?["token"]?.stringValue)
            let missing = try await client.call(.delete, "/v1/me", token: token)
            #expect(missing.status == .unprocessableContent && missing.errorPath == "confirm" && missing.errorCode == "confirmation_required")
            let wrong = try await client.call(.delete, "/v1/me?confirm=\(ben.rawValue)", token: token)
            #expect(wrong.status == .unprocessableContent && wrong.errorPath == "confirm")
            #expect(try await client.call(.delete, "/v1/me?confirm=\(ann.rawValue)", token: device).errorCode == "device_token")
            #expect(try await client.call(.delete, "/v1/me?confirm=usr_admin", token: Self.admin).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/users/\(ann.rawValue)", token: benToken).status == .forbidden)
            #expect(try await client.call(.get, "/v1/me", token: token).status == .ok, "nothing was erased yet")
            let done = try await client.call(.delete, "/v1/me?confirm=\(ann.rawValue)", token: token)
            #expect(done.status == .ok && done.json == ["id": .string(ann.rawValue), "erased": true])
            #expect(try await client.call(.get, "/v1/me", token: token).status == .unauthorized)
            #expect(try await client.call(.get, "/v1/me", token: device).status == .unauthorized)
            #expect(try await client.call(.delete, "/v1/users/\(ann.rawValue)", token: Self.admin).status == .notFound)
            // The admin's erasure answers what it removed.
            let report = try await client.call(.delete, "/v1/users/\(ben.rawValue)", token: Self.admin)
            #expect(report.status == .ok && report.json?["rows"]?["users"] == 1)
        }
    }
}
