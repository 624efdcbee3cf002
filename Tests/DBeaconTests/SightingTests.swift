import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// An iBeacon sighting item for `POST /v1/sightings`.
func sighting(uuid: String = kontaktUUID, major: Int = 1, minor: Int, rssi: Int, at: Timestamp,
              extra: [(String, JSONValue)] = []) -> JSONValue {
    var o: JSONObject = ["uuid": .string(uuid), "major": .int(major), "minor": .int(minor), "rssi": .int(rssi),
                         "timestamp": .string(at.rfc3339)]
    for (k, v) in extra { o[k] = v }
    return .object(o)
}

@Suite(.bounded) struct SightingTests {
    /// A shop (circle of 20 m far from the physical beacon's room, so only sightings put users
    /// inside) with one registered iBeacon (1/1, measured power -59 dBm at 1 m).
    func setUp(_ backend: Backend, sightingExit: Double = 30) async throws
        -> (TestHarness, owner: UserID, ann: UserID, annToken: String, shop: Beacon) {
        let h = try await TestHarness.make(backend: backend) { $0.fences.sightingExitSeconds = sightingExit }
        let (owner, _) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let shop = try await h.beacon(feature(name: "shop", lat: 48.7784, lon: 9.18, perimeter: circle(20)), owner: owner)
        _ = try await h.services.registry.register(try RegistryCodec.decodeDraft(
            registration(shop, major: 1, minor: 1, extra: [("measured_power", -59)])), by: .user(owner))
        return (h, owner, ann, annToken, shop)
    }

    @Test(arguments: Backend.all) func eachItemGetsItsOwnResultOrError(_ backend: Backend) async throws {
        let (h, _, ann, token, shop) = try await setUp(backend)
        let now = h.clock.now()
        let items: [JSONValue] = [
            sighting(minor: 1, rssi: -65, at: now, extra: [("tx_power", -59)]),
            sighting(uuid: "f7826da6-4fa2-4e98-8024-bc5b71e0893", minor: 1, rssi: -65, at: now),
            sighting(major: 70000, minor: 1, rssi: -65, at: now),
            sighting(minor: 1, rssi: 5, at: now),
            sighting(minor: 1, rssi: -200, at: now),
            ["adv": "020106", "rssi": -70, "timestamp": .string(now.rfc3339)],
            ["adv": "0201061aff4c000215f7826da64fa24e988024bc5b71e0893e00010001c5", "rssi": -79, "timestamp": .string(now.rfc3339)],
            42,
            sighting(uuid: "00000000-0000-0000-0000-000000000000", minor: 1, rssi: -59, at: now),
            ["uuid": .string(kontaktUUID), "major": 1, "minor": 1, "timestamp": .string(now.rfc3339)],
            ["adv": "aafe00e7edd1ebeac04e5defa017", "rssi": -70],
            sighting(minor: 1, rssi: 0, at: now),
            sighting(minor: 1, rssi: -70, at: now.adding(seconds: 3600)),
            ["uuid": .string(kontaktUUID), "major": 1, "rssi": -70],
            ["adv": "0201061aff4c000215f7826da6", "uuid": .string(kontaktUUID), "rssi": -70],
        ]
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": .array(items)])
            #expect(r.status == .ok, "\(r.text)")
            let results = r.json?["results"]?.arrayValue ?? []
            #expect(results.count == items.count)
            #expect(results.enumerated().allSatisfy { $0.element["index"] == .int($0.offset) })
            let codes = results.map { $0["error"]?["code"]?.stringValue }
            #expect(codes == [nil, "invalid_uuid", "invalid_major", "invalid_rssi", "invalid_rssi", "unknown_frame", nil,
                              "invalid_sighting", "unknown_beacon", "missing_field", "malformed_frame", nil, "future_timestamp",
                              "missing_field", "invalid_sighting"])
            #expect(results.allSatisfy { $0["error"]?.isNull == true || ($0["error"]?["message"]?.stringValue?.isEmpty == false) })
            // Resolved: the Feature, the range from RSSI and measured power, the proximity class.
            #expect(results[0]["beacon"]?["id"] == .string(shop.id.rawValue))
            #expect(results[0]["distance_m"] == 2)  // 10^((-59 + 65) / 20) ≈ 1.995
            #expect(results[0]["proximity"] == "near")
            #expect(results[6]["beacon"]?["id"] == .string(shop.id.rawValue) && results[6]["distance_m"] == 10)
            #expect(results[6]["proximity"] == "far")
            #expect(results[11]["beacon"]?["id"] == .string(shop.id.rawValue))
            #expect(results[11]["distance_m"] == .null && results[11]["proximity"] == "unknown")
            // Unknown beacons still get a range (from the default measured power) but no Feature.
            #expect(results[8]["beacon"] == .null && results[8]["distance_m"] == 1)
            #expect(results[1]["beacon"] == .null && results[1]["distance_m"] == .null && results[1]["proximity"] == .null)
            // The valid sightings put Ann inside the shop, once.
            let events = r.json?["events"]?.arrayValue ?? []
            #expect(events.map { $0["type"] } == ["beacon.entered"])
            #expect(events.first?["data"]?["reason"] == "sighting" && events.first?["data"]?["beacon"] == .string(shop.id.rawValue))
            #expect(r.json?["position"] == .null)
        }
        #expect(try await h.events(ann).map(\.type) == [.entered])
        #expect(await h.fences.insideBeacons(of: ann) == [shop.id])
    }

    @Test(arguments: Backend.all) func replayingABatchIsIdempotent(_ backend: Backend) async throws {
        let (h, _, ann, token, _) = try await setUp(backend)
        let (_, bobToken) = try await h.user("bob")
        let body: JSONValue = ["batch_id": "scan-0001", "sightings": [sighting(minor: 1, rssi: -70, at: h.clock.now())]]
        try await h.app().test(.router) { client in
            let first = try await client.call(.post, "/v1/sightings", token: token, json: body)
            #expect(first.status == .ok && first.json?["events"]?.arrayValue?.count == 1)
            h.clock.advance(seconds: 5)
            let again = try await client.call(.post, "/v1/sightings", token: token, json: body)
            #expect(again.status == .ok)
            #expect(again.text == first.text, "a replay returns the first answer byte for byte")
            // A different batch under the same id is refused; another user's ids are their own.
            let other: JSONValue = ["batch_id": "scan-0001", "sightings": [sighting(minor: 1, rssi: -60, at: h.clock.now())]]
            let reused = try await client.call(.post, "/v1/sightings", token: token, json: other)
            #expect(reused.status == .conflict && reused.errorCode == "batch_id_reused")
            #expect(try await client.call(.post, "/v1/sightings", token: bobToken, json: other).json?["events"]?.arrayValue?.count == 1)
        }
        #expect(try await h.events(ann).map(\.type) == [.entered], "the replay had no effect")
    }

    /// Presence ends 30 s after the last sighting, decided by the ticker on the clock.
    @Test(arguments: Backend.all) func exitsThirtySecondsAfterTheLastSighting(_ backend: Backend) async throws {
        let (h, _, ann, token, shop) = try await setUp(backend)
        let t0 = h.clock.now()
        try await h.app().test(.router) { client in
            let enter = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": [sighting(minor: 1, rssi: -70, at: t0)]])
            #expect(enter.json?["events"]?.arrayValue?.map { $0["type"] } == ["beacon.entered"])
            h.clock.advance(seconds: 20)
            let refresh = try await client.call(.post, "/v1/sightings", token: token,
                                                json: ["sightings": [sighting(minor: 1, rssi: -72, at: h.clock.now())]])
            #expect(refresh.json?["events"]?.arrayValue?.isEmpty == true)
        }
        // A GPS fix 2 km away while the sighting is fresh does not exit (the beacon is right here).
        h.clock.advance(seconds: 5)
        let fix = try await h.fix(ann, lat: 48.7964, lon: 9.18, accuracy: 10)
        #expect(fix.events.isEmpty && fix.inside == [shop.id])
        h.clock.advance(seconds: 24)  // t0 + 49: 29 s after the last sighting
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).map(\.type) == [.entered])
        h.clock.advance(seconds: 2)  // t0 + 51
        try await h.services.ticker.tickOnce()
        let events = try await h.events(ann)
        #expect(events.map(\.type) == [.entered, .exited])
        #expect(events.last?.data["reason"] == "sighting_timeout")
        #expect(events.last?.data["at"] == .string(t0.adding(seconds: 50).rfc3339))
        #expect(events.last?.data["last_sighted_at"] == .string(t0.adding(seconds: 20).rfc3339))
        #expect(await h.fences.insideBeacons(of: ann).isEmpty)
        // The state is durable: after a reload nothing is inside and nothing is due.
        try await h.fences.reload()
        h.clock.advance(seconds: 60)
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).count == 2)
    }

    @Test(arguments: Backend.all) func theTimeoutIsConfigurableAndSurvivesARestart(_ backend: Backend) async throws {
        let (h, _, ann, token, _) = try await setUp(backend, sightingExit: 10)
        try await h.app().test(.router) { client in
            _ = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": [sighting(minor: 1, rssi: -70, at: h.clock.now())]])
        }
        try await h.fences.reload()  // as after a restart: the sighting time comes back from the database
        h.clock.advance(seconds: 11)
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).map(\.type) == [.entered, .exited])
    }

    /// When sightings stop but a later GPS fix puts the user inside the perimeter, presence
    /// continues as an ordinary geofence state; the next fix outside exits as usual.
    @Test(arguments: Backend.all) func aLaterFixInsideTheperimeterTakesOver(_ backend: Backend) async throws {
        let (h, _, ann, token, shop) = try await setUp(backend)
        try await h.app().test(.router) { client in
            _ = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": [sighting(minor: 1, rssi: -70, at: h.clock.now())]])
        }
        h.clock.advance(seconds: 10)
        try await h.fix(ann, lat: 48.7784, lon: 9.18, accuracy: 5)
        h.clock.advance(seconds: 25)
        try await h.services.ticker.tickOnce()
        #expect(try await h.events(ann).map(\.type) == [.entered])
        #expect(await h.fences.insideBeacons(of: ann) == [shop.id])
        h.clock.advance(seconds: 5)
        let away = try await h.fix(ann, lat: 48.7800, lon: 9.18, accuracy: 5)  // about 180 m north
        #expect(away.events.map(\.type) == [.exited])
    }

    /// Standing still among four positioned beacons (issue 11.10): the applied indoor position
    /// keeps presence as a fix does, so no exit after the sighting timeout and no re-entry on
    /// the next GPS fix from the same spot.
    @Test(arguments: Backend.all) func anAppliedIndoorPositionKeepsPresenceWithoutFlapping(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, token) = try await h.user("ann")
        let center = Position(lon: 9.18, lat: 48.7784)
        let hall = try await h.beacon(feature(name: "hall", lat: center.lat, lon: center.lon, perimeter: circle(40)), owner: owner)
        let dLat = 15 / 111_200.0, dLon = 15 / (111_200.0 * cos(center.lat * .pi / 180))
        let anchors = [(center.lat + dLat, center.lon), (center.lat, center.lon + dLon), (center.lat - dLat, center.lon),
                       (center.lat, center.lon - dLon)]
        for (i, a) in anchors.enumerated() {
            _ = try await h.services.registry.register(try RegistryCodec.decodeDraft(registration(hall, major: 7, minor: i + 1, extra: [
                ("measured_power", -59), ("position", ["lat": .number(a.0), "lon": .number(a.1), "level": 0]),
            ])), by: .user(owner))
        }
        try await h.app().test(.router) { client in
            let seen = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": .array((1...4).map {
                sighting(major: 7, minor: $0, rssi: -83, at: h.clock.now())
            })])
            #expect(seen.json?["position"]?["applied"] == true, "\(seen.text)")
            #expect(seen.json?["events"]?.arrayValue?.map { $0["type"] } == ["beacon.entered"])
        }
        for _ in 0..<3 {
            h.clock.advance(seconds: 31)
            try await h.services.ticker.tickOnce()
        }
        #expect(try await h.events(ann).map(\.type) == [.entered], "standing still: no sighting_timeout exit")
        #expect(await h.fences.insideBeacons(of: ann) == [hall.id])
        let gps = try await h.fix(ann, lat: center.lat, lon: center.lon, accuracy: 8)
        #expect(gps.events.isEmpty && gps.inside == [hall.id], "no re-entry without movement")
        h.clock.advance(seconds: 10)
        let away = try await h.fix(ann, lat: center.lat + 200 / 111_200.0, lon: center.lon, accuracy: 8)
        #expect(away.events.map(\.type) == [.exited], "walking away still exits")
    }

    @Test(arguments: Backend.all) func presenceEndsWhenTheBeaconIsHiddenAndStaleSightingsDoNotEnter(_ backend: Backend) async throws {
        let (h, owner, ann, token, shop) = try await setUp(backend)
        try await h.app().test(.router) { client in
            // A sighting older than the exit timeout resolves but does not enter.
            let stale = try await client.call(.post, "/v1/sightings", token: token,
                                              json: ["sightings": [sighting(minor: 1, rssi: -70, at: h.clock.now().adding(seconds: -45))]])
            #expect(stale.json?["results"]?.arrayValue?.first?["beacon"]?["id"] == .string(shop.id.rawValue))
            #expect(stale.json?["events"]?.arrayValue?.isEmpty == true)
            _ = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": [sighting(minor: 1, rssi: -70, at: h.clock.now())]])
        }
        let (hidden, _) = try await h.beacons.update(shop.id, patch: ["properties": ["visibility": ["members": [.string(owner.rawValue)]]]],
                                                   ifMatch: nil, by: .user(owner))
        try await h.fences.beaconChanged(hidden, reason: "updated")
        let events = try await h.events(ann)
        #expect(events.map(\.type) == [.entered, .exited])
        // She lost sight of it: the notice of that, and nothing else about it (issue 45), which her
        // own log lists.
        #expect(events.last?.data["reason"] == "unavailable")
        #expect(events.last?.data.members.map(\.key).sorted() == ["at", "beacon", "reason"])
        try await h.app().test(.router) { client in
            let log = try await client.call(.get, "/v1/events", token: token).json?["events"]?.arrayValue ?? []
            #expect(log.last?["type"] == "beacon.exited" && log.last?["data"]?["reason"] == "unavailable")
        }
        try await h.app().test(.router) { client in
            // Now the shop is hidden from Ann: her sighting resolves to nothing.
            let r = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": [sighting(minor: 1, rssi: -70, at: h.clock.now())]])
            #expect(r.json?["results"]?.arrayValue?.first?["beacon"] == .null && r.json?["results"]?.arrayValue?.first?["error"]?["code"] == "unknown_beacon")
            #expect(r.json?["events"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test(arguments: Backend.all) func rejectsBadBatches(_ backend: Backend) async throws {
        let (h, _, _, token, _) = try await setUp(backend)
        let item = sighting(minor: 1, rssi: -70, at: h.clock.now())
        try await h.app().test(.router) { client in
            #expect(try await client.call(.post, "/v1/sightings", token: TestHarness.adminToken, json: ["sightings": [item]]).status == .forbidden)
            let empty = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": []])
            #expect(empty.status == .unprocessableContent && empty.errorPath == "sightings")
            let missing = try await client.call(.post, "/v1/sightings", token: token, json: ["batch_id": "x"])
            #expect(missing.status == .unprocessableContent && missing.errorPath == "sightings")
            let many = try await client.call(.post, "/v1/sightings", token: token,
                                             json: ["sightings": .array(Array(repeating: item, count: 1001))])
            #expect(many.status == .unprocessableContent && many.errorCode == "too_many")
            let badID = try await client.call(.post, "/v1/sightings", token: token, json: ["batch_id": 7, "sightings": [item]])
            #expect(badID.status == .unprocessableContent && badID.errorPath == "batch_id")
            #expect(try await client.call(.post, "/v1/sightings", token: token, raw: "{").status == .badRequest)
        }
    }
}
