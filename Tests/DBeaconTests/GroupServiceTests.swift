import DBeaconCore
import DBeaconGeo
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct GroupServiceTests {
    /// The member entry of `user` in a group answer.
    func member(_ group: JSONResponse, _ user: UserID) -> JSONValue? {
        group.json?["members"]?.arrayValue?.first { $0["id"] == .string(user.rawValue) }
    }

    @Test(arguments: Backend.all) func groupWalkWithOutOfRangeAlertsWithoutFlapping(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (annID, ann) = try await h.user("ann")  // the guide
        let (bobID, bob) = try await h.user("bob")
        let (_, eve) = try await h.user("eve")      // not in the group
        let start = Walk.schlossplatz
        let tick = { @Sendable (s: Double) in h.clock.tick(s) }
        try await h.app().test(.router) { client in
            try await client.report(ann, start, at: tick(10))
            let created = try await client.call(.post, "/v1/groups", token: ann, json: ["name": "School trip 4b", "range_m": 100])
            #expect(created.status == .created, "\(created.text)")
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(id.hasPrefix("grp_"))
            let beaconID = try #require(created.json?["beacon"]?.stringValue)
            let beacon = try await client.call(.get, "/v1/beacons/\(beaconID)", token: ann)
            #expect(beacon.json?["properties"]?["service"] == "group")
            #expect(beacon.json?["properties"]?["tracks_owner"] == true)
            #expect(beacon.json?["properties"]?["perimeter"] == ["type": "Circle", "radius_m": 100])

            // People near the guide find the group; far away they do not
            let near = Walk.offset(start, north: 50)
            let nearby = try await client.call(.get, "/v1/groups/nearby?lat=\(near.lat)&lon=\(near.lon)", token: bob)
            #expect(nearby.features.first?["properties"]?["group"]?["id"] == .string(id))
            let far = Walk.offset(start, north: 300)
            #expect(try await client.call(.get, "/v1/groups/nearby?lat=\(far.lat)&lon=\(far.lon)", token: bob).features.isEmpty)

            // Bob joins (after a fix of his in no group, which the embedded store remembers: his
            // fixes after joining must still be decided against the group); the guide hears of it
            #expect(try await client.report(bob, near, at: tick(1)).filter { $0.hasPrefix("group.") } == [])
            #expect(try await client.call(.get, "/v1/groups/\(id)", token: bob).status == .notFound, "members only")
            let joined = try await client.call(.post, "/v1/groups/\(id)/join", token: bob)
            #expect(joined.status == .ok, "\(joined.text)")
            #expect(try await client.eventTypes(ann, prefix: "group.") == ["group.member_joined"])

            // Walking within range: no alert, status shows distance and in range
            #expect(try await client.report(bob, near, at: tick(10)).filter { $0.hasPrefix("group.") } == [])
            var status = try await client.call(.get, "/v1/groups/\(id)", token: ann)
            #expect(abs((member(status, bobID)?["distance_m"]?.numberValue ?? 0) - 50) < 1, "\(status.text)")
            #expect(member(status, bobID)?["in_range"] == true)
            #expect(member(status, bobID)?["age_s"] == 0)
            #expect(member(status, annID)?["role"] == "leader")

            // Drifting out of range alerts everyone, once
            let walked = try await client.report(bob, Walk.offset(start, north: 120), at: tick(10))
            #expect(walked.contains("group.member_out_of_range"), "the member's own answer lists the alert")
            let alert = try #require(try await client.eventList(ann).last)
            #expect(alert["type"] == "group.member_out_of_range")
            #expect(alert["data"]?["member"] == .string(bobID.rawValue) && alert["data"]?["group"] == .string(id))
            #expect(abs((alert["data"]?["distance_m"]?.numberValue ?? 0) - 120) < 1)
            // At the edge (inside the range but within the hysteresis margin) nothing flaps
            for north in [95.0, 105, 92, 101, 96] {
                #expect(try await client.report(bob, Walk.offset(start, north: north), at: tick(10)).filter { $0.hasPrefix("group.") } == [])
            }
            status = try await client.call(.get, "/v1/groups/\(id)", token: ann)
            #expect(member(status, bobID)?["in_range"] == false)
            // Clearly back: back in range
            #expect(try await client.report(bob, Walk.offset(start, north: 80), at: tick(10)).contains("group.member_back_in_range"))
            #expect(try await client.eventTypes(ann, prefix: "group.") ==
                    ["group.member_joined", "group.member_out_of_range", "group.member_back_in_range"])

            // The guide moving on also puts a member out of range (and back)
            let guideEvents = try await client.report(ann, Walk.offset(start, north: -150), at: tick(10))
            #expect(guideEvents.contains("group.member_out_of_range"), "\(guideEvents)")
            let bobAlert = try #require(try await client.eventList(bob).last)
            #expect(bobAlert["type"] == "group.member_out_of_range" && abs((bobAlert["data"]?["distance_m"]?.numberValue ?? 0) - 230) < 1)
            #expect(try await client.report(ann, Walk.offset(start, north: 40), at: tick(10)).contains("group.member_back_in_range"))
            #expect(try await client.eventTypes(bob, prefix: "group.") ==
                    ["group.member_joined", "group.member_out_of_range", "group.member_back_in_range",
                     "group.member_out_of_range", "group.member_back_in_range"])
            #expect(try await client.eventTypes(eve).isEmpty)
        }
    }

    @Test(arguments: Backend.all) func privacyStalenessAndRemoval(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (annID, ann) = try await h.user("ann")
        let (bobID, bob) = try await h.user("bob")
        let (carlID, carl) = try await h.user("carl")
        let (daveID, dave) = try await h.user("dave")
        let (_, eve) = try await h.user("eve")
        let start = Walk.schlossplatz
        let tick = { @Sendable (s: Double) in h.clock.tick(s) }
        try await h.app().test(.router) { client in
            // A closed group: only the listed people may see and join it
            let created = try await client.call(.post, "/v1/groups", token: ann, json: [
                "name": "Museum", "range_m": 200, "members": [.string(bobID.rawValue), .string(carlID.rawValue), .string(daveID.rawValue)],
            ])
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(created.json?["located"] == false, "the guide has not reported a location yet")
            try await client.report(ann, start, at: tick(10))
            #expect(try await client.call(.get, "/v1/groups/nearby?lat=\(start.lat)&lon=\(start.lon)", token: bob).features.count == 1,
                    "the guide's first fix places the group")
            #expect(try await client.call(.get, "/v1/groups/nearby?lat=\(start.lat)&lon=\(start.lon)", token: eve).features.isEmpty)
            #expect(try await client.call(.post, "/v1/groups/\(id)/join", token: eve).status == .notFound)

            // A fix from before joining is never shared
            try await client.report(bob, Walk.offset(start, north: 30), at: tick(10))
            _ = tick(10)
            #expect(try await client.call(.post, "/v1/groups/\(id)/join", token: bob).status == .ok)
            #expect(try await client.call(.post, "/v1/groups/\(id)/join", token: carl).status == .ok)
            var status = try await client.call(.get, "/v1/groups/\(id)", token: ann)
            #expect(member(status, bobID)?["location"] == .null)
            #expect(member(status, bobID)?["in_range"] == .null)
            try await client.report(bob, Walk.offset(start, north: 40), at: tick(10))
            try await client.report(carl, Walk.offset(start, east: 20), at: tick(10))
            status = try await client.call(.get, "/v1/groups/\(id)", token: ann)
            #expect(member(status, bobID)?["location"]?["lat"] != nil)
            #expect(member(status, bobID)?["in_range"] == true)

            // Dave joins later: he does not see positions reported before he joined
            #expect(try await client.call(.post, "/v1/groups/\(id)/join", token: dave).status == .ok)
            status = try await client.call(.get, "/v1/groups/\(id)", token: dave)
            #expect(member(status, bobID)?["location"] == .null)
            #expect(member(status, annID)?["location"]?["lat"] != nil, "the guide's location is the group beacon's")
            #expect(member(status, bobID)?["distance_m"] == .null, "no distance without bob's position")
            #expect(member(status, bobID)?["in_range"] == true, "range states are group status, not positions")
            try await client.report(bob, Walk.offset(start, north: 45), at: tick(10))
            status = try await client.call(.get, "/v1/groups/\(id)", token: dave)
            #expect(member(status, bobID)?["location"]?["lat"] != nil)

            // Stale: carl stops reporting
            _ = tick(301)
            try await client.report(bob, Walk.offset(start, north: 46), at: tick(10))
            status = try await client.call(.get, "/v1/groups/\(id)", token: ann)
            #expect(member(status, carlID)?["stale"] == true)
            #expect(member(status, bobID)?["stale"] == false)

            // Only the guide removes members; a removed member loses access at once
            #expect(try await client.call(.delete, "/v1/groups/\(id)/members/\(carlID)", token: bob).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/groups/\(id)/members/\(carlID)", token: ann).status == .noContent)
            #expect(try await client.call(.get, "/v1/groups/\(id)", token: carl).status == .notFound)
            #expect(try await client.call(.post, "/v1/groups/\(id)/join", token: carl).status == .notFound, "no way back")
            // … everywhere the group beacon could grant it (issue 11.1): get, directions, nearby
            let groupBeacon = try #require(created.json?["beacon"]?.stringValue)
            let here = "lat=\(start.lat)&lon=\(start.lon)"
            #expect(try await client.call(.get, "/v1/beacons/\(groupBeacon)", token: carl).status == .notFound)
            #expect(try await client.call(.get, "/v1/beacons/\(groupBeacon)/directions?from_\(here.replacingOccurrences(of: "&", with: "&from_"))",
                                          token: carl).status == .notFound)
            #expect(!(try await client.call(.get, "/v1/nearby?\(here)", token: carl).featureIDs.contains(groupBeacon)))
            #expect(try await client.call(.get, "/v1/groups/nearby?\(here)", token: carl).features.isEmpty)
            #expect(try await client.call(.get, "/v1/groups/nearby?\(here)", token: bob).features.count == 1, "bob still sees it")
            let ownerView = try await client.call(.get, "/v1/beacons/\(groupBeacon)", token: ann)
            #expect(ownerView.json?["properties"]?["visibility"]?["members"]?.arrayValue?.contains(.string(carlID.rawValue)) == false)
            #expect(try await client.call(.get, "/v1/groups/\(id)", token: ann).json?["allowed"]?.arrayValue?
                        .contains(.string(carlID.rawValue)) == false)
            status = try await client.call(.get, "/v1/groups/\(id)", token: ann)
            #expect(member(status, carlID) == nil)
            let removal = try #require(try await client.eventList(bob).last)
            #expect(removal["type"] == "group.member_left" && removal["data"]?["reason"] == "removed")
            // … and is no longer shared: moving far away alerts nobody
            let before = try await client.eventList(ann).count
            #expect(try await client.report(carl, Walk.offset(start, north: 900), at: tick(10)).filter { $0.hasPrefix("group.") } == [])
            #expect(try await client.eventList(ann).count == before)

            // Leaving
            #expect(try await client.call(.post, "/v1/groups/\(id)/leave", token: dave).status == .noContent)
            #expect(try await client.call(.get, "/v1/groups/\(id)", token: dave).status == .notFound)
            #expect(try await client.call(.get, "/v1/beacons/\(groupBeacon)", token: dave).status == .notFound,
                    "leaving a closed group leaves its visibility group too")
            #expect(try await client.call(.post, "/v1/groups/\(id)/leave", token: ann).status == .conflict)
            #expect(try await client.call(.get, "/v1/groups", token: bob).json?["groups"]?.arrayValue?.count == 1)
        }
    }

    @Test(arguments: Backend.all, [
        (#"{"name":"g","range_m":0}"#, "range_m"),
        (#"{"name":"g"}"#, "range_m"),
        (#"{"name":"g","range_m":"far"}"#, "range_m"),
        (#"{"name":"g","range_m":100,"members":["bob"]}"#, "members[0]"),
        (#"{"name":"g","range_m":100,"members":["usr_ghost"]}"#, "members[0]"),
        (#"{"range_m":100}"#, "name"),
    ])
    func rejectsBadGroups(_ backend: Backend, _ example: (String, String)) async throws {
        let (body, path) = example
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/groups", token: ann, raw: body)
            #expect(r.status == .unprocessableContent, "\(r.text)")
            #expect(r.errorPath == path)
            #expect(try await client.call(.get, "/v1/groups", token: ann).json?["groups"] == [])
        }
    }
}
