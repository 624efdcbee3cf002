import DBeaconCore
import DBeaconGeo
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct TourServiceTests {
    /// Tours that grow (issue 14.7): the owner adds, removes and reorders stops (If-Match
    /// honoured; others 403); media at a place is deleted by its author or the place's owner.
    @Test(arguments: Backend.all) func stopsChangeAndMediaIsModerated(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, tina) = try await h.user("tina")
        let (_, vic) = try await h.user("vic")
        let (_, olga) = try await h.user("olga")
        let start = Walk.schlossplatz
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/tours", token: tina, json: [
                "name": "Two squares",
                "stops": [["name": "A", "location": Walk.latLon(start)],
                          ["name": "B", "location": Walk.latLon(Walk.offset(start, north: 300))]],
            ])
            let tourID = try #require(created.json?["tour"]?["id"]?.stringValue)
            let version = try #require(created.json?["tour"]?["properties"]?["version"]?.numberValue)
            let ids = (created.json?["stops"]?.arrayValue ?? []).compactMap { $0["beacon"]?["id"]?.stringValue }
            // Reorder (B first), drop nothing, add a new place C at the end.
            let body: JSONValue = ["stops": [["beacon": .string(ids[1]), "order": 1], ["beacon": .string(ids[0]), "order": 2],
                                             ["name": "C", "location": Walk.latLon(Walk.offset(start, east: 300)), "order": 3]]]
            #expect(try await client.call(.put, "/v1/tours/\(tourID)/stops", token: vic, json: body).status == .forbidden)
            let stale = try await client.call(.put, "/v1/tours/\(tourID)/stops", token: tina, json: body,
                                              headers: [.ifMatch: "\"\(Int(version) + 5)\""])
            #expect(stale.status == .preconditionFailed)
            let changed = try await client.call(.put, "/v1/tours/\(tourID)/stops", token: tina, json: body,
                                                headers: [.ifMatch: "\"\(Int(version))\""])
            #expect(changed.status == .ok, "\(changed.text)")
            let names = (changed.json?["stops"]?.arrayValue ?? []).compactMap { $0["beacon"]?["properties"]?["name"]?.stringValue }
            #expect(names == ["B", "A", "C"])
            // Remove A: the tour has B and C; A stays a beacon of its own.
            let cID = try #require(changed.json?["stops"]?.arrayValue?.last?["beacon"]?["id"]?.stringValue)
            let removed = try await client.call(.put, "/v1/tours/\(tourID)/stops", token: tina,
                                                json: ["stops": [["beacon": .string(ids[1])], ["beacon": .string(cID)]]])
            #expect((removed.json?["stops"]?.arrayValue ?? []).compactMap { $0["beacon"]?["id"]?.stringValue } == [ids[1], cID])
            #expect(try await client.call(.get, "/v1/beacons/\(ids[0])", token: tina).status == .ok)
            // Bad bodies: a duplicate stop, an unknown beacon, no stops.
            let dup = try await client.call(.put, "/v1/tours/\(tourID)/stops", token: tina,
                                            json: ["stops": [["beacon": .string(cID)], ["beacon": .string(cID)]]])
            #expect(dup.status == .unprocessableContent && dup.errorPath == "stops[1].beacon")
            let ghost = try await client.call(.put, "/v1/tours/\(tourID)/stops", token: tina, json: ["stops": [["beacon": "bcn_ghost"]]])
            #expect(ghost.status == .unprocessableContent && ghost.errorPath == "stops[0].beacon")
            #expect(try await client.call(.put, "/v1/tours/\(tourID)/stops", token: tina, json: ["stops": []]).errorPath == "stops")

            // Media at B: vic shares it; olga may not delete it; vic (author) and tina (owner) may.
            try await client.report(vic, Walk.offset(start, north: 300), at: h.clock.tick(60))
            let media: JSONValue = ["kind": "image", "url": "https://example.org/vic/1.jpg"]
            let first = try #require(try await client.call(.post, "/v1/places/\(ids[1])/media", token: vic, json: media).json?["id"]?.stringValue)
            let second = try #require(try await client.call(.post, "/v1/places/\(ids[1])/media", token: vic, json: media).json?["id"]?.stringValue)
            #expect(try await client.call(.delete, "/v1/places/\(ids[1])/media/\(first)", token: olga).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/places/\(ids[1])/media/\(first)", token: vic).status == .noContent)
            #expect(try await client.call(.delete, "/v1/places/\(ids[1])/media/\(second)", token: tina).status == .noContent)
            #expect(try await client.call(.delete, "/v1/places/\(ids[1])/media/\(second)", token: tina).status == .notFound)
            #expect(try await client.call(.delete, "/v1/places/\(cID)/media/\(first)", token: tina).status == .notFound)
            #expect(try await client.call(.get, "/v1/places/\(ids[1])/media", token: tina).json?["media"]?.arrayValue == [])
        }
    }

    @Test(arguments: Backend.all) func tourWalkedInOrderWithProgressAndMediaGating(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, tina) = try await h.user("tina")   // creates the tour
        let (_, vic) = try await h.user("vic")     // walks it
        let (_, olga) = try await h.user("olga")   // somewhere else
        let start = Walk.schlossplatz
        let stops = [start, Walk.offset(start, north: 300), Walk.offset(start, north: 300, east: 300)]
        try await h.app().test(.router) { client in
            // A chain of three new places, each with its own perimeter and content
            let created = try await client.call(.post, "/v1/tours", token: tina, json: [
                "name": "Three squares", "tags": ["sightseeing"],
                "stops": .array(stops.enumerated().map { i, p in
                    ["name": .string("Square \(i + 1)"), "location": Walk.latLon(p), "perimeter": ["type": "Circle", "radius_m": 40],
                     "content": [["kind": "web", "url": .string("https://example.org/square\(i + 1)"), "title": "About"]]]
                }),
            ])
            #expect(created.status == .created, "\(created.text)")
            let tourID = try #require(created.json?["tour"]?["id"]?.stringValue)
            let placeIDs = (created.json?["stops"]?.arrayValue ?? []).compactMap { $0["beacon"]?["id"]?.stringValue }
            #expect(placeIDs.count == 3)
            #expect(created.json?["tour"]?["properties"]?["service"] == "tour")
            #expect(created.json?["stops"]?.arrayValue?.first?["beacon"]?["properties"]?["service"] == "place")
            #expect(created.json?["tour"]?["properties"]?["relationships"]?.arrayValue?.map { $0["order"] } == [1, 2, 3])

            // Found through its places; listed in order; what comes next with distance and direction
            let nearby = try await client.call(.get, "/v1/tours/nearby?lat=\(stops[1].lat)&lon=\(stops[1].lon)", token: vic)
            #expect(nearby.featureIDs == [tourID])
            #expect(nearby.features.first?["properties"]?["matched_stops"]?.arrayValue?.first?["beacon"] == .string(placeIDs[1]))
            let between = Walk.offset(start, north: 150)
            #expect(try await client.call(.get, "/v1/tours/nearby?lat=\(between.lat)&lon=\(between.lon)", token: vic).featureIDs == [])
            let shown = try await client.call(.get, "/v1/tours/\(tourID)", token: vic)
            #expect(shown.json?["stops"]?.arrayValue?.compactMap { $0["beacon"]?["id"]?.stringValue } == placeIDs)
            let next = try await client.call(.get, "/v1/tours/\(tourID)/next?from=\(placeIDs[0])", token: vic)
            #expect(next.json?["next"]?["beacon"]?["id"] == .string(placeIDs[1]))
            #expect(next.json?["remaining"] == 1)
            let following = next.json?["following"]?.arrayValue ?? []
            #expect(following.count == 2)
            #expect(abs((following.first?["distance_m"]?.numberValue ?? 0) - 300) < 1)
            #expect(abs((following.first?["bearing_deg"]?.numberValue ?? 0) - 0) < 1)
            #expect(abs((following.last?["distance_m"]?.numberValue ?? 0) - 424.3) < 2)
            #expect(abs((following.last?["bearing_deg"]?.numberValue ?? 0) - 45) < 1)
            #expect(next.json?["directions"]?["geo_uri"] != nil)
            let end = try await client.call(.get, "/v1/tours/\(tourID)/next?from=\(placeIDs[2])", token: vic)
            #expect(end.json?["next"] == .null && end.json?["following"] == [])
            let bad = try await client.call(.get, "/v1/tours/\(tourID)/next?from=bcn_elsewhere", token: vic)
            #expect(bad.status == .unprocessableContent && bad.errorPath == "from")

            // Following tracks progress from entering the places, in order
            #expect(try await client.call(.get, "/v1/tours/\(tourID)/progress", token: vic).status == .conflict)
            let followed = try await client.call(.post, "/v1/tours/\(tourID)/follow", token: vic)
            #expect(followed.status == .created, "\(followed.text)")
            #expect(followed.json?["next"]?["beacon"]?["id"] == .string(placeIDs[0]))
            try await client.report(vic, Walk.offset(stops[0], north: 10), at: h.clock.tick(60))
            var progress = try await client.call(.get, "/v1/tours/\(tourID)/progress", token: vic)
            #expect(progress.json?["visited"]?.arrayValue?.compactMap { $0["beacon"]?.stringValue } == [placeIDs[0]])
            #expect(progress.json?["next"]?["beacon"]?["id"] == .string(placeIDs[1]))

            // Media: shared only from inside a place, seen only from inside it
            let media: JSONValue = ["kind": "image", "url": "https://example.org/vic/selfie.jpg", "title": "Me at square 1"]
            let shared = try await client.call(.post, "/v1/places/\(placeIDs[0])/media", token: vic, json: media)
            #expect(shared.status == .created, "\(shared.text)")
            #expect(try await client.call(.post, "/v1/places/\(placeIDs[1])/media", token: vic, json: media).status == .forbidden)
            #expect(try await client.call(.get, "/v1/places/\(placeIDs[0])/media", token: olga).status == .forbidden)
            try await client.report(olga, Walk.offset(stops[0], east: -15), at: h.clock.tick(5))
            let seen = try await client.call(.get, "/v1/places/\(placeIDs[0])/media", token: olga)
            #expect(seen.json?["media"]?.arrayValue?.compactMap { $0["url"]?.stringValue } == ["https://example.org/vic/selfie.jpg"])
            let bodyError = try await client.call(.post, "/v1/places/\(placeIDs[0])/media", token: olga, json: ["kind": "image", "url": "ftp://x"])
            #expect(bodyError.status == .unprocessableContent && bodyError.errorPath == "url")

            // Walk on: stop 2, then stop 3; leaving stop 1 also ends vic's right to share there
            try await client.report(vic, stops[1], at: h.clock.tick(300))
            #expect(try await client.call(.post, "/v1/places/\(placeIDs[0])/media", token: vic, json: media).status == .forbidden)
            try await client.report(vic, stops[2], at: h.clock.tick(300))
            progress = try await client.call(.get, "/v1/tours/\(tourID)", token: vic)
            #expect(progress.json?["progress"]?["visited"]?.arrayValue?.compactMap { $0["beacon"]?.stringValue } == placeIDs)
            #expect(progress.json?["progress"]?["completed"] == true)
            #expect(progress.json?["progress"]?["next"] == .null)
            // Someone who does not follow has no progress
            #expect(try await client.call(.get, "/v1/tours/\(tourID)", token: olga).json?["progress"] == nil)
        }
    }

    @Test(arguments: Backend.all) func sampleOldTownWalk(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.samplesDirectory = samplesDirectory }
        try await h.app().test(.router) { client in
            let tour = try await client.call(.get, "/v1/tours/bcn_tour_old_town_walk", token: "demo-token-anna")
            let stops = tour.json?["stops"]?.arrayValue ?? []
            #expect(stops.count == 8)
            #expect(stops.compactMap { $0["order"]?.numberValue } == [1, 2, 3, 4, 5, 6, 7, 8])
            #expect(stops.first?["beacon"]?["id"] == "bcn_jubilaeumssaeule")
            let nearby = try await client.call(.get, "/v1/tours/nearby?lat=48.7784&lon=9.1800", token: "demo-token-anna")
            #expect(nearby.featureIDs == ["bcn_tour_old_town_walk"])
            #expect(nearby.features.first?["properties"]?["matched_stops"]?.arrayValue?.first?["beacon"] == "bcn_jubilaeumssaeule")
            let next = try await client.call(.get, "/v1/tours/bcn_tour_old_town_walk/next?from=bcn_karlsplatz", token: "demo-token-anna")
            #expect(next.json?["next"]?["beacon"]?["id"] == "bcn_altes_schloss")
            #expect(next.json?["remaining"] == 4)
            // A beacon that is not a tour is not found as one
            #expect(try await client.call(.get, "/v1/tours/bcn_markthalle", token: "demo-token-anna").status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func toursOfExistingPlacesAndBadInput(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (ownerID, _) = try await h.user("owner")
        let (_, tina) = try await h.user("tina")
        let (_, eve) = try await h.user("eve")
        let publicPlace = try await h.beacon(feature(name: "fountain", perimeter: circle(30)), owner: ownerID)
        let privatePlace = try await h.beacon(feature(name: "garden", perimeter: circle(30), members: []), owner: ownerID)
        try await h.app().test(.router) { client in
            let ok = try await client.call(.post, "/v1/tours", token: tina, json: [
                "name": "Mixed", "visibility": ["members": []],
                "stops": [["beacon": .string(publicPlace.id.rawValue), "order": 2],
                          ["name": "bench", "location": Walk.latLon(Walk.offset(Walk.schlossplatz, east: 200))]],
            ])
            #expect(ok.status == .created, "\(ok.text)")
            #expect(ok.json?["stops"]?.arrayValue?.first?["beacon"]?["properties"]?["name"] == "bench", "ordered by order")
            let id = try #require(ok.json?["tour"]?["id"]?.stringValue)
            #expect(try await client.call(.get, "/v1/tours/\(id)", token: eve).status == .notFound, "a private tour")
            for (body, path) in [
                (#"{"name":"t","stops":[]}"#, "stops"),
                (#"{"name":"t","stops":[{"beacon":"bcn_nope"}]}"#, "stops[0].beacon"),
                (#"{"name":"t","stops":[{"beacon":"\#(privatePlace.id)"}]}"#, "stops[0].beacon"),
                (#"{"name":"t","stops":[{"name":"x","location":{"lat":91,"lon":0}}]}"#, "stops[0].location.lat"),
                (#"{"name":"t","stops":[{"beacon":"\#(publicPlace.id)"},{"beacon":"\#(publicPlace.id)"}]}"#, "stops[1].beacon"),
            ] {
                let r = try await client.call(.post, "/v1/tours", token: tina, raw: body)
                #expect(r.status == .unprocessableContent && r.errorPath == path, "\(body) → \(r.text)")
            }
            let count = try await h.store.beaconCount()
            #expect(count == 4, "2 given + bench + tour; nothing from the failed creations")
        }
    }
}
