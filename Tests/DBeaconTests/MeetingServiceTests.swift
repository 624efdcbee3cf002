import DBeaconCore
import DBeaconGeo
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct MeetingServiceTests {
    @Test(arguments: Backend.all) func meetingLifecycleReachesAttendeesAsEvents(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)  // 2026-11-21T12:00Z
        let (_, ann) = try await h.user("ann")
        let (bobID, bob) = try await h.user("bob")
        let (_, carl) = try await h.user("carl")
        let spot = Walk.schlossplatz
        let inside = Walk.offset(spot, north: 120)
        let outside = Walk.offset(spot, north: 400)
        try await h.app().test(.router) { client in
            // Given a meeting that starts in 30 minutes, discoverable within 200 m
            let created = try await client.call(.post, "/v1/meetings", token: ann, json: [
                "name": "Lunch meet-up", "description": "Maultaschen", "location": Walk.latLon(spot),
                "perimeter": ["type": "Circle", "radius_m": 200],
                "start": "2026-11-21T12:30:00Z", "end": "2026-11-21T14:00:00Z",
            ])
            #expect(created.status == .created, "\(created.text)")
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(created.json?["properties"]?["service"] == "meeting")
            #expect(created.json?["properties"]?["tags"] == ["meeting"])
            #expect(created.headers[.location] == "/v1/meetings/\(id)")

            // Before the start only the organizer sees it
            let near = "/v1/meetings/nearby?lat=\(inside.lat)&lon=\(inside.lon)"
            #expect(try await client.call(.get, near, token: bob).featureIDs == [])
            #expect(try await client.call(.get, "/v1/meetings/\(id)", token: ann).status == .ok)
            #expect(try await client.call(.get, "/v1/meetings", token: ann).featureIDs == [id])
            #expect(try await client.call(.get, "/v1/meetings/\(id)", token: bob).status == .notFound)
            #expect(try await client.call(.post, "/v1/meetings/\(id)/join", token: bob).status == .notFound)

            // During its lifetime people inside the discovery region find it; outside they do not
            h.clock.advance(seconds: 31 * 60)
            let found = try await client.call(.get, near, token: bob)
            #expect(found.featureIDs == [id])
            #expect(abs((found.features.first?["properties"]?["distance_m"]?.numberValue ?? 0) - 120) < 1)
            #expect(try await client.call(.get, "/v1/meetings/nearby?lat=\(outside.lat)&lon=\(outside.lon)", token: bob).featureIDs == [])

            // Joining subscribes the attendee (201 first, 200 again)
            let joined = try await client.call(.post, "/v1/meetings/\(id)/join", token: bob)
            #expect(joined.status == .created, "\(joined.text)")
            #expect(joined.json?["participants_count"] == 1 && joined.json?["user"] == .string(bobID.rawValue))
            #expect(try await client.call(.post, "/v1/meetings/\(id)/join", token: bob).status == .ok)
            let asOrganizer = try await client.call(.get, "/v1/meetings/\(id)", token: ann)
            #expect(asOrganizer.json?["properties"]?["meeting"]?["attendees"]?.arrayValue?.first?["id"] == .string(bobID.rawValue))
            let asBob = try await client.call(.get, "/v1/meetings/\(id)", token: bob)
            #expect(asBob.json?["properties"]?["meeting"]?["joined"] == true)
            #expect(asBob.json?["properties"]?["meeting"]?["attendees"] == nil, "attendee list is the organizer's")

            // Directions to the exact spot
            let d = try await client.call(.get, "/v1/meetings/\(id)/directions?lat=\(inside.lat)&lon=\(inside.lon)", token: bob)
            #expect(abs((d.json?["distance_m"]?.numberValue ?? 0) - 120) < 1)
            #expect(abs((d.json?["bearing_deg"]?.numberValue ?? 0) - 180) < 1)
            #expect(d.json?["walking_eta_s"] == 86)
            #expect(d.json?["geo_uri"] == .string("geo:\(spot.lat),\(spot.lon)"))

            // The organizer moves the spot and edits the description: attendees hear the changes
            let moved = Walk.offset(spot, east: 60)
            let patched = try await client.call(.patch, "/v1/meetings/\(id)", token: ann, json: [
                "location": Walk.latLon(moved), "description": "Maultaschen at the fountain",
            ])
            #expect(patched.status == .ok, "\(patched.text)")
            // … and shifts the time
            #expect(try await client.call(.patch, "/v1/meetings/\(id)", token: ann, json: ["end": "2026-11-21T15:00:00Z"]).status == .ok)
            let updates = try await client.eventList(bob).filter { $0["type"] == "meeting.updated" }
            #expect(updates.count == 2)
            #expect(updates.first?["data"]?["changed"] == ["description", "location"])
            #expect(updates.first?["data"]?["values"]?["description"] == "Maultaschen at the fountain")
            #expect(updates.first?["data"]?["values"]?["location"]?["coordinates"] == [.number(moved.lon), .number(moved.lat)])
            #expect(updates.last?["data"]?["changed"] == ["lifetime"])
            #expect(updates.last?["data"]?["values"]?["lifetime"]?["end"] == "2026-11-21T15:00:00.000Z")
            #expect(try await client.eventTypes(carl).isEmpty, "only attendees are told")
            #expect(try await client.eventTypes(bob).allSatisfy { $0.hasPrefix("meeting.") }, "no duplicate beacon.updated")

            // Only the organizer edits; bad input names the field and changes nothing
            #expect(try await client.call(.patch, "/v1/meetings/\(id)", token: bob, json: ["name": "mine"]).status == .forbidden)
            let bad = try await client.call(.patch, "/v1/meetings/\(id)", token: ann, json: ["end": "2026-11-21T12:10:00Z"])
            #expect(bad.status == .unprocessableContent && bad.errorPath == "end")
            let badPerimeter = try await client.call(.patch, "/v1/meetings/\(id)", token: ann,
                                                     json: ["perimeter": ["type": "Circle", "radius_m": -5]])
            #expect(badPerimeter.status == .unprocessableContent && badPerimeter.errorPath?.hasPrefix("perimeter") == true)
            #expect(try await client.eventList(bob).count == 2)

            // Cancelling sends meeting.cancelled and the meeting is gone
            #expect(try await client.call(.delete, "/v1/meetings/\(id)", token: bob).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/meetings/\(id)", token: ann).status == .noContent)
            let last = try await client.eventList(bob).last
            #expect(last?["type"] == "meeting.cancelled" && last?["data"]?["beacon"] == .string(id))
            #expect(try await client.call(.get, "/v1/meetings/\(id)", token: bob).status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func meetingDisappearsAfterItsEnd(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        let (_, bob) = try await h.user("bob")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/meetings", token: ann, json: [
                "name": "Coffee", "location": Walk.latLon(Walk.schlossplatz),
                "start": "2026-11-21T11:00:00Z", "end": "2026-11-21T12:30:00Z",
            ])
            let id = try #require(created.json?["id"]?.stringValue)
            let near = "/v1/meetings/nearby?lat=\(Walk.schlossplatz.lat)&lon=\(Walk.schlossplatz.lon)"
            #expect(try await client.call(.get, near, token: bob).featureIDs == [id])
            #expect(try await client.call(.get, "/v1/meetings", token: ann).featureIDs == [id])
            h.clock.advance(seconds: 31 * 60)
            #expect(try await client.call(.get, near, token: bob).featureIDs == [])
            #expect(try await client.call(.get, "/v1/meetings/\(id)", token: bob).status == .notFound)
        }
    }

    /// Invitations (issue 14.6): an invitee sees and joins an upcoming private meeting before it
    /// starts (others, and nearby, only once it runs); invitees and attendees get
    /// `meeting.starting` once, the reminder lead time before the start; un-invited ones do not.
    @Test(arguments: Backend.all) func inviteesSeeUpcomingMeetingsAndAreReminded(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)  // now: 2026-11-21T12:00:00Z
        let (_, ann) = try await h.user("ann")
        let (bobID, bob) = try await h.user("bob")
        let (cleoID, cleo) = try await h.user("cleo")
        let (_, carl) = try await h.user("carl")
        try await h.services.ticker.tickOnce()
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/meetings", token: ann, json: [
                "name": "Dinner", "location": Walk.latLon(Walk.schlossplatz), "perimeter": ["type": "Circle", "radius_m": 300],
                "start": "2026-11-21T13:00:00Z", "end": "2026-11-21T15:00:00Z",
                "invitees": [.string(bobID.rawValue), .string(cleoID.rawValue)],
            ])
            let id = try #require(created.json?["id"]?.stringValue)
            // Before the start: invitees read and join it; a stranger does not see it; nearby shows it to nobody but the organizer.
            #expect(try await client.call(.get, "/v1/meetings/\(id)", token: bob).status == .ok)
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: cleo).status == .ok)
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: carl).status == .notFound)
            #expect(try await client.call(.post, "/v1/meetings/\(id)/join", token: bob).status == .created)
            #expect(try await client.call(.post, "/v1/meetings/\(id)/join", token: carl).status == .notFound)
            let near = "/v1/nearby?lat=\(Walk.schlossplatz.lat)&lon=\(Walk.schlossplatz.lon)"
            #expect(try await client.call(.get, near, token: bob).featureIDs == [])
            #expect(try await client.call(.get, near + "&at=2026-11-21T13:30:00Z", token: bob).featureIDs == [],
                    "at only narrows what the caller sees now: the meeting covers its place once it runs")
            #expect(try await client.call(.get, "/v1/beacons?owner=\(try #require(created.json?["properties"]?["owner"]?.stringValue))",
                                          token: cleo).featureIDs == [id])

            // 12:44: not yet due (15 minutes ahead of 13:00 is 12:45).
            h.clock.set(Timestamp(rfc3339: "2026-11-21T12:44:00Z")!)
            try await h.services.ticker.tickOnce()
            #expect(try await client.eventTypes(bob, prefix: "meeting.starting").isEmpty)
            // Cleo is un-invited before the reminder.
            #expect(try await client.call(.patch, "/v1/meetings/\(id)", token: ann,
                                          json: ["invitees": [.string(bobID.rawValue)]]).status == .ok)
            h.clock.set(Timestamp(rfc3339: "2026-11-21T12:46:00Z")!)
            try await h.services.ticker.tickOnce()
            try await h.services.ticker.tickOnce()  // a second tick (or node) sends nothing again
            let reminders = try await client.eventList(bob).filter { $0["type"] == "meeting.starting" }
            #expect(reminders.count == 1)
            #expect(reminders.first?["data"]?["start"] == "2026-11-21T13:00:00.000Z" && reminders.first?["data"]?["starts_in_s"] == 900)
            #expect(try await client.eventTypes(cleo, prefix: "meeting.starting").isEmpty)
            #expect(try await client.eventTypes(carl).isEmpty)
            #expect(try await client.eventTypes(ann, prefix: "meeting.starting").isEmpty)
            // After the end, the invitee no longer sees it.
            h.clock.set(Timestamp(rfc3339: "2026-11-21T15:00:00Z")!)
            #expect(try await client.call(.get, "/v1/meetings/\(id)", token: bob).status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func privateMeetingIsForInviteesOnly(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        let (bobID, bob) = try await h.user("bob")
        let (_, carl) = try await h.user("carl")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/meetings", token: ann, json: [
                "name": "Birthday", "location": Walk.latLon(Walk.schlossplatz), "perimeter": ["type": "Circle", "radius_m": 300],
                "start": "2026-11-21T11:00:00Z", "end": "2026-11-21T18:00:00Z", "invitees": [.string(bobID.rawValue)],
            ])
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(created.json?["properties"]?["visibility"]?["members"] == [.string(bobID.rawValue)])
            let near = "/v1/meetings/nearby?lat=\(Walk.schlossplatz.lat)&lon=\(Walk.schlossplatz.lon)"
            #expect(try await client.call(.get, near, token: carl).featureIDs == [])
            #expect(try await client.call(.post, "/v1/meetings/\(id)/join", token: carl).status == .notFound)
            #expect(try await client.call(.get, near, token: bob).featureIDs == [id])
            #expect(try await client.call(.post, "/v1/meetings/\(id)/join", token: bob).status == .created)

            // Un-inviting drops the attendee: no more updates, no more access
            #expect(try await client.eventTypes(bob) == ["meeting.invited"])
            let uninvite = try await client.call(.patch, "/v1/meetings/\(id)", token: ann, json: ["invitees": []])
            #expect(uninvite.status == .ok)
            #expect(uninvite.json?["properties"]?["followers_count"] == 0, "the answer counts the dropped attendee out")
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: ann).json?["properties"]?["followers_count"] == 0)
            #expect(try await client.call(.get, "/v1/meetings/\(id)", token: bob).status == .notFound)
            #expect(try await client.call(.patch, "/v1/meetings/\(id)", token: ann, json: ["name": "Party"]).status == .ok)
            #expect(try await client.eventTypes(bob) == ["meeting.uninvited"],
                    "bob hears of the un-invite; the invitation and what follows are no longer his to read")
            let notice = try #require(try await client.eventList(bob).last)
            #expect(notice["data"]?["meeting"] == .string(id) && notice["data"]?["name"] == "Birthday")
            let view = try await client.call(.get, "/v1/meetings/\(id)", token: ann)
            #expect(view.json?["properties"]?["meeting"]?["attendees_count"] == 0)
        }
    }

    @Test(arguments: Backend.all, [
        (#"{"name":"x","start":"2026-11-21T12:00:00Z","end":"2026-11-21T13:00:00Z"}"#, "location"),
        (#"{"name":"x","location":{"lat":95,"lon":9},"start":"2026-11-21T12:00:00Z","end":"2026-11-21T13:00:00Z"}"#, "location.lat"),
        (#"{"name":"x","location":{"lat":48,"lon":9},"start":"2026-11-21T12:00:00Z","end":"2026-11-21T11:00:00Z"}"#, "end"),
        (#"{"name":"x","location":{"lat":48,"lon":9},"start":"2026-11-21T10:00:00Z","end":"2026-11-21T11:00:00Z"}"#, "end"),
        (#"{"name":"x","location":{"lat":48,"lon":9},"start":"2026-11-21T12:00:00Z","end":"2026-11-21T13:00:00Z","invitees":["bob"]}"#, "invitees[0]"),
        (#"{"name":"x","location":{"lat":48,"lon":9},"start":"2026-11-21T12:00:00Z","end":"2026-11-21T13:00:00Z","invitees":["usr_nobody"]}"#, "invitees[0]"),
        (#"{"name":"x","location":{"lat":48,"lon":9},"start":"soon","end":"2026-11-21T13:00:00Z"}"#, "start"),
        (#"{"name":"x","location":{"lat":48,"lon":9},"start":"2026-11-21T12:00:00Z","end":"2026-11-21T13:00:00Z","perimeter":{"type":"Polygon","coordinates":[[[9,48],[9.1,48],[9,48.1],[9.1,48.1],[9,48]]]}}"#, "perimeter"),
        (#"{"name":"x","location":{"lat":48,"lon":9},"start":"2026-11-21T12:00:00Z","end":"2026-11-21T13:00:00Z","colour":"red"}"#, "colour"),
    ])
    func rejectsBadMeetings(_ backend: Backend, _ example: (String, String)) async throws {
        let (body, path) = example
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/meetings", token: ann, raw: body)
            #expect(r.status == .unprocessableContent, "\(r.text)")
            #expect(r.errorPath?.hasPrefix(path) == true, "\(r.text)")
            #expect(try await client.call(.get, "/v1/meetings", token: ann).featureIDs == [], "nothing stored")
        }
    }

    @Test(arguments: Backend.all) func sampleMeetingsAnswer(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.samplesDirectory = samplesDirectory }
        try await h.app().test(.router) { client in
            // Lena's guide meeting point at the Jubiläumssäule, alive 2025–2030, public
            let r = try await client.call(.get, "/v1/meetings/nearby?lat=48.7784&lon=9.1800", token: "demo-token-chen")
            #expect(r.featureIDs.contains("bcn_meet_guide_jubilaeumssaeule"), "\(r.text)")
            #expect(try await client.call(.post, "/v1/meetings/bcn_meet_guide_jubilaeumssaeule/join", token: "demo-token-chen").status
                == .created)
            // A private sample meeting stays hidden from non-members
            #expect(try await client.call(.get, "/v1/meetings/bcn_meet_running_club", token: "demo-token-chen").status == .notFound)
            #expect(try await client.call(.get, "/v1/meetings/bcn_meet_running_club", token: "demo-token-anna").status == .ok)
            // A non-meeting beacon is not a meeting
            #expect(try await client.call(.get, "/v1/meetings/bcn_markthalle", token: "demo-token-anna").status == .notFound)
        }
    }
}

/// The repository's `samples/` folder.
let samplesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("samples").path
