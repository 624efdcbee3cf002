import DBeaconApp
import DBeaconCore
import DBeaconServices
import DBeaconGeo
import Foundation
import Testing

/// Regions to monitor on the phone (issue 14.1): the nearest visible, alive beacons as circles
/// (polygons as their smallest enclosing circle), their iBeacon entries, and a refresh circle;
/// at most `max`, stable for the same input.
@Suite(.bounded) struct RegionTests {
    @Test(arguments: Backend.all) func nearestRegionsThenARefreshCircle(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (other, _) = try await h.user("other")
        let (_, ann) = try await h.user("ann")
        let here = Walk.schlossplatz
        let north = Walk.offset(here, north: 200), east = Walk.offset(here, east: 500), near = Walk.offset(here, north: 100)
        let a = try await h.beacon(feature(name: "A", lat: here.lat, lon: here.lon, perimeter: circle(50), tags: ["food"]), owner: owner)
        let b = try await h.beacon(feature(name: "B", lat: north.lat, lon: north.lon, perimeter: circle(30)), owner: owner)
        // C: a 100 m × 60 m rectangle 500 m east; its smallest enclosing circle has the diagonal as diameter.
        let sw = Walk.offset(east, north: -30, east: -50), ne = Walk.offset(east, north: 30, east: 50)
        let c = try await h.beacon(feature(name: "C", lat: east.lat, lon: east.lon, perimeter: polygon([box(sw.lon, sw.lat, ne.lon, ne.lat)])),
                                   owner: owner)
        try await h.beacon(feature(name: "private", lat: near.lat, lon: near.lon, members: [other]), owner: owner)
        try await h.beacon(feature(name: "over", lat: near.lat, lon: near.lon, lifetime: (nil, "2026-11-21T11:00:00Z")), owner: owner)
        try await h.app().test(.router) { client in
            let entry = try await client.call(.post, "/v1/registry", token: ownerToken, json: registration(a, major: 100, minor: 7))
            #expect(entry.status == .created, "\(entry.text)")
            let url = "/v1/regions?lat=\(here.lat)&lon=\(here.lon)"
            let all = try await client.call(.get, url, token: ann)
            #expect(all.status == .ok, "\(all.text)")
            let regions = try #require(all.json?["regions"]?.arrayValue)
            #expect(regions.map { $0["type"]?.stringValue ?? "" } == ["circle", "ibeacon", "circle", "circle", "refresh"])
            #expect(regions.map { $0["kind"] } == regions.map { $0["type"] }, "kind, as CONTRACT.md names it")
            #expect(regions.compactMap { $0["beacon"]?.stringValue } == [a.id, a.id, b.id, c.id].map(\.rawValue))
            #expect(regions[0]["distance_m"] == 0 && regions[0]["approximate"] == false && regions[0]["radius_m"] == 50)
            #expect(regions[1]["uuid"] != nil && regions[1]["major"] == 100 && regions[1]["minor"] == 7)
            #expect(abs((regions[2]["distance_m"]?.numberValue ?? 0) - 170) < 1)
            // The polygon: approximate, centred on the rectangle, radius half its diagonal (checked
            // on the ellipsoid, + 5 cm).
            #expect(regions[3]["approximate"] == true)
            let radius = regions[3]["radius_m"]?.numberValue ?? 0
            #expect(abs(radius - ((100.0 * 100 + 60 * 60).squareRoot() / 2 + 0.5)) < 1, "\(radius)")
            let center = Position(lon: regions[3]["center"]?["lon"]?.numberValue ?? 0, lat: regions[3]["center"]?["lat"]?.numberValue ?? 0)
            #expect(Geodesy.distance(center, east) < 1)
            // Fewer than 20 beacons within every radius, so 30 km was searched; nothing left out:
            // the refresh circle is the searched radius (less the distances' error bound).
            #expect(regions[4]["radius_m"] == .number(RegionService.safe(30_000)) && regions[4]["id"] == "refresh")
            #expect(all.json?["complete"] == true)

            // max=3: the circles of A and B (circles first: they keep the promise; A's iBeacon
            // needs a slot that is not there), then a refresh circle just short of C's perimeter.
            let few = try await client.call(.get, url + "&max=3", token: ann).json?["regions"]?.arrayValue ?? []
            #expect(few.map { $0["type"]?.stringValue ?? "" } == ["circle", "circle", "refresh"])
            let toC = regions[3]["distance_m"]?.numberValue ?? 0
            let refresh = few.last?["radius_m"]?.numberValue ?? 0
            #expect(refresh < toC && refresh >= RegionService.safe(toC) - 0.2, "\(refresh) against \(toC)")
            // The same input gives the same answer; tags filter; bad max.
            #expect(try await client.call(.get, url, token: ann).json == all.json)
            let food = try await client.call(.get, url + "&tag=food", token: ann).json?["regions"]?.arrayValue ?? []
            #expect(food.compactMap { $0["beacon"]?.stringValue } == [a.id.rawValue, a.id.rawValue])
            #expect(try await client.call(.get, url + "&max=1", token: ann).errorPath == "max")
            #expect(try await client.call(.get, url + "&max=x", token: ann).status == .badRequest)
            #expect(try await client.call(.get, "/v1/regions?lat=95&lon=9", token: ann).errorPath == "lat")
        }
    }

    /// Polygons' circles are kept once measured (`EnclosingCircleCache`): a beacon deleted and
    /// made again under its id, at the same instant and place, gets the circle of its new
    /// perimeter, and a changed perimeter its own.
    @Test(arguments: Backend.all) func aPerimeterMadeAgainUnderItsIDGetsItsOwnCircle(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, token) = try await h.user("owner")
        let here = Walk.schlossplatz, east = Walk.offset(here, east: 500)
        @Sendable func rectangle(_ width: Double, _ height: Double) -> JSONValue {
            let sw = Walk.offset(east, north: -height / 2, east: -width / 2), ne = Walk.offset(east, north: height / 2, east: width / 2)
            return polygon([box(sw.lon, sw.lat, ne.lon, ne.lat)])
        }
        let id = BeaconID.namespace(of: owner) + "hall"
        try await h.app().test(.router) { client in
            func radius() async throws -> Double {
                let r = try await client.call(.get, "/v1/regions?lat=\(here.lat)&lon=\(here.lon)", token: token)
                return r.json?["regions"]?.arrayValue?.first { $0["beacon"]?.stringValue == id }?["radius_m"]?.numberValue ?? -1
            }
            func halfDiagonal(_ w: Double, _ h: Double) -> Double { (w * w + h * h).squareRoot() / 2 }
            let made = try await client.call(.post, "/v1/beacons", token: token,
                                             json: feature(name: "Hall", lat: east.lat, lon: east.lon, perimeter: rectangle(100, 60)).withID(id))
            #expect(made.status == .created, "\(made.text)")
            #expect(abs(try await radius() - halfDiagonal(100, 60)) < 1)
            #expect(abs(try await radius() - halfDiagonal(100, 60)) < 1, "from the cache")
            #expect(try await client.call(.delete, "/v1/beacons/\(id)", token: token).status == .noContent)
            let again = try await client.call(.post, "/v1/beacons", token: token,
                                              json: feature(name: "Hall", lat: east.lat, lon: east.lon, perimeter: rectangle(400, 200)).withID(id))
            #expect(again.status == .created && again.json?["properties"]?["version"] == 1, "\(again.text)")
            #expect(abs(try await radius() - halfDiagonal(400, 200)) < 1, "the new perimeter's circle")
            let moved = try await client.call(.patch, "/v1/beacons/\(id)", token: token,
                                              json: .object(["properties": .object(["perimeter": rectangle(40, 30)])]))
            #expect(moved.status == .ok, "\(moved.text)")
            #expect(abs(try await radius() - halfDiagonal(40, 30)) < 1, "the changed perimeter's circle")
        }
    }

    /// More beacons than slots cover the caller (the crowd: the first twenty by id, each at
    /// distance 0, no refresh circle), small and large polygons among them: each region is the
    /// circle made from the stored outlines around the stored location, whether the engine kept
    /// it (read without perimeters) or the perimeter was read; on both engines and stores.
    @Test(arguments: Backend.all, AppConfig.Engine.allCases)
    func aCrowdsCirclesAreTheirPerimetersCircles(_ backend: Backend, _ engine: AppConfig.Engine) async throws {
        let h = try await TestHarness.make(backend: backend, engine: engine)
        let (owner, _) = try await h.user("owner")
        let (_, ann) = try await h.user("ann")
        let here = Walk.schlossplatz
        var made: [BeaconID: Beacon] = [:]
        for i in 0..<26 {
            let c = Walk.offset(here, north: Double(i % 5) * 7 - 14, east: Double(i % 7) * 6 - 18)
            let vertices = i % 2 == 0 ? 300 + 10 * i : 6 + i  // large (compact in the index) and small
            let frame = LocalFrame(origin: c)
            var ring: Ring = (0..<vertices).map { k in
                let a = Double(k) / Double(vertices) * 2 * .pi, r = 120 + 40 * sin(3 * a) + Double(i)
                return frame.unproject(r * cos(a), r * sin(a))
            }
            ring.append(ring[0])
            let t = h.clock.now()
            let b = Beacon(id: .generate(), name: "crowd \(i)", owner: owner, location: Walk.offset(c, north: 20, east: 0),
                           perimeter: .polygon(Polygon(rings: [ring])), createdAt: t, updatedAt: t)
            try await h.store.insertBeacon(b)
            made[b.id] = b
        }
        let crowd = made
        try await h.app().test(.router) { client in
            for round in 0..<2 { // the second from the circles kept
                let r = try await client.call(.get, "/v1/regions?lat=\(here.lat)&lon=\(here.lon)&max=20", token: ann)
                let all = r.json?["regions"]?.arrayValue ?? []
                let regions = all.filter { $0["kind"] == "circle" }
                #expect(r.json?["complete"] == false && all.count == 20 && all.last?["radius_m"] == 0, "\(r.text)")
                let ids = regions.compactMap { $0["id"]?.stringValue }
                #expect(ids == Array(crowd.keys.map(\.rawValue).sorted().prefix(19)), "the first by id")
                for region in regions {
                    let id = try #require(BeaconID(region["id"]?.stringValue ?? ""))
                    let b = try #require(crowd[id])
                    let circle = EnclosingCircle.verified(b.perimeter.polygons.map(\.exterior), origin: b.location)
                    #expect(region["center"]?["lat"]?.numberValue == circle.center.lat && region["center"]?["lon"]?.numberValue == circle.center.lon,
                            "round \(round) \(b.name)")
                    #expect(region["radius_m"]?.numberValue == (circle.radiusM * 10).rounded(.up) / 10, "round \(round) \(b.name)")
                    #expect(region["distance_m"] == 0)
                }
            }
        }
    }

    /// The phone reports enters and exits of the monitored regions; they become the same
    /// `beacon.entered` / `beacon.exited` events as fixes would (reason `region`), once each,
    /// and no location is stored.
    @Test(arguments: Backend.all) func regionEventsGoThroughTheFenceMachinery(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (other, _) = try await h.user("other")
        let (annID, ann) = try await h.user("ann")
        let a = try await h.beacon(feature(name: "A", perimeter: circle(50)), owner: owner)
        let hidden = try await h.beacon(feature(name: "hidden", members: [other]), owner: owner)
        try await h.app().test(.router) { client in
            let entry = try await client.call(.post, "/v1/registry", token: ownerToken, json: registration(a, major: 1, minor: 2))
            let entryID = try #require(entry.json?["id"]?.stringValue)
            func report(_ events: [JSONValue]) async throws -> JSONResponse {
                try await client.call(.post, "/v1/me/region-events", token: ann, json: ["events": .array(events)])
            }
            let entered = try await report([["region": .string(a.id.rawValue), "type": "enter", "at": "2026-11-21T11:59:00Z"]])
            #expect(entered.status == .ok, "\(entered.text)")
            #expect(entered.json?["inside"] == [.string(a.id.rawValue)])
            #expect(entered.json?["events"]?.arrayValue?.map { $0["type"] } == ["beacon.entered"])
            #expect(entered.json?["events"]?.arrayValue?.first?["data"]?["reason"] == "region")
            // The iBeacon region of the same beacon: already inside, nothing new; then exit through it.
            #expect(try await report([["region": .string(entryID), "type": "enter"]]).json?["events"] == [])
            let exited = try await report([["region": .string(entryID), "type": "exit"]])
            #expect(exited.json?["inside"] == [] && exited.json?["events"]?.arrayValue?.first?["data"]?["region"] == .string(entryID))
            #expect(try await report([["region": .string(a.id.rawValue), "type": "exit"]]).json?["events"] == [])
            // In the log like any fence event; no location stored.
            #expect(try await client.eventTypes(ann) == ["beacon.entered", "beacon.exited"])
            #expect(try await h.store.userLocations([annID]).isEmpty)
            // A hidden or unknown region is the same 422; bad bodies name the member.
            let hiddenAnswer = try await report([["region": .string(hidden.id.rawValue), "type": "enter"]])
            let unknownAnswer = try await report([["region": "bcn_nothing_here", "type": "enter"]])
            #expect(hiddenAnswer.status == .unprocessableContent && hiddenAnswer.errorCode == "unknown_region")
            #expect(unknownAnswer.errorCode == "unknown_region" && unknownAnswer.errorPath == "events[0].region")
            #expect(try await report([["region": .string(a.id.rawValue), "type": "inside"]]).errorPath == "events[0].type")
            #expect(try await report([["region": .string(a.id.rawValue), "type": "enter", "at": "2027-01-01T00:00:00Z"]])
                .errorPath == "events[0].at")
            #expect(try await report([]).errorPath == "events")
            // CONTRACT.md names the crossing's time `timestamp` (`at` is an alias; not both).
            #expect(try await report([["region": .string(a.id.rawValue), "type": "enter", "timestamp": "2027-01-01T00:00:00Z"]])
                .errorPath == "events[0].timestamp")
            let both = try await report([["region": .string(a.id.rawValue), "type": "enter",
                                          "timestamp": "2026-11-21T11:59:00Z", "at": "2026-11-21T11:59:00Z"]])
            #expect(both.errorCode == "conflicting_fields" && both.errorPath == "events[0].at")
            let stamped = try await report([["region": .string(a.id.rawValue), "type": "enter", "timestamp": "2026-11-21T11:59:30Z"]])
            #expect(stamped.status == .ok && stamped.json?["events"]?.arrayValue?.first?["data"]?["at"] == "2026-11-21T11:59:30.000Z",
                    "\(stamped.text)")
        }
    }

    @Test func enclosingCircleOfATriangleAndOfPoints() {
        let o = Walk.schlossplatz
        // An obtuse triangle: the circle has the longest side as diameter.
        let pts = [Walk.offset(o, east: -100), Walk.offset(o, east: 100), Walk.offset(o, north: 10)]
        let (c, r) = EnclosingCircle.of(pts, origin: o, marginM: 0)
        #expect(abs(r - 100) < 0.1 && Geodesy.distance(c, o) < 0.1)
        // Many points on a 300 m circle plus inner ones: radius 300.
        let ring = (0..<360).map { i in Walk.offset(o, north: 300 * cos(Double(i) * .pi / 180), east: 300 * sin(Double(i) * .pi / 180)) }
        let (c2, r2) = EnclosingCircle.of(ring + [o, Walk.offset(o, north: 50)], origin: o, marginM: 0)
        #expect(abs(r2 - 300) < 0.5 && Geodesy.distance(c2, o) < 0.5)
    }
}
