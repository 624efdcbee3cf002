import DBeaconCore
import DBeaconServices
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The leaks of issue 26, one test each, on both stores: each failed before the visibility gate
/// and passes through it. (Defect 3 is `VisitTests.suggestionsForgetBeaconsNoLongerVisible`,
/// 10 is `HTTPBeaconTests.unknownRoutesAndOperationsEndpoints`, 14 is
/// `VisitTests.alsoVisitedNeedsFiveRealVisitors`.)
@Suite(.bounded) struct PrivacyDefectTests {
    static let uuid = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"

    /// 1. An import's relationship to a hidden beacon is the same 422 as to a missing one.
    @Test(arguments: Backend.all) func importTreatsHiddenTargetsAsMissing(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (_, stranger) = try await h.user("stranger")
        let hidden = try await h.beacon(feature(name: "hidden", members: []), owner: owner)
        let future = try await h.beacon(feature(name: "later", lifetime: ("2030-01-01T00:00:00Z", nil)), owner: owner)
        try await h.app().test(.router) { client in
            func importing(_ target: String) async throws -> JSONResponse {
                try await client.call(.post, "/v1/beacons/import", token: stranger, json: [
                    "type": "FeatureCollection",
                    "features": [feature(name: "x", relationships: [["type": "related", "target": .string(target)]])],
                ])
            }
            let missing = try await importing(BeaconID.generate().rawValue)
            #expect(missing.status == .unprocessableContent && missing.errorCode == "unknown_target", "\(missing.text)")
            for target in [hidden.id, future.id] {
                let r = try await importing(target.rawValue)
                #expect(r.status == missing.status && r.errorCode == missing.errorCode && r.errorPath == missing.errorPath, "\(r.text)")
            }
            #expect(try await client.call(.get, "/v1/beacons?owner=me", token: stranger).features.isEmpty, "nothing was stored")
        }
    }

    /// 2. Content and PATCH answers are the Feature as the caller sees it: no hidden targets.
    @Test(arguments: Backend.all) func contentAnswersAreRedacted(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (_, visitor) = try await h.user("visitor")
        let hidden = try await h.beacon(feature(name: "hidden", members: []), owner: owner)
        let wall = try await h.beacon(feature(name: "wall", relationships: [["type": "related", "target": .string(hidden.id.rawValue)]],
                                              extra: [("content_policy", "anyone")]), owner: owner)
        try await h.app().test(.router) { client in
            let added = try await client.call(.post, "/v1/beacons/\(wall.id)/content", token: visitor,
                                              json: ["kind": "web", "url": "https://example.org/a", "title": "A"])
            #expect(added.status == .created, "\(added.text)")
            #expect(!added.text.contains(hidden.id.rawValue))
            #expect(added.json?["properties"]?["relationships"] == [])
            let removed = try await client.call(.delete, "/v1/beacons/\(wall.id)/content/0", token: visitor)
            #expect(removed.status == .ok && !removed.text.contains(hidden.id.rawValue), "\(removed.text)")
            // The owner still sees their own link.
            let patched = try await client.call(.patch, "/v1/beacons/\(wall.id)", token: ownerToken, json: ["properties": ["name": "Wall"]])
            #expect(patched.text.contains(hidden.id.rawValue))
        }
    }

    /// 4. `meeting.uninvited` tells the removed invitee only what they saw before the edit.
    @Test(arguments: Backend.all) func uninvitedSeesNothingOfTheEdit(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, organizer) = try await h.user("organizer")
        let (ben, _) = try await h.user("ben")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/meetings", token: organizer, json: [
                "name": "Planning", "location": ["lat": 48.7784, "lon": 9.18],
                "start": "2030-01-01T09:00:00Z", "end": "2030-01-01T10:00:00Z", "invitees": [.string(ben.rawValue)],
            ])
            let id = try #require(created.json?["id"]?.stringValue)
            let patched = try await client.call(.patch, "/v1/meetings/\(id)", token: organizer, json: [
                "name": "Layoffs", "end": "2030-01-01T12:00:00Z", "invitees": [],
            ])
            #expect(patched.status == .ok, "\(patched.text)")
        }
        let uninvited = try #require(try await h.events(ben).first { $0.type == .meetingUninvited })
        #expect(uninvited.data["name"] == "Planning" && uninvited.data["end"] == "2030-01-01T10:00:00.000Z")
    }

    /// 5 and 6. A public tour whose first stop is private: located at its first visible stop,
    /// its default circle shaped by visible stops, its stops numbered 1, 2 for a stranger.
    @Test(arguments: Backend.all) func toursHideTheirHiddenStops(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (_, stranger) = try await h.user("stranger")
        let secret = Walk.offset(Walk.schlossplatz, north: -3000)
        let privateStop = try await h.beacon(feature(name: "secret", lat: secret.lat, lon: secret.lon, members: []), owner: owner)
        let a = Walk.schlossplatz, b = Walk.offset(a, east: 300)
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/tours", token: ownerToken, json: [
                "name": "Walk", "stops": [["beacon": .string(privateStop.id.rawValue)],
                                          ["name": "A", "location": Walk.latLon(a)], ["name": "B", "location": Walk.latLon(b)]],
            ])
            #expect(created.status == .created, "\(created.text)")
            let id = try #require(created.json?["tour"]?["id"]?.stringValue)
            let seen = try await client.call(.get, "/v1/tours/\(id)", token: stranger)
            #expect(seen.status == .ok)
            #expect(!seen.text.contains(privateStop.id.rawValue))
            #expect((seen.json?["stops"]?.arrayValue ?? []).map { $0["order"] } == [1, 2])
            let orders = (seen.json?["tour"]?["properties"]?["relationships"]?.arrayValue ?? []).map { $0["order"] }
            #expect(orders == [1, 2])
            let location = seen.json?["tour"]?["geometry"]?["coordinates"]
            #expect(location == [.number(a.lon), .number(a.lat)], "located at the first visible stop")
            let radius = seen.json?["tour"]?["properties"]?["perimeter"]?["radius_m"]?.numberValue ?? 0
            #expect(radius < 1_000, "the circle reaches the visible stops only (\(radius) m)")
            let related = try await client.call(.get, "/v1/beacons/\(id)/related?type=tour", token: stranger)
            #expect(related.features.compactMap { $0["properties"]?["relationship"]?["order"] } == [1, 2])
            // Nearby measures to the tour's visible location.
            let near = try await client.call(.get, "/v1/nearby?lat=\(a.lat)&lon=\(a.lon)&limit=50", token: stranger)
            let tourFeature = near.features.first { $0["id"]?.stringValue == id }
            #expect((tourFeature?["properties"]?["distance_m"]?.numberValue ?? 1e9) < 1)
        }
    }

    /// 7. A stop of a hidden tour is no place for media: the same 404 as before it was one.
    @Test(arguments: Backend.all) func hiddenToursMakeNoPlaces(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (_, stranger) = try await h.user("stranger")
        let bench = try await h.beacon(feature(name: "bench"), owner: owner)
        try await h.app().test(.router) { client in
            let before = try await client.call(.get, "/v1/places/\(bench.id)/media", token: stranger)
            let tour = try await client.call(.post, "/v1/tours", token: ownerToken, json: [
                "name": "Private walk", "visibility": ["members": []], "stops": [["beacon": .string(bench.id.rawValue)]],
            ])
            #expect(tour.status == .created, "\(tour.text)")
            let after = try await client.call(.get, "/v1/places/\(bench.id)/media", token: stranger)
            #expect(before.status == .notFound && after.status == before.status && after.errorCode == before.errorCode)
            let share = try await client.call(.post, "/v1/places/\(bench.id)/media", token: stranger,
                                              json: ["kind": "image", "url": "https://example.org/p.jpg"])
            #expect(share.status == .notFound, "\(share.text)")
        }
    }

    /// 8. Deleting a saved promotion that became hidden answers as for a deleted one.
    @Test(arguments: Backend.all) func hiddenSavedItemsAnswerAsDeleted(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, shop) = try await h.user("shop")
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            func promotion(_ name: String) async throws -> String {
                let r = try await client.call(.post, "/v1/promotions", token: shop, json: [
                    "name": .string(name), "location": ["lat": 48.7784, "lon": 9.18], "perimeter": circle(100), "category": "food",
                ])
                return try #require(r.json?["id"]?.stringValue, "\(r.text)")
            }
            let hiddenLater = try await promotion("hidden later"), deletedLater = try await promotion("deleted later")
            for id in [hiddenLater, deletedLater] {
                #expect(try await client.call(.post, "/v1/promotions/\(id)/interactions", token: ann, json: ["type": "saved"]).status == .created)
            }
            let hide = try await client.call(.patch, "/v1/beacons/\(hiddenLater)", token: shop,
                                             json: ["properties": ["visibility": ["members": []]]])
            #expect(hide.status == .ok, "\(hide.text)")
            #expect(try await client.call(.delete, "/v1/beacons/\(deletedLater)", token: shop).status == .noContent)
            let a = try await client.call(.delete, "/v1/me/saved/\(hiddenLater)", token: ann)
            let b = try await client.call(.delete, "/v1/me/saved/\(deletedLater)", token: ann)
            #expect(a.status == .notFound && a.status == b.status && a.errorCode == b.errorCode, "\(a.text) \(b.text)")
        }
    }

    /// 9. An identity held by a hidden beacon's entry neither blocks nor shows; resolution picks
    /// among the entries the caller may see.
    @Test(arguments: Backend.all) func hiddenRegistryEntriesNeverConflict(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (other, otherToken) = try await h.user("other")
        let hidden = try await h.beacon(feature(name: "vault", members: []), owner: owner)
        let shop = try await h.beacon(feature(name: "shop"), owner: other)
        let entry: @Sendable (Beacon) -> JSONValue = { beacon in
            ["type": "ibeacon", "uuid": .string(Self.uuid), "major": 1, "minor": 2, "beacon": .string(beacon.id.rawValue)]
        }
        try await h.app().test(.router) { client in
            #expect(try await client.call(.post, "/v1/registry", token: ownerToken, json: entry(hidden)).status == .created)
            let mine = try await client.call(.post, "/v1/registry", token: otherToken, json: entry(shop))
            #expect(mine.status == .created, "a hidden entry does not block: \(mine.text)")
            let again = try await client.call(.post, "/v1/registry", token: otherToken, json: entry(shop))
            #expect(again.status == .conflict && again.errorCode == "duplicate_identity", "a visible one does")
            let resolved = try await client.call(.get, "/v1/registry/resolve?uuid=\(Self.uuid)&major=1&minor=2", token: otherToken)
            #expect(resolved.json?["id"]?.stringValue == shop.id.rawValue)
            let asOwner = try await client.call(.get, "/v1/registry/resolve?uuid=\(Self.uuid)&major=1&minor=2", token: ownerToken)
            #expect(asOwner.json?["id"]?.stringValue == hidden.id.rawValue, "the owner's own, older entry first")
            _ = owner
        }
    }

    /// 11. A replayed sighting batch passes the gate again.
    @Test(arguments: Backend.all) func replayedSightingsAreCheckedAgain(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ownerToken) = try await h.user("owner")
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(name: "shop"))
            let id = try #require(created.json?["id"]?.stringValue)
            _ = try await client.call(.post, "/v1/registry", token: ownerToken, json: [
                "type": "ibeacon", "uuid": .string(Self.uuid), "major": 7, "minor": 7, "beacon": .string(id),
            ])
            let batch: JSONValue = ["batch_id": "b1", "sightings": [["uuid": .string(Self.uuid), "major": 7, "minor": 7, "rssi": -60]]]
            let first = try await client.call(.post, "/v1/sightings", token: ann, json: batch)
            #expect(first.json?["results"]?.arrayValue?.first?["beacon"]?["id"]?.stringValue == id, "\(first.text)")
            _ = try await client.call(.patch, "/v1/beacons/\(id)", token: ownerToken, json: ["properties": ["visibility": ["members": []]]])
            let replay = try await client.call(.post, "/v1/sightings", token: ann, json: batch)
            #expect(replay.status == .ok)
            #expect(!replay.text.contains(id), "\(replay.text)")
            #expect(replay.json?["results"]?.arrayValue?.first?["error"]?["code"] == "unknown_beacon")
        }
    }

    /// 12. A fix backdated past `--max-fix-age` is refused; one within it is judged now.
    @Test(arguments: Backend.all) func backdatedFixesDoNotReachEndedLifetimes(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let now = h.clock.now()
        _ = try await h.beacon(feature(name: "ended", lifetime: (nil, now.adding(seconds: -60).rfc3339)), owner: owner)
        try await h.app().test(.router) { client in
            let old = try await client.call(.post, "/v1/me/location", token: annToken,
                                            json: Walk.fix(Walk.schlossplatz, at: now.adding(seconds: -3600)))
            #expect(old.status == .unprocessableContent && old.errorCode == "stale_timestamp" && old.errorPath == "timestamp")
            let recent = try await client.call(.post, "/v1/me/location", token: annToken,
                                               json: Walk.fix(Walk.schlossplatz, at: now.adding(seconds: -120)))
            #expect(recent.status == .ok, "\(recent.text)")
            #expect(recent.json?["inside"] == [], "alive 120 s ago, ended now: \(recent.text)")
        }
        #expect(try await h.events(ann).isEmpty)
    }

    /// 13. Event cursors are sealed per reader: no position shows, and they open for no one else.
    @Test(arguments: Backend.all) func eventCursorsAreOpaquePerReader(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let (_, benToken) = try await h.user("ben")
        _ = try await h.beacon(feature(name: "a", perimeter: circle(50)), owner: owner)
        for i in 0..<3 {
            h.clock.advance(seconds: 60)
            _ = try await h.fix(ann, lat: Walk.schlossplatz.lat, lon: Walk.schlossplatz.lon + (i % 2 == 0 ? 0 : 0.01))
        }
        try await h.app().test(.router) { client in
            let page = try await client.call(.get, "/v1/events?limit=1", token: annToken)
            let cursor = try #require(page.json?["next_cursor"]?.stringValue, "\(page.text)")
            #expect(Int64(cursor.dropFirst(), radix: 36) == nil && cursor.count > 20, "not a position: \(cursor)")
            let next = try await client.call(.get, "/v1/events?limit=1&cursor=\(cursor)", token: annToken)
            #expect(next.status == .ok && next.json?["events"]?.arrayValue?.count == 1)
            #expect(next.json?["events"]?.arrayValue?.first?["id"] != page.json?["events"]?.arrayValue?.first?["id"])
            let stolen = try await client.call(.get, "/v1/events?limit=1&cursor=\(cursor)", token: benToken)
            #expect(stolen.status == .notFound, "another reader's cursor, as another reader's event id: \(stolen.text)")
        }
    }
}
