import DBeaconCore
import DBeaconServices
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Noninterference (issue 26): a stranger, and someone who lost access, see the same answers
/// whether or not objects hidden from them exist.
///
/// Two worlds are built on the same store kind with the same clock: *plain*, and *hidden*, which
/// differs only by objects the stranger may not see (a private beacon and a future and an ended
/// one at the same spot, a private meeting, a private tour through a public place, a private
/// promotion, registry entries of hidden beacons holding the identities the stranger uses, a
/// hidden first stop of a public tour, a hidden relationship target of a public beacon). The
/// same script of calls, covering every operation of `schema/openapi.yaml`, runs as the stranger
/// in both; each answer (status, `ETag`, `Location`, `Retry-After`, body) must be identical
/// once generated ids, secrets and sealed cursors are replaced by placeholders in order of
/// appearance. The script runs twice: as a stranger, and as `ex`, who in the hidden world
/// followed and stood inside two beacons, one then made private and one whose group dropped
/// them (their notices of that loss, which the model allows, are left out of their answers). The script ends by reading the stranger's events (log and stream), so events
/// count too. An operation of the document without a step fails the suite, so a new route
/// cannot ship untested.
@Suite(.bounded) struct NoninterferenceTests {
    static let uuid = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"
    static let spot = Walk.schlossplatz
    static let placeA = Walk.offset(spot, east: 400), placeB = Walk.offset(spot, east: 700)

    /// One call of the script: `{name}` in the path or the body stands for a value saved from an
    /// earlier answer (or the world's setup); `save` keeps values of this answer.
    struct Step: Sendable {
        var method: HTTPRequest.Method
        var path: String
        var body: JSONValue? = nil
        var token: Bool = true
        var headers: [String: String] = [:]
        var save: [String: @Sendable (JSONValue) -> String?] = [:]
        /// The bearer token is the value saved under this name (a token the script rotated).
        var tokenVar: String? = nil
    }

    enum World: String, CaseIterable { case plain, hidden }

    @Test(arguments: Backend.all) func aStrangerCannotTellWhetherHiddenObjectsExist(_ backend: Backend) async throws {
        var transcripts: [World: [(String, String)]] = [:]
        for world in World.allCases {
            transcripts[world] = try await Self.run(world, backend: backend)
        }
        let plain = transcripts[.plain] ?? [], hidden = transcripts[.hidden] ?? []
        #expect(plain.count == hidden.count)
        for (a, b) in zip(plain, hidden) where a.1 != b.1 {
            Issue.record("\(a.0) answers differently when hidden objects exist:\n\(Self.difference(a.1, b.1, "plain", "hidden"))")
        }
        // Every operation of the document has a step.
        let operations = try Self.documentedOperations()
        let covered = Set(plain.map { Self.operation(of: $0.0, in: operations) ?? "unmatched \($0.0)" })
        let missing = Set(operations.values).subtracting(covered)
        #expect(missing.sorted() == [], "operations of schema/openapi.yaml without a noninterference step")
        #expect(!covered.contains { $0.hasPrefix("unmatched") }, "steps that match no documented operation: \(covered.sorted())")
    }

    // MARK: The worlds

    /// Public objects and the stranger's get ids from one seeded stream in both worlds (so
    /// orders that break ties by id agree); hidden objects, and their stand-ins, from another.
    static func run(_ world: World, backend: Backend) async throws -> [(String, String)] {
        try await IDSource.$seeded.withValue(SeededIDs(seed: 26)) { try await runSeeded(world, backend: backend) }
    }

    static func runSeeded(_ world: World, backend: Backend) async throws -> [(String, String)] {
        let hiddenIDs = SeededIDs(seed: 2026)
        let h = try await TestHarness.make(backend: backend) { $0.allowPrivateWebhooks = true }
        let (olgaID, olga) = try await h.user("olga")
        let (hider, hiderToken) = try await h.user("hider")
        let (stranger, strangerToken) = try await h.user("stranger")
        let (ex, exToken) = try await h.user("ex")
        let initial: [String: String] = ["me": stranger.rawValue, "mine": BeaconID.namespace(of: stranger) + "x", "someone": olgaID.rawValue,
                                      "secret": BeaconID.namespace(of: hider) + "secret",
                                      "future": BeaconID.namespace(of: hider) + "future",
                                      "ended": BeaconID.namespace(of: hider) + "ended",
                                      "wall": BeaconID.namespace(of: hider) + "wall",
                                      "uuid": uuid]
        return try await h.app().test(.router) { client in
            var vars = initial
            // Public objects, in both worlds.
            func setup(_ token: String, _ step: Step) async throws {
                let r = try await Self.call(client, step, token: token, vars: &vars)
                guard r.status.code < 300 else { Issue.record("setup \(step.path): \(r.text)"); return }
            }
            let id: @Sendable (JSONValue) -> String? = { $0["id"]?.stringValue ?? $0["tour"]?["id"]?.stringValue }
            try await setup(olga, Step(method: .post, path: "/v1/beacons", body: feature(name: "cafe", lat: spot.lat, lon: spot.lon,
                perimeter: circle(150), tags: ["food"], extra: [("content_policy", "anyone")]), save: ["cafe": id]))
            try await setup(olga, Step(method: .post, path: "/v1/registry", body: ["type": "ibeacon", "uuid": "{uuid}", "major": 1,
                                                                                   "minor": 1, "beacon": "{cafe}"]))
            try await setup(olga, Step(method: .post, path: "/v1/beacons", body: feature(name: "place A", lat: placeA.lat,
                lon: placeA.lon, perimeter: circle(60), tags: ["sight"]), save: ["placeA": id]))
            try await setup(olga, Step(method: .post, path: "/v1/promotions", body: ["name": "lunch deal", "location": Walk.latLon(spot),
                "perimeter": circle(200), "category": "food"], save: ["promo": id]))
            try await setup(olga, Step(method: .post, path: "/v1/meetings", body: ["name": "open meeting", "location": Walk.latLon(spot),
                "perimeter": circle(200), "start": "2026-11-21T11:00:00Z", "end": "2026-11-21T18:00:00Z"], save: ["meeting": id]))
            try await setup(olga, Step(method: .post, path: "/v1/groups", body: ["name": "walkers", "range_m": 300], save: ["group": id]))
            // Hidden objects, in the hidden world only; stand-ins that never existed otherwise.
            if world == .hidden { try await IDSource.$seeded.withValue(hiddenIDs) {
                let hiddenAt: [(String, JSONValue)] = [
                    ("secret", feature(name: "secret", lat: spot.lat, lon: spot.lon, perimeter: circle(120), tags: ["food", "secret"],
                                       members: [])),
                    ("future", feature(name: "future", lat: spot.lat, lon: spot.lon, perimeter: circle(120), tags: ["food"],
                                       lifetime: ("2030-01-01T00:00:00Z", nil))),
                    ("ended", feature(name: "ended", lat: spot.lat, lon: spot.lon, perimeter: circle(120), tags: ["food"],
                                      lifetime: (nil, "2026-11-20T00:00:00Z"))),
                ]
                for (name, f) in hiddenAt {
                    var body = f.objectValue ?? [:]
                    body["id"] = .string(vars[name] ?? "")
                    try await setup(hiderToken, Step(method: .post, path: "/v1/beacons", body: .object(body)))
                }
                try await setup(hiderToken, Step(method: .post, path: "/v1/meetings", body: ["name": "private meeting",
                    "location": Walk.latLon(spot), "perimeter": circle(200), "start": "2026-11-21T11:00:00Z",
                    "end": "2026-11-21T18:00:00Z", "invitees": []], save: ["hiddenMeeting": id]))
                try await setup(hiderToken, Step(method: .post, path: "/v1/tours", body: ["name": "private tour",
                    "visibility": ["members": []], "stops": [["beacon": "{placeA}"]]], save: ["hiddenTour": id]))
                try await setup(hiderToken, Step(method: .post, path: "/v1/promotions", body: ["name": "secret deal",
                    "location": Walk.latLon(spot), "perimeter": circle(200), "category": "food"], save: ["hiddenPromo": id]))
                try await setup(hiderToken, Step(method: .patch, path: "/v1/beacons/{hiddenPromo}",
                                                 body: ["properties": ["visibility": ["members": []]]]))
                for (major, minor) in [("2", "2"), ("1", nil), (nil, nil)] as [(String?, String?)] {
                    var entry: JSONObject = ["type": "ibeacon", "uuid": "{uuid}", "beacon": "{secret}"]
                    if let major { entry["major"] = .int(Int(major)!) }
                    if let minor { entry["minor"] = .int(Int(minor)!) }
                    try await setup(hiderToken, Step(method: .post, path: "/v1/registry", body: .object(entry), save: ["hiddenEntry": id]))
                }
                try await setup(hiderToken, Step(method: .post, path: "/v1/me/devices", body: ["name": "hider's phone"],
                                                 save: ["hiddenDevice": id]))
                try await h.fix(hider, lat: spot.lat, lon: spot.lon)
                // `ex` saw two of the hider's beacons, followed them and was inside them: one
                // public, then made private; one shared with them, then not. Both hidden now.
                for (name, members) in [("wasPublic", nil), ("wasShared", [ex])] as [(String, [UserID]?)] {
                    var body = feature(name: name, lat: spot.lat, lon: spot.lon, perimeter: circle(120), tags: ["food"],
                                       members: members).objectValue ?? [:]
                    body["id"] = .string(BeaconID.namespace(of: hider) + name)
                    try await setup(hiderToken, Step(method: .post, path: "/v1/beacons", body: .object(body)))
                    try await setup(exToken, Step(method: .post, path: "/v1/beacons/\(BeaconID.namespace(of: hider) + name)/followers"))
                }
            } } else {
                IDSource.$seeded.withValue(hiddenIDs) {
                    vars["hiddenMeeting"] = BeaconID.generate().rawValue
                    vars["hiddenTour"] = BeaconID.generate().rawValue
                    vars["hiddenPromo"] = BeaconID.generate().rawValue
                    vars["hiddenEntry"] = RegistryID.generate().rawValue
                    vars["hiddenDevice"] = DeviceID.generate().rawValue
                }
            }
            // Public objects that name hidden ones in the hidden world only.
            var wallLinks: [JSONValue] = [["type": "related", "target": "{cafe}"]]
            if world == .hidden { wallLinks.append(["type": "related", "target": "{secret}"]) }
            var wall = feature(name: "wall", lat: spot.lat, lon: spot.lon, perimeter: circle(80), tags: ["art"], relationships: wallLinks,
                               extra: [("content_policy", "anyone")]).objectValue ?? [:]
            wall["id"] = "{wall}"
            try await setup(hiderToken, Step(method: .post, path: "/v1/beacons", body: .object(wall)))
            var stops: [JSONValue] = [["name": "B", "location": Walk.latLon(placeB)], ["beacon": "{placeA}"]]
            if world == .hidden { stops.insert(["beacon": "{secret}"], at: 0) }
            try await setup(hiderToken, Step(method: .post, path: "/v1/tours", body: ["name": "public tour", "stops": .array(stops)],
                                             save: ["tour": id]))
            // `ex` stands at the spot in both worlds (inside the two in the hidden one), then loses
            // them; the events this makes take ids from a stream of their own.
            try await IDSource.$seeded.withValue(SeededIDs(seed: 7)) { try await h.fix(ex, lat: spot.lat, lon: spot.lon) }
            if world == .hidden { try await IDSource.$seeded.withValue(hiddenIDs) {
                for name in ["wasPublic", "wasShared"] {
                    try await setup(hiderToken, Step(method: .patch, path: "/v1/beacons/\(BeaconID.namespace(of: hider) + name)",
                                                     body: ["properties": ["visibility": ["members": []], "name": "renamed"]]))
                }
            } }

            // The script, as the stranger and then as `ex` (who lost access in the hidden world).
            var transcript: [(String, String)] = []
            for (viewer, token) in [(stranger, strangerToken), (ex, exToken)] {
            vars["me"] = viewer.rawValue
            vars["mine"] = BeaconID.namespace(of: viewer) + "x"
            for step in Self.script() {
                let bearer = step.tokenVar.flatMap { vars[$0] } ?? (step.token ? token : nil)
                let r = try await Self.call(client, step, token: bearer, vars: &vars)
                var answer = "\(r.status.code)"
                for header in [HTTPField.Name.eTag, .location, .retryAfter, .allow] {
                    if let v = r.headers[header] { answer += " \(header.rawName)=\(v)" }
                }
                // Notices of losing access are the one thing the model lets reach someone who
                // lost it (`Event.isAccessLossNotice`): left out of `ex`'s answers.
                answer += " " + (viewer == ex ? Self.withoutLossNotices(r.json, text: r.text, recipient: ex) : r.text)
                transcript.append(("\(viewer == ex ? "[ex] " : "")\(step.method.rawValue) \(step.path)", answer))
            }
            }
            return Self.normalised(transcript)
        }
    }

    static func call(_ client: some TestClientProtocol, _ step: Step, token: String?,
                     vars: inout [String: String]) async throws -> JSONResponse {
        func fill(_ s: String) -> String {
            var s = s
            for (k, v) in vars { s = s.replacingOccurrences(of: "{\(k)}", with: v) }
            return s
        }
        var headers = HTTPFields()
        for (k, v) in step.headers { if let name = HTTPField.Name(k) { headers[name] = fill(v) } }
        let body = try step.body.map { try JSONParser.parse(fill(JSONWriter.string($0))) }
        let r = try await client.call(step.method, fill(step.path), token: token, json: body, headers: headers)
        if let json = r.json { for (name, read) in step.save { if let v = read(json) { vars[name] = v } } }
        return r
    }

    /// Two answers from where they first differ (with a little before), for the report.
    static func difference(_ a: String, _ b: String, _ nameA: String, _ nameB: String) -> String {
        let common = zip(a, b).prefix { $0 == $1 }.count
        let from = max(0, common - 200)
        func window(_ s: String) -> Substring { s.dropFirst(from).prefix(1200) }
        return " \(nameA): …\(window(a))\n \(nameB): …\(window(b))"
    }

    /// The answer with the loss notices addressed to `recipient` left out of its `events`.
    static func withoutLossNotices(_ json: JSONValue?, text: String, recipient: UserID) -> String {
        guard var o = json?.objectValue, let events = o["events"]?.arrayValue else { return text }
        o["events"] = .array(events.filter { e in
            guard let type = e["type"]?.stringValue else { return true }
            let event = Event(type: EventType(rawValue: type), createdAt: RandomBeacons.base, recipient: recipient,
                              beacon: nil, data: e["data"]?.objectValue ?? [:])
            return !event.isAccessLossNotice
        })
        return JSONWriter.string(.object(o))
    }

    /// Generated ids, secrets and sealed cursors replaced by placeholders numbered in order of
    /// first appearance in each answer (an extra id shifts the rest of that answer).
    static func normalised(_ transcript: [(String, String)]) -> [(String, String)] {
        let pattern = try! NSRegularExpression(pattern: #"(bcn|usr|whk|reg|grp|med|evt|dev|dbd|dbt)_[A-Za-z0-9_]+|whsec_[A-Za-z0-9+/=]+|"e[A-Za-z0-9_-]{40,}""#)
        return transcript.map { label, text in
            var names: [String: String] = [:]
            let ns = text as NSString
            var out = "", last = 0
            for m in pattern.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
                out += ns.substring(with: NSRange(location: last, length: m.range.location - last))
                let token = ns.substring(with: m.range)
                if token.hasPrefix("\"e") { out += "\"<cursor>\"" } else if token.hasPrefix("whsec_") { out += "<secret>" } else {
                    if names[token] == nil { names[token] = "<\(token.prefix(3))\(names.count)>" }
                    out += names[token]!
                }
                last = m.range.location + m.range.length
            }
            out += ns.substring(from: last)
            return (label, out)
        }
    }

    // MARK: The script

    /// Every operation of the document, as a stranger calls it, on public objects, on hidden
    /// ones (or their stand-ins) and on the stranger's own.
    static func script() -> [Step] {
        func get(_ p: String, token: Bool = true) -> Step { Step(method: .get, path: p, token: token) }
        func post(_ p: String, _ b: JSONValue? = nil, save: [String: @Sendable (JSONValue) -> String?] = [:]) -> Step {
            Step(method: .post, path: p, body: b, save: save)
        }
        func patch(_ p: String, _ b: JSONValue) -> Step { Step(method: .patch, path: p, body: b) }
        func put(_ p: String, _ b: JSONValue? = nil) -> Step { Step(method: .put, path: p, body: b) }
        func delete(_ p: String) -> Step { Step(method: .delete, path: p) }
        let id: @Sendable (JSONValue) -> String? = { $0["id"]?.stringValue ?? $0["tour"]?["id"]?.stringValue }
        let here = "lat=\(spot.lat)&lon=\(spot.lon)", atA = "lat=\(placeA.lat)&lon=\(placeA.lon)"
        let mine = feature(name: "mine", lat: spot.lat, lon: spot.lon, perimeter: circle(50), tags: ["food"]).objectValue ?? [:]
        var mineWithID = mine
        mineWithID["id"] = "{mine}"
        var mineToSecret = mine
        var linked = mine["properties"]?.objectValue ?? [:]
        linked["relationships"] = [["type": "related", "target": "{secret}"]]
        mineToSecret["properties"] = .object(linked)
        return [
            // Operations and the console.
            get("/healthz", token: false), get("/readyz", token: false), get("/metrics", token: false), get("/metrics"), get("/openapi.yaml", token: false),
            get("/", token: false), get("/console/app.js", token: false), get("/console/leaflet/leaflet.css", token: false),
            get("/console/leaflet/images/marker-icon.png", token: false),
            post("/v1/users", ["name": "mallory"]), get("/v1/me"),
            // Moving around: fixes, crossings, regions, tags.
            post("/v1/me/location", Walk.fix(spot, at: Timestamp(rfc3339: "2026-11-21T12:00:00Z")!)),
            post("/v1/me/region-events", ["events": [["region": "{secret}", "type": "enter"], ["region": "{cafe}", "type": "exit"]]]),
            post("/v1/me/region-events", ["events": [["region": "{hiddenEntry}", "type": "enter"]]]),
            get("/v1/regions?\(here)&max=20"), get("/v1/regions?\(here)&max=3"), get("/v1/tags"), get("/v1/tags?bbox=9.1,48.7,9.3,48.8"),
            put("/v1/me/tags/food", ["radius_m": 3000]), get("/v1/me/tags"), delete("/v1/me/tags/food"),
            // Phones: devices, OwnTracks (regions as waypoints, friends) and Traccar Client / OsmAnd.
            post("/v1/me/devices", ["name": "phone"], save: ["device": id, "deviceToken": { $0["token"]?.stringValue }]),
            get("/v1/me/devices"), delete("/v1/me/devices/{hiddenDevice}"),
            post("/v1/owntracks", ["_type": "location", "lat": .number(spot.lat), "lon": .number(spot.lon), "tst": 1_795_262_400,
                                   "acc": 5, "tid": "st"]),
            post("/v1/owntracks", ["_type": "transition", "event": "leave", "rid": "{secret}", "tst": 1_795_262_400]),
            post("/v1/owntracks", ["_type": "transition", "event": "enter", "rid": "{wall}", "tst": 1_795_262_400]),
            get("/v1/osmand?id={deviceToken}&lat=\(spot.lat)&lon=\(spot.lon)&timestamp=1795262400", token: false),
            Step(method: .post, path: "/v1/osmand", body: ["device_id": "{deviceToken}", "location": [
                "timestamp": "2026-11-21T12:00:00Z", "coords": ["latitude": .number(placeA.lat), "longitude": .number(placeA.lon)]]],
                 token: false),
            delete("/v1/me/devices/{device}"),
            get("/v1/me/interests"), put("/v1/me/interests", ["interests": ["food": 3]]),
            // Beacons.
            post("/v1/beacons", .object(mineToSecret)), post("/v1/beacons", .object(mineWithID)),
            get("/v1/beacons?limit=500"), get("/v1/beacons?tag=food&bbox=9.1,48.7,9.3,48.8"), get("/v1/beacons?owner=me"),
            // Pages: a cursor must not count what others (hidden objects included) wrote.
            Step(method: .get, path: "/v1/beacons?limit=2", save: ["page2": { $0["next_cursor"]?.stringValue }]),
            get("/v1/beacons?limit=2&cursor={page2}"),
            post("/v1/beacons/import", ["type": "FeatureCollection", "features": [.object(mineToSecret)]]),
            get("/v1/beacons/{secret}"), get("/v1/beacons/{future}"), get("/v1/beacons/{ended}"), get("/v1/beacons/{wall}"),
            get("/v1/beacons/{tour}"), patch("/v1/beacons/{secret}", ["properties": ["name": "x"]]),
            patch("/v1/beacons/{mine}", ["properties": ["relationships": [["type": "related", "target": "{secret}"]]]]),
            patch("/v1/beacons/{mine}", ["properties": ["relationships": [["type": "related", "target": "{wall}"]]]]),
            patch("/v1/beacons/{wall}", ["properties": ["name": "x"]]),
            delete("/v1/beacons/{secret}"), post("/v1/beacons/{secret}/followers"), post("/v1/beacons/{wall}/followers"),
            get("/v1/beacons/{wall}/followers"), get("/v1/beacons/{secret}/followers"), delete("/v1/beacons/{secret}/followers/me"),
            delete("/v1/beacons/{wall}/followers/me"), get("/v1/beacons/{secret}/visits"), get("/v1/beacons/{mine}/visits"),
            get("/v1/beacons/{wall}/related"), get("/v1/beacons/{tour}/related?type=tour"), get("/v1/beacons/{secret}/related"),
            post("/v1/beacons/{wall}/content", ["kind": "web", "url": "https://example.org/x", "title": "x"]),
            post("/v1/beacons/{secret}/content", ["kind": "web", "url": "https://example.org/x"]),
            delete("/v1/beacons/{wall}/content/0"), delete("/v1/beacons/{secret}/content/0"),
            get("/v1/beacons/{secret}/directions?from_lat=48.77&from_lon=9.17"), get("/v1/beacons/{tour}/directions?from_lat=48.77&from_lon=9.17"),
            get("/v1/nearby?\(here)"), get("/v1/nearby?\(here)&tag=food&perimeter=none"), get("/v1/nearby?\(here)&at=2030-06-01T00:00:00Z"),
            get("/v1/nearby?\(atA)"),
            // Webhooks.
            post("/v1/webhooks", ["url": "http://127.0.0.1:9/hook", "events": ["*"]], save: ["hook": id]),
            get("/v1/webhooks"), get("/v1/webhooks/{hook}"), get("/v1/webhooks/{hook}/deliveries"),
            post("/v1/webhooks/{hook}/rotate-secret"), post("/v1/webhooks/{hook}/enable"),
            post("/v1/webhooks/{hook}/deliveries/1/redeliver"), delete("/v1/webhooks/{hook}"),
            // Meetings.
            post("/v1/meetings", ["name": "mine", "location": Walk.latLon(spot), "start": "2026-11-21T13:00:00Z",
                                  "end": "2026-11-21T14:00:00Z", "invitees": []], save: ["myMeeting": id]),
            get("/v1/meetings"), get("/v1/meetings/nearby?\(here)"), get("/v1/meetings/{hiddenMeeting}"), get("/v1/meetings/{meeting}"),
            patch("/v1/meetings/{hiddenMeeting}", ["name": "x"]), patch("/v1/meetings/{myMeeting}", ["name": "renamed"]),
            post("/v1/meetings/{hiddenMeeting}/join"), post("/v1/meetings/{meeting}/join"), post("/v1/meetings/{hiddenMeeting}/leave"),
            post("/v1/meetings/{meeting}/leave"), get("/v1/meetings/{hiddenMeeting}/directions?from_lat=48.77&from_lon=9.17"),
            delete("/v1/meetings/{hiddenMeeting}"), delete("/v1/meetings/{myMeeting}"),
            // Groups.
            post("/v1/groups", ["name": "mine", "range_m": 200], save: ["myGroup": id]), get("/v1/groups"),
            get("/v1/groups/nearby?\(here)"), get("/v1/groups/{group}"), post("/v1/groups/{group}/join"),
            post("/v1/groups/{group}/leave"), delete("/v1/groups/{group}/members/{me}"), delete("/v1/groups/{group}"),
            delete("/v1/groups/{myGroup}"),
            // Tours and places.
            post("/v1/tours", ["name": "mine", "stops": [["beacon": "{secret}"]]]),
            post("/v1/tours", ["name": "mine", "stops": [["beacon": "{placeA}"]]], save: ["myTour": id]),
            get("/v1/tours/nearby?\(atA)"), get("/v1/tours/{tour}"), get("/v1/tours/{hiddenTour}"), get("/v1/tours/{tour}/next"),
            get("/v1/tours/{tour}/next?from={placeA}"), get("/v1/tours/{tour}/next?from={secret}"),
            post("/v1/tours/{tour}/follow"), get("/v1/tours/{tour}/progress"), delete("/v1/tours/{tour}/follow"),
            post("/v1/tours/{hiddenTour}/follow"), put("/v1/tours/{myTour}/stops", ["stops": [["beacon": "{secret}"]]]),
            put("/v1/tours/{myTour}/stops", ["stops": [["beacon": "{placeA}"], ["beacon": "{cafe}"]]]),
            get("/v1/places/{placeA}/media"), post("/v1/places/{placeA}/media", ["kind": "image", "url": "https://example.org/p.jpg"]),
            delete("/v1/places/{placeA}/media/med_nothing"), get("/v1/places/{secret}/media"),
            // Promotions.
            post("/v1/promotions", ["name": "mine", "location": Walk.latLon(spot), "perimeter": circle(100), "category": "food",
                                    "related": ["{secret}"]]),
            post("/v1/promotions", ["name": "mine", "location": Walk.latLon(spot), "perimeter": circle(100), "category": "drinks"],
                 save: ["myPromo": id]),
            get("/v1/promotions/nearby?\(here)"), get("/v1/promotions/pick?\(here)"), get("/v1/promotions/{promo}"),
            get("/v1/promotions/{hiddenPromo}"), post("/v1/promotions/{promo}/interactions", ["type": "saved"]),
            post("/v1/promotions/{hiddenPromo}/interactions", ["type": "saved"]), get("/v1/promotions/{myPromo}/feedback"),
            get("/v1/promotions/{hiddenPromo}/feedback"), get("/v1/me/interests/suggested"), get("/v1/me/saved"),
            delete("/v1/me/saved/{hiddenPromo}"), delete("/v1/me/saved/{promo}"), get("/v1/promotions/{myPromo}/stats"),
            get("/v1/promotions/{hiddenPromo}/stats"),
            // The registry and sightings: the hidden world's entries hold these identities.
            post("/v1/registry", ["type": "ibeacon", "uuid": "{uuid}", "major": 2, "minor": 2, "beacon": "{mine}"], save: ["entry": id]),
            post("/v1/registry", ["type": "ibeacon", "uuid": "{uuid}", "major": 3, "minor": 3, "beacon": "{secret}"]),
            get("/v1/registry"), get("/v1/registry?beacon={secret}"),
            get("/v1/registry/resolve?uuid={uuid}&major=1&minor=1"), get("/v1/registry/resolve?uuid={uuid}&major=2&minor=2"),
            get("/v1/registry/resolve?uuid={uuid}&major=5&minor=5"), get("/v1/registry/{hiddenEntry}"), get("/v1/registry/{entry}"),
            patch("/v1/registry/{entry}", ["major": 1, "minor": 9]), patch("/v1/registry/{hiddenEntry}", ["status": "inactive"]),
            post("/v1/sightings", ["batch_id": "scan-1", "sightings": [["uuid": "{uuid}", "major": 1, "minor": 1, "rssi": -60],
                                                                       ["uuid": "{uuid}", "major": 4, "minor": 4, "rssi": -70],
                                                                       ["uuid": "{uuid}", "major": 1, "minor": 9, "rssi": -70]]]),
            post("/v1/sightings", ["batch_id": "scan-1", "sightings": [["uuid": "{uuid}", "major": 1, "minor": 1, "rssi": -60],
                                                                       ["uuid": "{uuid}", "major": 4, "minor": 4, "rssi": -70],
                                                                       ["uuid": "{uuid}", "major": 1, "minor": 9, "rssi": -70]]]),
            delete("/v1/registry/{hiddenEntry}"), delete("/v1/registry/{entry}"),
            // What reached the stranger, last.
            delete("/v1/beacons/{mine}"), get("/v1/events?limit=500"), get("/v1/events?limit=2"), get("/v1/events/stream?limit=500"),
            // Accounts: the admin's operations (403 for anyone else, whatever the id), the caller's
            // export, then a new token and the erasure of the caller's account.
            get("/v1/users"), get("/v1/users?name_prefix=o&limit=2"), get("/v1/users/{someone}"),
            patch("/v1/users/{someone}", ["disabled": true]), post("/v1/users/{someone}/token"),
            get("/v1/users/{someone}/export"), delete("/v1/users/{someone}"), get("/v1/me/export"),
            delete("/v1/me"), delete("/v1/me?confirm=usr_nobody"),
            post("/v1/me/token", save: ["newToken": { $0["token"]?.stringValue }]), get("/v1/me"),
            Step(method: .get, path: "/v1/me", tokenVar: "newToken"), Step(method: .get, path: "/v1/me/export", tokenVar: "newToken"),
            Step(method: .delete, path: "/v1/me?confirm={me}", tokenVar: "newToken"),
            Step(method: .get, path: "/v1/me", tokenVar: "newToken"),
        ]
    }

    // MARK: The document

    static func documentedOperations() throws -> [String: String] { try OpenAPIOperations.all() }

    /// The operationId whose path template matches the concrete call `METHOD /path?query`.
    static func operation(of call: String, in operations: [String: String]) -> String? {
        let call = call.hasPrefix("[") ? String(call.drop { $0 != " " }.dropFirst()) : call
        let parts = call.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let segments = parts[1].split(separator: "?")[0].split(separator: "/", omittingEmptySubsequences: false)
        var best: (score: Int, id: String)?
        for (key, id) in operations {
            let kp = key.split(separator: " ", maxSplits: 1)
            guard kp[0] == parts[0] else { continue }
            let template = kp[1].split(separator: "/", omittingEmptySubsequences: false)
            guard template.count == segments.count else { continue }
            var score = 0, matches = true
            for (t, s) in zip(template, segments) {
                if t.hasPrefix("{") { continue }
                if t != s { matches = false; break }
                score += 1
            }
            if matches, score > (best?.score ?? -1) { best = (score, id) }
        }
        return best?.id
    }
}
