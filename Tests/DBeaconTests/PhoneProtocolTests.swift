import DBeaconCore
import DBeaconServices
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The phone apps' own protocols (issue 30), driven with messages written from their published
/// descriptions: the OwnTracks booklet (`tech/json`, `tech/http`) and Traccar's OsmAnd protocol
/// page and client, iOS and Android variants. On both stores.
@Suite(.bounded) struct PhoneProtocolTests {
    static func basic(_ user: String, _ token: String) -> HTTPFields {
        [.authorization: "Basic " + Data("\(user):\(token)".utf8).base64EncodedString()]
    }

    /// `tst` of the harness clock, `seconds` from now.
    static func tst(_ h: TestHarness, _ seconds: Double = 0) -> Int { Int(h.clock.now().millis / 1000) + Int(seconds) }

    @Test(arguments: Backend.all) func devicesAreIssuedListedAndRevoked(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        let (_, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/me/devices", token: ann, json: ["name": "Ann's iPhone"])
            #expect(created.status == .created, "\(created.text)")
            let token = try #require(created.json?["token"]?.stringValue)
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(token.hasPrefix("dbd_") && id.hasPrefix("dev_") && created.headers[.location] == "/v1/me/devices/\(id)")
            // The device token is the user, everywhere but device management.
            #expect(try await client.call(.get, "/v1/me", token: token).json?["id"] == (try await client.call(.get, "/v1/me", token: ann).json?["id"]))
            #expect(try await client.call(.post, "/v1/me/devices", token: token, json: ["name": "another"]).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/me/devices/\(id)", token: token).status == .forbidden)
            let listed = try await client.call(.get, "/v1/me/devices", token: ann)
            let device = try #require(listed.json?["devices"]?.arrayValue?.first)
            #expect(device["id"] == .string(id) && device["active"] == true && device["token"] == nil)
            #expect(device["last_seen_at"]?.stringValue != nil, "seen when it authenticated")
            // Someone else's device is not theirs to see or revoke.
            #expect(try await client.call(.get, "/v1/me/devices", token: bob).json?["devices"]?.arrayValue?.isEmpty == true)
            #expect(try await client.call(.delete, "/v1/me/devices/\(id)", token: bob).status == .notFound)
            #expect(try await client.call(.delete, "/v1/me/devices/dev_nothing", token: ann).status == .notFound)
            // Revoked: the token stops at once; the user's own token is untouched.
            #expect(try await client.call(.delete, "/v1/me/devices/\(id)", token: ann).status == .noContent)
            #expect(try await client.call(.get, "/v1/me", token: token).status == .unauthorized)
            #expect(try await client.call(.get, "/v1/me", token: ann).status == .ok)
            #expect(try await client.call(.get, "/v1/me/devices", token: ann).json?["devices"]?.arrayValue?.first?["active"] == false)
            // Bad input: a clear error naming the field.
            let bad = try await client.call(.post, "/v1/me/devices", token: ann, json: ["name": ""])
            #expect(bad.status == .unprocessableContent && bad.json?["error"]?["path"] == "name", "\(bad.text)")
            #expect(try await client.call(.post, "/v1/me/devices", token: ann, json: ["name": "x", "colour": "red"]).status.code / 100 == 4)
            #expect(try await client.call(.post, "/v1/me/devices", token: TestHarness.adminToken, json: ["name": "x"]).status == .forbidden)
            // At most 20 active devices.
            for i in 0..<20 { #expect(try await client.call(.post, "/v1/me/devices", token: ann, json: ["name": .string("d\(i)")]).status == .created) }
            let over = try await client.call(.post, "/v1/me/devices", token: ann, json: ["name": "one too many"])
            #expect(over.status == .conflict && over.json?["error"]?["code"] == "too_many_devices", "\(over.text)")
        }
    }

    @Test(arguments: Backend.all) func ownTracksInHTTPMode(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (annID, ann) = try await h.user("ann")
        _ = owner
        try await h.app().test(.router) { client in
            let market = try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(name: "Markthalle", perimeter: circle(60)))
            let marketID = try #require(market.json?["id"]?.stringValue)
            #expect(try await client.call(.post, "/v1/beacons/\(marketID)/followers", token: ann).status.code < 300)
            let device = try await client.call(.post, "/v1/me/devices", token: ann, json: ["name": "iPhone"])
            let deviceToken = try #require(device.json?["token"]?.stringValue)
            let auth = Self.basic("ann", deviceToken)

            // An empty body (the app's connectivity check) and messages the service leaves alone.
            let empty = try await client.call(.post, "/v1/owntracks", raw: "", headers: auth)
            #expect(empty.status == .ok && empty.json == .array([]), "\(empty.text)")
            for ignored: JSONValue in [["_type": "lwt", "tst": .int(Self.tst(h))], ["_type": "status", "android": ["wifi": 1]],
                                       ["_type": "card", "name": "Ann", "tid": "AN"], ["_type": "steps", "steps": 10],
                                       ["_type": "waypoint", "desc": "home", "lat": 48.7, "lon": 9.1, "rad": 50, "tst": 1_700_000_000]] {
                let r = try await client.call(.post, "/v1/owntracks", json: ignored, headers: auth)
                #expect(r.status == .ok && r.json == .array([]), "\(ignored): \(r.text)")
            }

            // An Android location inside the Markthalle (booklet example fields): entered, and the
            // regions to monitor come back as clearWaypoints + setWaypoints.
            let android: JSONValue = ["_type": "location", "acc": 12, "alt": 250, "batt": 80, "bs": 1, "conn": "m", "lat": 48.7784,
                                      "lon": 9.18, "t": "u", "tid": "an", "tst": .int(Self.tst(h)), "vac": 3, "vel": 0,
                                      "topic": "owntracks/ann/pixel", "created_at": .int(Self.tst(h)), "m": 1]
            let first = try await client.call(.post, "/v1/owntracks", json: android, headers: auth)
            #expect(first.status == .ok, "\(first.text)")
            let messages = first.json?.arrayValue ?? []
            #expect(messages.first?["action"] == "clearWaypoints")
            let set = try #require(messages.first { $0["action"] == "setWaypoints" })
            #expect(set["waypoints"]?["_type"] == "waypoints")
            let waypoints = set["waypoints"]?["waypoints"]?.arrayValue ?? []
            let market0 = try #require(waypoints.first { $0["rid"] == .string(marketID) })
            #expect(market0["_type"] == "waypoint" && market0["desc"] == "Markthalle" && market0["rad"] == 60 && market0["tst"]?.numberValue != nil)
            // Leaving the refresh circle means "post again".
            #expect((waypoints.first { $0["rid"] == "refresh" }?["rad"]?.numberValue ?? 0) > 1_000, "\(waypoints)")
            #expect(try await h.events(annID).map(\.type).contains(.entered))

            // The same place again: the phone's regions still hold, nothing to send.
            let again = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7784, "lon": 9.1801,
                                                                               "tst": .int(Self.tst(h, 1)), "tid": "an"], headers: auth)
            #expect(again.status == .ok && again.json == .array([]), "\(again.text)")

            // Region-monitoring mode: an iOS transition naming the waypoint by its `wtst` alone
            // (Android sends no rid): exited, as the native API would report it.
            h.clock.advance(seconds: 30)
            let leave: JSONValue = ["_type": "transition", "event": "leave", "desc": "Markthalle", "wtst": market0["tst"]!,
                                    "lat": 48.7800, "lon": 9.1800, "acc": 10, "t": "c", "tid": "an", "tst": .int(Self.tst(h))]
            let left = try await client.call(.post, "/v1/owntracks", json: leave, headers: auth)
            #expect(left.status == .ok, "\(left.text)")
            #expect(try await h.events(annID).map(\.type).suffix(1) == [.exited])
            // Entering again by `rid` (iOS).
            h.clock.advance(seconds: 30)
            let enter: JSONValue = ["_type": "transition", "event": "enter", "rid": .string(marketID), "desc": "Markthalle",
                                    "wtst": market0["tst"]!, "lat": 48.7784, "lon": 9.18, "tst": .int(Self.tst(h)), "tid": "an"]
            #expect(try await client.call(.post, "/v1/owntracks", json: enter, headers: auth).status == .ok)
            #expect(try await h.events(annID).map(\.type).suffix(1) == [.entered])
            // A transition of the user's own waypoint (not DBeacon's) is left alone.
            let own = try await client.call(.post, "/v1/owntracks", json: ["_type": "transition", "event": "enter", "desc": "home",
                                                                             "wtst": 1_600_000_000, "tst": .int(Self.tst(h))], headers: auth)
            #expect(own.status == .ok)

            // Queued fixes older than the fence engine takes are accepted and left alone.
            let old = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7, "lon": 9.1,
                                                                             "tst": .int(Self.tst(h, -86_400))], headers: auth)
            #expect(old.status == .ok)

            // The user's own token works too, with the user id as the name; anything else is 401.
            #expect(try await client.call(.post, "/v1/owntracks", raw: "", headers: Self.basic(annID.rawValue, ann)).status == .ok)
            #expect(try await client.call(.post, "/v1/owntracks", raw: "", headers: Self.basic("bob", deviceToken)).status == .unauthorized)
            #expect(try await client.call(.post, "/v1/owntracks", raw: "", headers: Self.basic("ann", "dbd_wrong")).status == .unauthorized)
            #expect(try await client.call(.post, "/v1/owntracks", raw: "").status == .unauthorized)

            // Bad input: a 4xx naming the field, never a crash.
            for (body, path) in [(#"{"_type":"location","lat":91,"lon":9.18}"#, "lat"), (#"{"_type":"location","lon":9.18}"#, "lat"),
                                 (#"{"lat":1}"#, "_type"), (#"{"_type":"transition","event":"stay"}"#, "event"),
                                 (#"{"_type":"location","lat":48.7,"lon":9.1,"tst":"yesterday"}"#, "tst"),
                                 (#"{"_type":"beacon","uuid":"nope","major":1,"minor":2,"rssi":-60}"#, "uuid")] {
                let r = try await client.call(.post, "/v1/owntracks", raw: body, headers: auth)
                #expect(r.status.code / 100 == 4 && r.json?["error"]?["path"] == .string(path), "\(body): \(r.text)")
            }
            #expect(try await client.call(.post, "/v1/owntracks", raw: "{not json", headers: auth).status == .badRequest)

            // The phone's state is kept as last written (on SpatiaLite a post reads it from
            // there); revoking the device drops it with the account change, and the device's
            // posts are refused (all of the user's states go: another client reads its own again).
            #expect(h.services.phoneStates.count == 2, "the device's, and the user token's (another client)")
            let deviceID = try #require(device.json?["id"]?.stringValue)
            #expect(try await client.call(.delete, "/v1/me/devices/\(deviceID)", token: ann).status == .noContent)
            #expect(h.services.phoneStates.count == 0, "a revoked device's state stayed in memory")
            #expect(try await client.call(.post, "/v1/owntracks", json: android, headers: auth).status == .unauthorized)
        }
    }

    /// A phone inside its refresh circle keeps its regions without their being searched again
    /// (issue 46), but never past a change that concerns it: a beacon made near it, a beacon it
    /// monitors edited or made invisible to it, and (what no change announces) a lifetime that
    /// began near it, within `PhoneService.regionsMaxAgeSeconds`.
    @Test(arguments: Backend.all) func ownTracksRegionsFollowChangesNearThePhone(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ownerToken) = try await h.user("owner")
        let (_, ann) = try await h.user("ann")
        let auth = Self.basic("ann", ann)
        try await h.app().test(.router) { client in
            let market = try #require(try await client.call(.post, "/v1/beacons", token: ownerToken,
                                                            json: feature(name: "Markthalle", perimeter: circle(60))).json?["id"]?.stringValue)
            var step = 0
            /// A fix at the Markthalle (a few centimetres apart each time): the region ids of the
            /// waypoints the phone is sent, nil when it is sent none.
            func post() async throws -> Set<String>? {
                step += 1
                let r = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": 48.7784,
                                                                               "lon": .number(9.18 + Double(step) * 1e-6),
                                                                               "tst": .int(Self.tst(h))], headers: auth)
                #expect(r.status == .ok, "\(r.text)")
                guard let set = r.json?.arrayValue?.first(where: { $0["action"] == "setWaypoints" }) else { return nil }
                return Set((set["waypoints"]?["waypoints"]?.arrayValue ?? []).compactMap { $0["rid"]?.stringValue })
            }
            #expect(try await post()?.contains(market) == true)
            #expect(try await post() == nil, "nothing changed: the regions hold")

            // A beacon made 300 m away: the next post brings it.
            let near = Walk.offset(Walk.schlossplatz, east: 300)
            let kiosk = try #require(try await client.call(.post, "/v1/beacons", token: ownerToken,
                                                           json: feature(name: "Kiosk", lat: near.lat, lon: near.lon, perimeter: circle(40)))
                .json?["id"]?.stringValue)
            #expect(try await post()?.contains(kiosk) == true, "a beacon made near the phone")
            #expect(try await post() == nil)

            // The kiosk moved 40 km away (beyond the search): the phone stops monitoring it.
            let far = Walk.offset(Walk.schlossplatz, east: 40_000)
            #expect(try await client.call(.patch, "/v1/beacons/\(kiosk)", token: ownerToken,
                                          json: ["geometry": ["type": "Point", "coordinates": [.number(far.lon), .number(far.lat)]]]).status == .ok)
            let afterMove = try await post()
            #expect(afterMove != nil && afterMove?.contains(kiosk) == false, "a monitored beacon moved away: \(String(describing: afterMove))")

            // The Markthalle made private to someone else: gone from Ann's regions.
            #expect(try await client.call(.patch, "/v1/beacons/\(market)", token: ownerToken,
                                          json: ["properties": ["visibility": ["members": []]]]).status == .ok)
            let afterHiding = try await post()
            #expect(afterHiding != nil && afterHiding?.contains(market) == false, "a monitored beacon hidden from her")

            // A beacon whose lifetime begins in 30 s: no change announces its start; within a
            // minute of it the phone is given it.
            let start = h.clock.now().adding(seconds: 30)
            let later = try #require(try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(
                name: "Evening market", perimeter: circle(50), lifetime: (start.rfc3339, nil))).json?["id"]?.stringValue)
            let beforeStart = try await post()
            #expect(beforeStart?.contains(later) != true)
            h.clock.advance(seconds: 31)
            #expect(try await post()?.contains(later) != true, "kept: nothing announced it yet")
            h.clock.advance(seconds: PhoneService.regionsMaxAgeSeconds)
            #expect(try await post()?.contains(later) == true, "searched again after regionsMaxAgeSeconds")
        }
    }

    /// Where more beacons cover the phone than it has slots (a city centre), it is given the
    /// first 19 covering beacons by id and no refresh circle, as a search there gives them
    /// (`GET /v1/regions`). Its next posts keep them without a search while it is inside most of
    /// them, all unchanged and visible, with more around it (issue 46), though a search would now
    /// rank another covering beacon among the first, and after it walked out of some; and bring
    /// the search's regions when that no longer holds: a monitored beacon hidden from the user
    /// or edited, the phone walking out of most of them.
    @Test(arguments: Backend.all) func ownTracksInACrowdKeepsItsRegionsWhileTheCrowdIsTheSame(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ownerToken) = try await h.user("owner")
        let (_, ann) = try await h.user("ann")
        let auth = Self.basic("ann", ann)
        try await h.app().test(.router) { client in
            // 60 circles of 152 m, their centres 5 m apart going east from the Schlossplatz: 31 of
            // them cover the start, and more than 19 every point up to 350 m east.
            var centres: [String: Double] = [:]
            for k in 0..<60 {
                let c = Walk.offset(Walk.schlossplatz, east: Double(k) * 5)
                let id = try #require(try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(
                    name: "stall \(k)", lat: c.lat, lon: c.lon, perimeter: circle(152))).json?["id"]?.stringValue)
                centres[id] = Double(k) * 5
            }
            var hidden: Set<String> = []
            var radius: [String: Double] = [:]
            /// The first 19 by id of the beacons covering the point `x` metres east (each point
            /// used is half a metre or more inside or outside every circle).
            func expected(_ x: Double) -> [String] { Array(covering(x).prefix(19)) }
            /// The beacons Ann may see covering the point `x` metres east, by id.
            func covering(_ x: Double) -> [String] {
                centres.filter { abs($0.value - x) < radius[$0.key, default: 152] && !hidden.contains($0.key) }.keys
                    .sorted { BeaconID(uncheckedRawValue: $0) < BeaconID(uncheckedRawValue: $1) }
            }
            /// A fix `x` metres east: the region ids of the waypoints sent, nil when none are.
            func post(_ x: Double) async throws -> [String]? {
                let p = Walk.offset(Walk.schlossplatz, east: x)
                let r = try await client.call(.post, "/v1/owntracks", json: ["_type": "location", "lat": .number(p.lat), "lon": .number(p.lon),
                                                                             "tst": .int(Self.tst(h))], headers: auth)
                #expect(r.status == .ok, "\(r.text)")
                guard let set = r.json?.arrayValue?.first(where: { $0["action"] == "setWaypoints" }) else { return nil }
                return (set["waypoints"]?["waypoints"]?.arrayValue ?? []).compactMap { $0["rid"]?.stringValue }
            }
            /// What `GET /v1/regions` gives at `x`: its circles' beacons, and whether it is complete.
            func search(_ x: Double) async throws -> (ids: [String], complete: Bool?) {
                let p = Walk.offset(Walk.schlossplatz, east: x)
                let r = try await client.call(.get, "/v1/regions?lat=\(p.lat)&lon=\(p.lon)&max=20", token: ann)
                let regions = r.json?["regions"]?.arrayValue ?? []
                #expect(regions.last?["kind"] == "refresh" && regions.last?["radius_m"] == 0, "\(r.text)")
                #expect(regions.dropLast().allSatisfy { $0["distance_m"] == 0 }, "\(r.text)")
                return (regions.filter { $0["kind"] == "circle" }.compactMap { $0["beacon"]?.stringValue }, r.json?["complete"]?.boolValue)
            }

            func show(_ id: String, _ visible: Bool) async throws {
                let visibility: JSONValue = visible ? .null : ["members": []]
                #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: ownerToken,
                                              json: ["properties": ["visibility": visibility]]).status == .ok)
                if visible { hidden.remove(id) } else { hidden.insert(id) }
            }

            // One of the first by id hidden from Ann before her first post.
            let late = try #require(expected(0).dropFirst(4).first)
            try await show(late, false)
            let first = try await post(0)
            #expect(first == expected(0) && first?.contains(late) == false, "the first 19 by id of the 30 covering it she may see, no refresh circle")
            #expect(try await post(0.5) == nil, "the same crowd: kept")
            #expect(try await search(0.5) == (expected(0.5), false), "a search there gives what the phone keeps")

            // Shown to her again: a search ranks it among the first 19, but the phone is inside
            // every region it monitors, all unchanged: kept.
            try await show(late, true)
            let shifted = try await search(0.75)
            #expect(shifted.ids == expected(0.75) && shifted.ids.contains(late) && shifted.complete == false)
            #expect(try await post(0.75) == nil, "the crowd shifted around a phone inside all its regions: kept")

            // A monitored beacon hidden from Ann: the next one by id takes its slot.
            let gone = try #require(first?.first)
            #expect(try await client.call(.patch, "/v1/beacons/\(gone)", token: ownerToken,
                                          json: ["properties": ["visibility": ["members": []]]]).status == .ok)
            hidden.insert(gone)
            let afterHiding = try await post(1)
            #expect(afterHiding == expected(1) && afterHiding?.contains(gone) == false, "\(String(describing: afterHiding))")
            #expect(try await post(1.5) == nil)

            // A monitored beacon widened (still covering, a new version): its new circle is sent.
            let widened = try #require(afterHiding?.last)
            #expect(try await client.call(.patch, "/v1/beacons/\(widened)", token: ownerToken,
                                          json: ["properties": ["perimeter": circle(157)]]).status == .ok)
            radius[widened] = 157
            #expect(try await post(2) == expected(2), "a monitored beacon edited")
            #expect(try await post(2.5) == nil)

            // Walking east out of the regions it monitors, one after another (their east edges,
            // half a metre on): kept while it is inside ten of the nineteen or more, worked out
            // again once it is inside nine (all within 310 m of the start: still a crowd).
            let monitored = try #require(expected(2) as [String]?)
            func inside(_ x: Double) -> Int { monitored.filter { abs(centres[$0]! - x) < radius[$0, default: 152] }.count }
            let edges = Set(monitored.map { centres[$0]! + radius[$0, default: 152] + 0.5 }).sorted()
            let out = try #require(edges.first { inside($0) <= 9 })
            let kept = edges.filter { $0 < out }
            #expect(kept.count >= 2 && inside(kept[0]) < 19 && kept.allSatisfy { inside($0) >= 10 && covering($0).count > 19 })
            for x in kept {
                #expect(try await post(x) == nil, "out of \(19 - inside(x)) of its regions, inside \(inside(x)): kept")
            }
            #expect(covering(out).count > 19)
            #expect(try await post(out) == expected(out), "out of most of its regions: worked out again")
            #expect(try await post(out + 0.5) == nil)
            #expect(try await search(out + 0.5) == (expected(out + 0.5), false))
        }
    }

    /// A phone whose regions hold is not written after each post, so its stored event position
    /// stays behind; the state kept in the process reads on past events that held no alert
    /// (`PhoneStateCache.advance`), forward only, the stored text left as it is.
    @Test func aKeptPhoneStateReadsOnPastEventsWithoutAnAlert() {
        let cache = PhoneStateCache()
        let ann = UserID(uncheckedRawValue: "usr_ann")
        var state = PhoneState.initial
        state.events = 5
        let text = state.encoded()
        cache.keep(text, state, user: ann, client: "phone")
        cache.advance(user: ann, client: "phone", events: 9)
        #expect(cache.latest(user: ann, client: "phone")?.events == 9)
        #expect(cache.state(text, user: ann, client: "phone")?.events == 9, "the text it was decoded from still finds it")
        cache.advance(user: ann, client: "phone", events: 7)
        #expect(cache.latest(user: ann, client: "phone")?.events == 9, "never back")
        var newer = state
        newer.events = 12
        cache.keep(newer.encoded(), newer, user: ann, client: "phone")
        cache.advance(user: ann, client: "phone", events: 10)
        #expect(cache.latest(user: ann, client: "phone")?.events == 12, "a state written meanwhile stays ahead")
        cache.advance(user: ann, client: "tablet", events: 10)
        #expect(cache.latest(user: ann, client: "tablet") == nil && cache.count == 1, "no state kept: nothing to move")
    }

    @Test(arguments: Backend.all) func ownTracksShowsGroupMembersAsFriendsOnly(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (annID, ann) = try await h.user("ann")
        let (bobID, bob) = try await h.user("bob")
        let (_, eve) = try await h.user("eve")
        try await h.app().test(.router) { client in
            // A kiosk Ann follows where she stands: her own entries and exits are events too.
            let kiosk = try #require(try await client.call(.post, "/v1/beacons", token: bob, json: feature(name: "Kiosk", perimeter: circle(30)))
                .json?["id"]?.stringValue)
            #expect(try await client.call(.post, "/v1/beacons/\(kiosk)/followers", token: ann).status.code < 300)
            let group = try await client.call(.post, "/v1/groups", token: ann, json: ["name": "Trip", "range_m": 200])
            let id = try #require(group.json?["id"]?.stringValue)
            #expect(try await client.call(.post, "/v1/groups/\(id)/join", token: bob).status == .ok)
            h.clock.advance(seconds: 5)
            _ = try await client.call(.post, "/v1/me/location", token: bob, json: ["lat": 48.779, "lon": 9.181])
            h.clock.advance(seconds: 5)
            let here: JSONValue = ["_type": "location", "lat": 48.7784, "lon": 9.18, "tst": .int(Self.tst(h)), "tid": "an"]
            let answer = try await client.call(.post, "/v1/owntracks", json: here, headers: Self.basic("ann", ann))
            let messages = answer.json?.arrayValue ?? []
            let card = try #require(messages.first { $0["_type"] == "card" })
            let location = try #require(messages.first { $0["_type"] == "location" })
            #expect(card["name"] == "bob" && card["tid"] == location["tid"] && card["tid"]?.stringValue?.count == 2)
            #expect(location["lat"] == 48.779 && location["lon"] == 9.181 && location["topic"] == .string("owntracks/\(bobID.rawValue)/dbeacon"))
            #expect(!messages.contains { $0["_type"] == "transition" }, "a first post replays no history")

            // Ann walks out of the kiosk (inside her refresh circle): her exit is an event but no
            // alert, so her phone's stored state is not written for it (issue 46); the alerts
            // below still reach her past it.
            let stored = try await h.store.phoneState(user: annID, client: "token:phone")
            h.clock.advance(seconds: 5)
            let outside: JSONValue = ["_type": "location", "lat": 48.7784, "lon": 9.181, "tst": .int(Self.tst(h)), "tid": "an"]
            #expect(try await client.call(.post, "/v1/owntracks", json: outside, headers: Self.basic("ann", ann)).status == .ok)
            #expect(try await h.events(annID).map(\.type).contains(.exited))
            #expect(try await h.store.phoneState(user: annID, client: "token:phone") == stored && stored != nil)
            // Eve is in no group with them: no friends.
            let eves = try await client.call(.post, "/v1/owntracks", json: here, headers: Self.basic("eve", eve))
            #expect(eves.json?.arrayValue?.contains { $0["_type"] == "location" || $0["_type"] == "card" } == false, "\(eves.text)")

            // Bob walks 500 m away (range 200 m): ann's next post tells her as bob's transition
            // (leave "Trip"), with bob's tid and position; once only.
            h.clock.advance(seconds: 5)
            _ = try await client.call(.post, "/v1/me/location", token: bob, json: ["lat": 48.7829, "lon": 9.18])
            h.clock.advance(seconds: 5)
            let later: JSONValue = ["_type": "location", "lat": 48.7784, "lon": 9.18, "tst": .int(Self.tst(h)), "tid": "an"]
            let next = try await client.call(.post, "/v1/owntracks", json: later, headers: Self.basic("ann", ann)).json?.arrayValue ?? []
            let alert = try #require(next.first { $0["_type"] == "transition" }, "\(next)")
            #expect(alert["event"] == "leave" && alert["desc"] == "Trip" && alert["t"] == "c")
            #expect(alert["tid"] == next.first { $0["_type"] == "card" }?["tid"] && alert["lat"] == 48.7829)
            #expect(alert["tst"] == .int(Self.tst(h, -5)) && alert["rid"] == .string(id))
            h.clock.advance(seconds: 5)
            let again = try await client.call(.post, "/v1/owntracks", json: later, headers: Self.basic("ann", ann)).json?.arrayValue ?? []
            #expect(!again.contains { $0["_type"] == "transition" }, "each alert once")
            let evesLater = try await client.call(.post, "/v1/owntracks", json: later, headers: Self.basic("eve", eve)).json?.arrayValue ?? []
            #expect(!evesLater.contains { $0["_type"] == "transition" })

            // Bob leaves the group: ann's next post says so as his `leave`, with the tid he had, at
            // the group's place (his own position is no longer shared), and no card of him.
            let bobsTid = next.first { $0["_type"] == "card" }?["tid"]
            #expect(try await client.call(.post, "/v1/groups/\(id)/leave", token: bob).status.code < 300)
            h.clock.advance(seconds: 5)
            let afterLeave = try await client.call(.post, "/v1/owntracks", json: later, headers: Self.basic("ann", ann)).json?.arrayValue ?? []
            let left = try #require(afterLeave.first { $0["_type"] == "transition" }, "\(afterLeave)")
            #expect(left["event"] == "leave" && left["desc"] == "Trip" && left["tid"] == bobsTid && left["rid"] == .string(id))
            #expect(left["lat"] != 48.7829, "bob's position after leaving is not shown")
            #expect(!afterLeave.contains { $0["_type"] == "card" || $0["_type"] == "location" })
        }
    }

    @Test(arguments: Backend.all) func traccarClientAndOsmAnd(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (annID, ann) = try await h.user("ann")
        _ = owner
        try await h.app().test(.router) { client in
            _ = try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(name: "Markthalle", perimeter: circle(60)))
            let token = try #require(try await client.call(.post, "/v1/me/devices", token: ann, json: ["name": "Pixel"]).json?["token"]?.stringValue)
            func types() async throws -> [EventType] { try await h.events(annID).map(\.type) }

            // Legacy Android: a POST with everything in the query string and an empty body (seconds).
            let legacy = try await client.call(.post, "/v1/osmand?id=\(token)&timestamp=\(Self.tst(h))&lat=48.7784&lon=9.18&speed=0.0&bearing=0.0&altitude=250.0&accuracy=8.0&batt=80.0")
            #expect(legacy.status == .ok && legacy.text.isEmpty, "\(legacy.text)")
            #expect(try await types().suffix(1) == [.entered])
            // Traccar Client 10: a form POST, out of the beacon (milliseconds this time).
            h.clock.advance(seconds: 30)
            let form = "id=\(token)&lat=48.7900&lon=9.1800&timestamp=\(h.clock.now().millis)&accuracy=5&speed=1.94&bearing=90&batt=77&charge=false"
            let r = try await client.call(.post, "/v1/osmand", raw: form, headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(r.status == .ok, "\(r.text)")
            #expect(try await types().suffix(1) == [.exited])
            // Traccar Client 9: its JSON body, back inside (ISO 8601 with milliseconds).
            h.clock.advance(seconds: 30)
            let json: JSONValue = ["device_id": .string(token), "location": [
                "timestamp": .string(h.clock.now().rfc3339), "coords": ["latitude": 48.7784, "longitude": 9.18, "accuracy": 6, "speed": -1,
                                                                        "heading": -1, "altitude": 250], "is_moving": true,
                "odometer": 0, "event": "motionchange", "battery": ["level": 0.8, "is_charging": false], "activity": ["type": "walking"]]]
            #expect(try await client.call(.post, "/v1/osmand", json: json).status == .ok)
            #expect(try await types().suffix(1) == [.entered])
            // OsmAnd's GET, `yyyy-MM-dd HH:mm:ss` and `location=lat,lon`.
            h.clock.advance(seconds: 30)
            let stamp = String(h.clock.now().rfc3339.prefix(19)).replacingOccurrences(of: "T", with: "%20")
            #expect(try await client.call(.get, "/v1/osmand?deviceid=\(token)&location=48.7900,9.18&timestamp=\(stamp)").status == .ok)
            #expect(try await types().suffix(1) == [.exited])
            // A heartbeat without a fix, and a fix too old to act on: accepted, nothing happens.
            #expect(try await client.call(.post, "/v1/osmand?id=\(token)&batt=70").status == .ok)
            #expect(try await client.call(.post, "/v1/osmand?id=\(token)&lat=48.7784&lon=9.18&timestamp=1000000000").status == .ok)
            #expect(try await types().suffix(1) == [.exited])

            // Only an active device token identifies a device: not a user's token, not a guess.
            for id in [ann, "dbd_guess", ""] {
                let refused = try await client.call(.get, "/v1/osmand?id=\(id)&lat=48.7784&lon=9.18")
                #expect(refused.status == .unauthorized && refused.json?["error"] != nil, "\(id): \(refused.text)")
            }
            // Bad input: a 4xx with a JSON error naming the field.
            for (query, path) in [("lat=91&lon=9", "lat"), ("lat=x&lon=9", "lat"), ("lat=48&lon=9&timestamp=soon", "timestamp"),
                                  ("lat=48&lon=9&accuracy=-x", "accuracy"), ("lat=x&lat=48&lon=9", "lat")] {
                let bad = try await client.call(.get, "/v1/osmand?id=\(token)&\(query)")
                #expect(bad.status.code / 100 == 4 && bad.json?["error"]?["path"] == .string(path), "\(query): \(bad.text)")
            }
            let badJSON = try await client.call(.post, "/v1/osmand", json: ["device_id": .string(token), "location": ["coords": ["latitude": 48]]])
            #expect(badJSON.status.code / 100 == 4 && badJSON.json?["error"]?["path"] == "location.coords.longitude", "\(badJSON.text)")
        }
    }
    /// Phones posting at once: each post's state is stored (their writes share transactions),
    /// and each phone's next post from where it stands keeps the regions it was given.
    @Test(arguments: Backend.all) func phonesPostingAtOnceEachKeepTheirState(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        var made: [(id: UserID, name: String, token: String)] = []
        for i in 0..<12 {
            let (id, token) = try await h.user("phone\(i)")
            made.append((id, "phone\(i)", token))
        }
        let users = made
        try await h.app().test(.router) { client in
            _ = try await client.call(.post, "/v1/beacons", token: users[0].token, json: feature(name: "Square", perimeter: circle(80)))
            func post(_ u: (id: UserID, name: String, token: String), _ k: Int) async throws -> [JSONValue] {
                let here: JSONValue = ["_type": "location", "lat": .number(48.7784 + Double(k) * 0.0001), "lon": 9.18,
                                       "tst": .int(Self.tst(h)), "tid": "ph"]
                let answer = try await client.call(.post, "/v1/owntracks", json: here, headers: Self.basic(u.name, u.token))
                #expect(answer.status == .ok, "\(answer.text)")
                return answer.json?.arrayValue ?? []
            }
            let first = try await withThrowingTaskGroup(of: (Int, [JSONValue]).self) { group in
                for (k, u) in users.enumerated() { group.addTask { (k, try await post(u, k)) } }
                var out: [Int: [JSONValue]] = [:]
                for try await (k, messages) in group { out[k] = messages }
                return out
            }
            for (k, u) in users.enumerated() {
                #expect(first[k]?.contains { $0["action"] == "setWaypoints" } == true, "a first post gets its regions")
                #expect(try await h.store.phoneState(user: u.id, client: "token:phone") != nil)
            }
            h.clock.advance(seconds: 5)
            for (k, u) in users.enumerated() {
                let again = try await post(u, k)
                #expect(!again.contains { $0["action"] == "setWaypoints" }, "the same place: the stored regions hold: \(again)")
            }
        }
    }
}
