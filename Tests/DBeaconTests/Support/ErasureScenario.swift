import DBeaconCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// The world of the erasure suite (issue 43): the people around a user U, U acting in every
/// service, and U's erasure; or the same people acting the same in a world where U never
/// existed.
///
/// **Two worlds, one timeline.** Both worlds run the same steps at the same clock times. A
/// step that U is part of runs only where U exists; a step that others take naming U (inviting
/// U to a meeting, listing U in a private beacon) names nobody in the other world. Each step
/// draws ids from a stream of its own (seeded by its number), so a step that makes more ids in
/// one world (events for U) shifts nobody else's. The beacons of others that U was listed in or
/// added content to (`touched`) count more edits where U was: their version and time of update
/// are the one thing the comparison leaves out of them.
struct ErasureScenario {
    enum Kind: String, CaseIterable, Sendable { case erased, never }

    static let spot = Walk.schlossplatz
    static let placeA = Walk.offset(spot, east: 400), placeB = Walk.offset(spot, east: 700)
    static let far = Walk.offset(spot, north: 1500)
    static let uuid = NoninterferenceTests.uuid
    static let start = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!

    let kind: Kind
    /// The people besides U: name → (id, token).
    var people: [String: (id: UserID, token: String)] = [:]
    /// U's id (never a user in the `never` world).
    var u = UserID(uncheckedRawValue: "usr_none")
    /// Every token U had, and their device's.
    var uTokens: [String] = []
    var uDeviceToken = ""
    /// What the noninterference script's `{name}`s stand for.
    var vars: [String: String] = [:]
    /// The admin's answer to the erasure (the `erased` world).
    var erasure: JSONValue?
    /// Why a mutant erasure failed (it rolled back), if it did.
    var erasureError: String?
    /// When U was erased (in the other world, the same time).
    var erasedAt = Self.start

    init(kind: Kind) { self.kind = kind }

    /// Others' beacons U changed (listed in, added content to): more versions where U was.
    static let touchedNames = ["wall", "shared", "plans"]
    var touched: Set<String> { Set(Self.touchedNames.compactMap { vars[$0] }) }

    /// U's beacon ids (namespaced, the same in both worlds).
    func uBeacon(_ name: String) -> String { BeaconID.namespace(of: u) + name }

    /// Builds the world through the API. With `sweep`, U also belongs to a private group's
    /// allowed list (a row only the sweep needs: its mirror would change the group's beacon).
    ///
    /// `beforeErasure` runs just before the erasure (or its mirror); with `mutant`, the erasure
    /// runs in process without that table's rule (the suite's mutants).
    static func build(_ kind: Kind, h: TestHarness, client: some TestClientProtocol, sweep: Bool = false, erase: Bool = true,
                      mutant: String? = nil, beforeErasure: () async throws -> Void = {}) async throws -> ErasureScenario {
        var scenario = ErasureScenario(kind: kind)
        let acted = kind == .erased
        var stepNumber: UInt64 = 0
        /// Runs `body` with ids from this step's own stream.
        func step(_ body: () async throws -> Void) async throws {
            stepNumber += 1
            try await IDSource.$seeded.withValue(SeededIDs(seed: 4_300 + stepNumber)) { try await body() }
        }
        var vars: [String: String] = ["uuid": Self.uuid]
        /// A call that must succeed; `save` keeps values of its answer.
        func ok(_ token: String, _ method: HTTPRequest.Method, _ path: String, _ body: JSONValue? = nil,
                save: [String: (JSONValue) -> String?] = [:]) async throws {
            var filled = path
            for (k, v) in vars { filled = filled.replacingOccurrences(of: "{\(k)}", with: v) }
            let json = try body.map { try JSONParser.parse(Self.fill(JSONWriter.string($0), vars)) }
            let r = try await client.call(method, filled, token: token, json: json)
            guard r.status.code < 300 else {
                Issue.record("scenario (\(kind)) \(method) \(filled): \(r.status.code) \(r.text.prefix(300))")
                return
            }
            if let answer = r.json { for (name, read) in save { if let v = read(answer) { vars[name] = v } } }
        }
        let id: (JSONValue) -> String? = { $0["id"]?.stringValue ?? $0["tour"]?["id"]?.stringValue }
        let admin = TestHarness.adminToken
        let spot = Self.spot, placeA = Self.placeA, placeB = Self.placeB

        // The people, and U (in the other world only their id, from the same stream).
        var people: [String: (id: UserID, token: String)] = [:]
        try await step {
            for name in ["olga", "tess", "stranger", "mate", "follower", "org"] { people[name] = try await h.user(name) }
        }
        var u = UserID(uncheckedRawValue: "usr_none"), uToken = ""
        try await step {
            if acted { (u, uToken) = try await h.user("ursula") } else { u = UserID.generate() }
        }
        scenario.u = u
        let olga = people["olga"]!.token, tess = people["tess"]!.token, mate = people["mate"]!.token
        let follower = people["follower"]!.token, org = people["org"]!.token
        let ns = BeaconID.namespace(of: u)
        for name in ["secret", "future", "ended"] { vars[name] = ns + name }
        vars["u_pub"] = ns + "pub"
        vars["u_big"] = ns + "big"
        vars["erased"] = u.rawValue
        vars["someone"] = people["tess"]!.id.rawValue

        // Public objects (as the noninterference suite's): olga's café, place, promotion, open
        // meeting and group; tess's wall and tour.
        try await step {
            try await ok(olga, .post, "/v1/beacons", feature(name: "cafe", lat: spot.lat, lon: spot.lon, perimeter: circle(150),
                                                             tags: ["food"], extra: [("content_policy", "anyone")]), save: ["cafe": id])
            try await ok(olga, .post, "/v1/registry", ["type": "ibeacon", "uuid": "{uuid}", "major": 1, "minor": 1, "beacon": "{cafe}"])
            try await ok(olga, .post, "/v1/beacons", feature(name: "place A", lat: placeA.lat, lon: placeA.lon, perimeter: circle(60),
                                                             tags: ["sight"]), save: ["placeA": id])
            try await ok(olga, .post, "/v1/promotions", ["name": "lunch deal", "location": Walk.latLon(spot), "perimeter": circle(200),
                                                         "category": "food"], save: ["promo": id])
            try await ok(olga, .post, "/v1/meetings", ["name": "open meeting", "location": Walk.latLon(spot), "perimeter": circle(200),
                                                       "start": "2026-11-21T11:00:00Z", "end": "2026-11-21T18:00:00Z"], save: ["meeting": id])
            try await ok(olga, .post, "/v1/groups", ["name": "walkers", "range_m": 300], save: ["group": id])
            try await ok(tess, .post, "/v1/beacons", feature(name: "wall", lat: spot.lat, lon: spot.lon, perimeter: circle(80), tags: ["art"],
                relationships: [["type": "related", "target": "{cafe}"]], extra: [("content_policy", "anyone")]), save: ["wall": id])
            try await ok(tess, .post, "/v1/tours", ["name": "public tour", "stops": [["name": "B", "location": Walk.latLon(placeB)],
                                                                                  ["beacon": "{placeA}"]]], save: ["tour": id])
        }
        // Others name U: tess shares a beacon with them, org invites them (where U never was, with
        // nobody listed).
        try await step {
            try await ok(tess, .post, "/v1/beacons", feature(name: "shared", lat: spot.lat, lon: spot.lon, perimeter: circle(90),
                                                             tags: ["friends"], members: acted ? [u] : []), save: ["shared": id])
        }
        try await step {
            try await ok(org, .post, "/v1/meetings", ["name": "plans", "location": Walk.latLon(spot), "perimeter": circle(200),
                "start": "2026-11-21T11:30:00Z", "end": "2026-11-21T17:00:00Z", "invitees": .array(acted ? [.string(u.rawValue)] : [])],
                save: ["plans": id])
        }
        try await step {
            _ = try await h.fix(people["olga"]!.id, lat: spot.lat, lon: spot.lon)
            try await ok(mate, .post, "/v1/groups/{group}/join")
            try await ok(mate, .post, "/v1/me/location", Walk.fix(spot, at: h.clock.now()))
        }
        _ = h.clock.tick(60)

        // U's own things: beacons (one with a large polygon, kept in the coordinate file), a
        // meeting, a tour, a promotion, a group, a registry entry, a device and a webhook.
        let u_pub = vars["u_pub"]!, u_big = vars["u_big"]!
        try await step {
            guard acted else { return }
            var pub = feature(name: "ursula's stall", lat: placeB.lat, lon: placeB.lon, perimeter: circle(100), tags: ["food", "sight"],
                              extra: [("content", [["kind": "web", "url": "https://example.org/ursula", "title": "mine"]])]).objectValue!
            pub["id"] = .string(u_pub)
            try await ok(uToken, .post, "/v1/beacons", .object(pub))
            var bigFeature = feature(name: "ursula's garden", lat: placeB.lat, lon: placeB.lon,
                                     perimeter: Self.bigPolygon(around: Walk.offset(placeB, north: 300)), tags: ["park"]).objectValue!
            bigFeature["id"] = .string(u_big)
            try await ok(uToken, .post, "/v1/beacons", .object(bigFeature))
            for (name, f) in [("secret", feature(name: "secret", lat: spot.lat, lon: spot.lon, perimeter: circle(120), tags: ["food", "secret"], members: [])),
                              ("future", feature(name: "future", lat: spot.lat, lon: spot.lon, perimeter: circle(120), tags: ["food"],
                                                 lifetime: ("2030-01-01T00:00:00Z", nil))),
                              ("ended", feature(name: "ended", lat: spot.lat, lon: spot.lon, perimeter: circle(120), tags: ["food"],
                                                lifetime: (nil, "2026-11-20T00:00:00Z")))] {
                var body = f.objectValue!
                body["id"] = .string(ns + name)
                try await ok(uToken, .post, "/v1/beacons", .object(body))
            }
            try await ok(uToken, .post, "/v1/meetings", ["name": "ursula's party", "location": Walk.latLon(spot), "perimeter": circle(200),
                "start": "2026-11-21T13:00:00Z", "end": "2026-11-21T20:00:00Z", "invitees": [.string(people["org"]!.id.rawValue)]],
                save: ["hiddenMeeting": id])
            try await ok(uToken, .post, "/v1/tours", ["name": "ursula's walk", "stops": [["beacon": "{placeA}"], ["beacon": .string(u_pub)]]],
                         save: ["hiddenTour": id])
            try await ok(uToken, .post, "/v1/promotions", ["name": "ursula's sale", "location": Walk.latLon(spot), "perimeter": circle(200),
                                                           "category": "food"], save: ["hiddenPromo": id])
            try await ok(uToken, .post, "/v1/groups", ["name": "ursula's walkers", "range_m": 200, "location": Walk.latLon(spot)],
                         save: ["uGroup": id])
            try await ok(uToken, .post, "/v1/registry", ["type": "ibeacon", "uuid": "{uuid}", "major": 7, "minor": 7, "beacon": .string(u_pub)],
                         save: ["hiddenEntry": id])
            try await ok(uToken, .post, "/v1/me/devices", ["name": "ursula's phone"],
                         save: ["hiddenDevice": id, "uDeviceToken": { $0["token"]?.stringValue }])
            try await ok(uToken, .post, "/v1/webhooks", ["url": "http://127.0.0.1:9/ursula", "events": ["*"]])
        }
        if !acted {
            // Stand-ins for the ids the script names, from the same stream as U's would be.
            try await step {
                vars["hiddenMeeting"] = BeaconID.generate().rawValue
                vars["hiddenTour"] = BeaconID.generate().rawValue
                vars["hiddenPromo"] = BeaconID.generate().rawValue
                vars["hiddenEntry"] = RegistryID.generate().rawValue
                vars["hiddenDevice"] = DeviceID.generate().rawValue
            }
        } else {
            try await step {}
        }
        // Others with U: a follower of U's stall, a mate in U's group, U in others' things.
        try await step {
            guard acted else { return }
            try await ok(follower, .post, "/v1/beacons/\(u_pub)/followers")
            try await ok(mate, .post, "/v1/groups/{uGroup}/join")
            try await ok(uToken, .post, "/v1/beacons/{cafe}/followers")
            try await ok(uToken, .post, "/v1/tours/{tour}/follow")
            try await ok(uToken, .post, "/v1/groups/{group}/join")
            try await ok(uToken, .post, "/v1/meetings/{meeting}/join")
            try await ok(uToken, .post, "/v1/meetings/{plans}/join")
            try await ok(uToken, .put, "/v1/me/interests", ["interests": ["food": 3, "art": 1]])
            try await ok(uToken, .put, "/v1/me/tags/food", ["radius_m": 3000])
            for interaction in [["type": "saved"], ["type": "rated", "rating": 5], ["type": "feedback", "text": "lovely"],
                                ["type": "clicked"]] as [JSONValue] {
                try await ok(uToken, .post, "/v1/promotions/{promo}/interactions", interaction)
            }
            if sweep {
                try await ok(tess, .post, "/v1/groups", ["name": "tess's crew", "range_m": 500, "location": Walk.latLon(spot),
                                                         "members": [.string(u.rawValue)]])
            }
        }
        _ = h.clock.tick(60)
        // U moves: into place A (a tour visit), shares a photo there, sights the café's beacon,
        // reports through OwnTracks and OsmAnd on their device, crosses regions, then walks off
        // out of the group's range (alerts to the guide and the mate).
        try await step {
            guard acted else { return _ = h.clock.tick(15) }
            let deviceToken = vars["uDeviceToken"] ?? ""
            try await ok(uToken, .post, "/v1/me/location", Walk.fix(placeA, at: h.clock.now()))
            try await ok(uToken, .post, "/v1/places/{placeA}/media", ["kind": "image", "url": "https://example.org/ursula.jpg", "title": "view"])
            try await ok(uToken, .post, "/v1/sightings", ["batch_id": "u-scan", "sightings": [["uuid": "{uuid}", "major": 1, "minor": 1, "rssi": -60]]])
            _ = h.clock.tick(5)
            try await ok(deviceToken, .post, "/v1/owntracks", ["_type": "location", "lat": .number(spot.lat), "lon": .number(spot.lon),
                                                               "tst": .int(Int(h.clock.now().millis / 1000)), "acc": 5, "tid": "ur"])
            _ = h.clock.tick(5)
            let r = try await client.call(.get, "/v1/osmand?id=\(deviceToken)&lat=\(placeB.lat)&lon=\(placeB.lon)&timestamp=\(h.clock.now().millis / 1000)")
            if r.status.code >= 300 { Issue.record("scenario osmand: \(r.status.code) \(r.text)") }
            try await ok(uToken, .post, "/v1/me/region-events", ["events": [["region": "{cafe}", "type": "exit"]]])
            _ = h.clock.tick(5)
            try await ok(uToken, .post, "/v1/me/location", Walk.fix(Self.far, at: h.clock.now()))
            // And back: inside the café, the wall and their own beacons when erased.
            try await ok(uToken, .post, "/v1/me/location", Walk.fix(spot, at: h.clock.now().adding(seconds: 1)))
        }
        _ = h.clock.tick(60)
        // U adds content to tess's wall.
        try await step {
            guard acted else { return }
            try await ok(uToken, .post, "/v1/beacons/{wall}/content", ["kind": "web", "url": "https://example.org/note", "title": "note"])
        }
        // Tess opens a deli near U (U follows the category: beacon.created for U); U renames their
        // stall (its follower hears of it) and rotates their token.
        try await step {
            try await ok(tess, .post, "/v1/beacons", feature(name: "new deli", lat: Self.far.lat, lon: Self.far.lon, perimeter: circle(50),
                                                             tags: ["food"]), save: ["deli": id])
        }
        try await step {
            guard acted else { return }
            try await ok(uToken, .patch, "/v1/beacons/\(u_pub)", ["properties": ["name": "ursula's bigger stall"]])
            try await ok(uToken, .post, "/v1/me/token", save: ["uNewToken": { $0["token"]?.stringValue }])
        }
        if acted { scenario.uTokens = [uToken, vars["uNewToken"] ?? ""] }
        scenario.uDeviceToken = vars["uDeviceToken"] ?? ""
        _ = h.clock.tick(60)

        // The erasure.
        var erasure: JSONValue?
        try await beforeErasure()
        scenario.erasedAt = h.clock.now()
        try await step {
            if !erase { return }
            if acted, let mutant {
                do { _ = try await h.services.accounts.erase(u, skipping: [mutant]) } catch {
                    scenario.erasureError = "\(error)"
                }
            } else if acted {
                let r = try await client.call(.delete, "/v1/users/\(u.rawValue)", token: admin)
                if r.status != .ok { Issue.record("erasure: \(r.status.code) \(r.text)") }
                erasure = r.json
            }
        }
        await h.services.accounts.settle()
        _ = h.clock.tick(60)
        scenario.erasure = erasure
        scenario.people = people
        scenario.vars = vars
        return scenario
    }

    static func fill(_ s: String, _ vars: [String: String]) -> String {
        var s = s
        for (k, v) in vars { s = s.replacingOccurrences(of: "{\(k)}", with: v) }
        return s
    }

    /// A polygon of 320 vertices (above the index's 256: kept compact, its exact coordinates in
    /// the coordinate file) with a recognisable coordinate.
    static func bigPolygon(around c: Position) -> JSONValue {
        var ring: [(Double, Double)] = (0..<320).map { i in
            let a = Double(i) / 320 * 2 * .pi
            let p = Walk.offset(c, north: 120 * sin(a), east: 120 * cos(a))
            return (p.lon, p.lat)
        }
        ring[0].0 = bigMarker
        ring.append(ring[0])
        return polygon([ring])
    }

    /// A longitude found only in U's large polygon (its bytes are looked for in index files).
    static let bigMarker = 9.19123456789123
}
