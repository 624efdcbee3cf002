import DBeaconCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Protocol details a user meets (issue 45), each on both stores.
@Suite(.bounded) struct ProtocolDetailsTests {
    /// A body that is both one fix and a batch (the document's `oneOf` allows one) is refused,
    /// not half applied.
    @Test(arguments: Backend.all) func aLocationBodyIsOneFixOrABatchNotBoth(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, token) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let both = try await client.call(.post, "/v1/me/location", token: token,
                                             json: ["lat": 48.7784, "lon": 9.18, "fixes": [["lat": 48.7, "lon": 9.1]]])
            #expect(both.status == .unprocessableContent && both.errorPath == "fixes" && both.errorCode == "ambiguous_body")
            #expect(try await h.store.userLocations([h.services.auth.authenticate(token: token)?.userID].compactMap { $0 }).isEmpty)
            #expect(try await client.call(.post, "/v1/me/location", token: token, json: ["fixes": [["lat": 48.7, "lon": 9.1]]]).status == .ok)
        }
    }

    /// Every timestamp the service writes has one form, with milliseconds, so a client decodes
    /// them all with one setting (here Foundation's ISO 8601 parser with fractional seconds);
    /// input in any RFC 3339 form is accepted.
    @Test(arguments: Backend.all) func everyTimestampHasOneForm(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, token) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/beacons", token: token, json: feature(
                name: "kiosk", perimeter: circle(100), lifetime: ("2026-11-21T11:00:00Z", "2026-11-21T15:30:00+01:00")))
            #expect(created.status == .created)
            let id = try #require(created.json?["id"]?.stringValue)
            _ = try await client.call(.post, "/v1/beacons/\(id)/followers", token: token)
            _ = try await client.call(.post, "/v1/me/location", token: token, json: ["lat": 48.7784, "lon": 9.18, "timestamp": "2026-11-21T11:59:59.5Z"])
            _ = try await client.call(.post, "/v1/meetings", token: token, json: ["name": "m", "location": ["lat": 48.7784, "lon": 9.18],
                                                                                  "start": "2026-11-21T13:00:00Z", "end": "2026-11-21T14:00:00Z"])
            var stamps: [String] = []
            func collect(_ v: JSONValue, key: String = "") {
                switch v {
                case .string(let s) where key.hasSuffix("_at") || ["start", "end", "at", "since", "exported_at"].contains(key): stamps.append(s)
                case .object(let o): for (k, x) in o.members { collect(x, key: k) }
                case .array(let a): for x in a { collect(x, key: key) }
                default: break
                }
            }
            for path in ["/v1/beacons/\(id)", "/v1/events", "/v1/meetings", "/v1/me", "/v1/me/devices", "/v1/me/export"] {
                collect(try #require(try await client.call(.get, path, token: token).json))
            }
            #expect(stamps.count > 15)
            let parser = ISO8601DateFormatter()
            parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for s in stamps {
                #expect(s.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil, "\(s)")
                #expect(parser.date(from: s) != nil, "\(s)")
            }
            #expect(stamps.contains("2026-11-21T14:30:00.000Z") && stamps.contains("2026-11-21T11:59:59.500Z"))
        }
    }

    /// Every GET route answers HEAD (RFC 9110 §9.3.2): the GET's status and headers, no body;
    /// the console's files too; an event stream is not opened for it.
    @Test(arguments: Backend.all) func everyGetRouteAnswersHead(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, token) = try await h.user("ann")
        try await h.app().test(.live) { client in
            let paths = ["/healthz", "/readyz", "/openapi.yaml", "/", "/console/app.js", "/console/leaflet/leaflet.css", "/v1/me",
                         "/v1/nearby?lat=48.7784&lon=9.18", "/v1/beacons", "/v1/events", "/v1/me/export", "/v1/tags"]
            for path in paths {
                let get = try await client.call(.get, path, token: token)
                let head = try await client.call(.head, path, token: token)
                #expect(head.status == get.status, "HEAD \(path)")
                #expect(head.text.isEmpty, "HEAD \(path) has a body")
                #expect(head.headers[.contentType] == get.headers[.contentType], "HEAD \(path)")
            }
            #expect(try await client.call(.head, "/v1/nearby?lat=95&lon=9.18", token: token).status == .unprocessableContent)
            #expect(try await client.call(.head, "/v1/me").status == .unauthorized)
            // Streams: HEAD opens none (five HEADs, then five streams still fit).
            for _ in 0..<6 {
                let head = try await client.call(.head, "/v1/events/stream", token: token, headers: [.accept: "text/event-stream"])
                #expect(head.status == .ok && head.headers[.contentType] == "text/event-stream")
            }
            let port = try #require(client.port)
            for _ in 0..<5 { #expect(try await EventStreamTests.open(port, token: token).status == .ok) }
        }
    }

    /// OsmAnd and OwnTracks input as the apps send it: `+` is a space in a query string (Traccar's
    /// own test request), numbers are decimal, `valid=false` and a negative `acc` are no fix, and
    /// a second OwnTracks fix of one second that moved is taken.
    @Test(arguments: Backend.all) func phoneInputAsTheAppsSendIt(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, start: Timestamp(rfc3339: "2014-06-04T09:12:00Z")!)
        let (ann, token) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let device = try #require(try await client.call(.post, "/v1/me/devices", token: token, json: ["name": "phone"]).json?["token"]?.stringValue)
            func located() async throws -> UserLocation? { try await h.store.userLocations([ann]).first }
            // Traccar's own request: `timestamp=2014-06-04+09%3A10%3A11`.
            let traccar = try await client.call(.get, "/v1/osmand?id=\(device)&timestamp=2014-06-04+09%3A10%3A11&lat=60.0&lon=30.0&speed=0&bearing=0&altitude=0&accuracy=0&batt=0")
            #expect(traccar.status == .ok, "\(traccar.text)")
            #expect(try await located()?.fixAt == Timestamp(rfc3339: "2014-06-04T09:10:11Z"))
            // Hexadecimal is not a number here (Swift's parser would read 16).
            for bad in ["lat=0x10&lon=9", "lat=0x1p4&lon=9", "lat=48&lon=nan", "lat=48&lon=inf"] {
                let r = try await client.call(.get, "/v1/osmand?id=\(device)&\(bad)")
                #expect(r.status == .unprocessableContent, "\(bad): \(r.text)")
            }
            #expect(try await client.call(.get, "/v1/nearby?lat=0x10&lon=9.18", token: token).status == .badRequest)
            // valid=false: accepted, not a fix.
            let before = try await located()
            #expect(try await client.call(.get, "/v1/osmand?id=\(device)&lat=48.7&lon=9.1&valid=false").status == .ok)
            #expect(try await located() == before)
            // OwnTracks: a negative acc is no fix; two fixes in one second, the second elsewhere.
            let basic = PhoneProtocolTests.basic("ann", device)
            let tst = Int(h.clock.now().millis / 1000)
            _ = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7, "lon": 9.1, "acc": -1, "tst": .int(tst)],
                                      headers: basic)
            #expect(try await located() == before)
            for lat in [48.7784, 48.7790] {
                let r = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": .number(lat), "lon": 9.18, "acc": 5,
                                                                            "tst": .int(tst)], headers: basic)
                #expect(r.status == .ok)
            }
            #expect(try await located()?.position.lat == 48.7790, "the second fix of the same second was dropped")
            // The very same fix again changes nothing.
            let report = try await h.fix(ann, lat: 48.7790, lon: 9.18, at: Timestamp(millis: Int64(tst) * 1000))
            #expect(report.accepted == 0)
        }
    }

    /// A lock-out of an address (too many bad tokens) spares the tokens that authenticated
    /// lately: a phone behind the same carrier NAT as an attacker keeps working; guessing at
    /// one user's Basic password locks the name, not the user's working device. The challenge
    /// of `/v1/owntracks` is Basic.
    /// The forms of `Authorization` the service takes (Bearer in any case, Basic `user:token`)
    /// and what it says to the others: 401 with a message naming the form it expects.
    @Test(arguments: Backend.all) func authorizationHeadersAreReadAsTheirSchemeSays(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, token) = try await h.user("ann")
        try await h.app().test(.router) { client in
            func me(_ header: String?) async throws -> JSONResponse {
                try await client.call(.get, "/v1/me", headers: header.map { [.authorization: $0] } ?? [:])
            }
            let basic = "Basic " + Data("ann:\(token)".utf8).base64EncodedString()
            for good in ["Bearer \(token)", "bearer \(token)", "BEARER  \(token)", basic] {
                #expect(try await me(good).status == .ok, "\(good)")
            }
            let refused: [(String?, String)] = [
                (nil, "an Authorization: Bearer <token> header is required"),
                ("Bearer", "the Authorization header must be Bearer <token>"),
                ("Bearer ", "the Authorization header must be Bearer <token>"),
                ("Bearer nope", "the bearer token is not valid"),
                ("Basic bm90IGJhc2U2NA", "Basic credentials must be base64 of user:token"),
                ("Basic " + Data("bob:\(token)".utf8).base64EncodedString(),
                 "the user name and token do not match (the password is the user's or a device's token)"),
                ("Token \(token)", "the Authorization header must be Bearer <token> (or Basic user:token)"),
            ]
            for (header, message) in refused {
                let r = try await me(header)
                #expect(r.status == .unauthorized && r.json?["error"]?["message"]?.stringValue == message, "\(header ?? "none"): \(r.text)")
            }
        }
    }

    @Test(arguments: Backend.all) func lockOutsSpareGoodCredentials(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) {
            $0.rateLimits.authFailuresPerSecond = 1
            $0.rateLimits.clock = { 1_000 }  // stopped: a slow machine does not lift the lock-out mid-test
        }
        let (_, token) = try await h.user("ann")
        let (_, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let device = try #require(try await client.call(.post, "/v1/me/devices", token: token, json: ["name": "phone"]).json?["token"]?.stringValue)
            #expect(try await client.call(.get, "/v1/me", token: device).status == .ok)
            #expect(try await client.call(.get, "/v1/osmand?id=\(device)&lat=48.7&lon=9.1").status == .ok)
            // An attacker at the same address uses up its failures.
            var locked = false
            for i in 0..<40 where !locked {
                locked = try await client.call(.get, "/v1/me", token: "dbt_guess\(i)").status == .tooManyRequests
            }
            #expect(locked, "the address was never locked out")
            #expect(try await client.call(.get, "/v1/me", token: "dbt_another_guess").status == .tooManyRequests)
            // Ann's tokens still work from there; a valid token not seen lately waits with the rest.
            #expect(try await client.call(.get, "/v1/me", token: token).status == .ok)
            #expect(try await client.call(.get, "/v1/me", token: device).status == .ok)
            #expect(try await client.call(.get, "/v1/osmand?id=\(device)&lat=48.7&lon=9.1").status == .ok)
            #expect(try await client.call(.get, "/v1/osmand?id=dbd_guess&lat=48.7&lon=9.1").status == .tooManyRequests)
            #expect(try await client.call(.get, "/v1/me", token: bob).status == .tooManyRequests)
            // OwnTracks answers a Basic challenge.
            let basic = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7, "lon": 9.1],
                                              headers: PhoneProtocolTests.basic("ann", "wrong"))
            #expect(basic.status == .unauthorized || basic.status == .tooManyRequests)
            let unauthorized = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7, "lon": 9.1],
                                                     headers: PhoneProtocolTests.basic("ann", device))
            #expect(unauthorized.status == .ok)
        }
        // The Basic challenge, from a fresh address limit.
        let fresh = try await TestHarness.make(backend: backend)
        try await fresh.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7, "lon": 9.1],
                                          headers: PhoneProtocolTests.basic("ann", "wrong"))
            #expect(r.status == .unauthorized && r.headers[.wwwAuthenticate] == #"Basic realm="DBeacon", charset="UTF-8""#)
            let bearer = try await client.call(.get, "/v1/me", token: "wrong")
            #expect(bearer.headers[.wwwAuthenticate] == "Bearer")
        }
    }

    /// A beacon the user stands in is made private: they get `beacon.exited` with reason
    /// `unavailable`, carrying nothing else (not its new name), and their own log lists it.
    @Test(arguments: Backend.all) func losingSightOfABeaconIsNoticedAsDocumented(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, token) = try await h.user("ann")
        let kiosk = try await h.beacon(feature(name: "kiosk", perimeter: circle(100)), owner: owner)
        _ = try await h.fix(ann, lat: 48.7784, lon: 9.18)
        let (hidden, _) = try await h.beacons.update(kiosk.id, patch: ["properties": ["name": "secret now", "visibility": ["members": []]]],
                                                   ifMatch: nil, by: .user(owner))
        try await h.fences.beaconChanged(hidden, reason: "updated")
        try await h.app().test(.router) { client in
            let log = try await client.call(.get, "/v1/events", token: token).json?["events"]?.arrayValue ?? []
            // (Her entry is about a beacon she no longer sees: withheld, as every event about it.)
            #expect(log.map { $0["type"] } == ["beacon.exited"])
            let notice = try #require(log.last?["data"]?.objectValue)
            #expect(notice["reason"] == "unavailable" && notice["beacon"] == .string(kiosk.id.rawValue))
            #expect(notice.members.map(\.key).sorted() == ["at", "beacon", "reason"], "\(notice)")
            #expect(!JSONWriter.string(.array(log)).contains("secret now"))
        }
    }

    /// A FeatureCollection without `features` is not an empty import (RFC 7946 §3.3): 422 naming it.
    @Test(arguments: Backend.all) func anImportWithoutFeaturesIsRefused(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, token) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/beacons/import", token: token, json: ["type": "FeatureCollection"])
            #expect(r.status == .unprocessableContent && r.errorPath == "features" && r.errorCode == "missing_field", "\(r.text)")
            let empty = try await client.call(.post, "/v1/beacons/import", token: token, json: ["type": "FeatureCollection", "features": []])
            #expect(empty.status == .created)
        }
    }
}
