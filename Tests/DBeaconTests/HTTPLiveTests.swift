import DBeaconCore
import DBeaconServices
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct HTTPLiveTests {
    @Test(arguments: Backend.all) func reportsFixesAndListsEvents(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (_, ann) = try await h.user("ann")
        let b = try await h.beacon(feature(name: "square", perimeter: circle(100)), owner: owner)
        try await h.app().test(.router) { client in
            let one = try await client.call(.post, "/v1/me/location", token: ann,
                                            json: ["lat": 48.7784, "lon": 9.18, "accuracy_m": 10, "timestamp": "2026-11-21T11:59:00Z"])
            #expect(one.status == .ok)
            #expect(one.json?["inside"] == [.string(b.id.rawValue)])
            #expect(one.json?["events"]?.arrayValue?.first?["type"] == "beacon.entered")
            let batch = try await client.call(.post, "/v1/me/location", token: ann, json: ["fixes": [
                ["lat": 48.79, "lon": 9.18, "timestamp": "2026-11-21T11:59:30Z"],
                ["lat": 48.7784, "lon": 9.18, "timestamp": "2026-11-21T11:58:00Z"],
            ]])
            #expect(batch.json?["accepted"] == 1 && batch.json?["ignored"] == 1)
            #expect(batch.json?["events"]?.arrayValue?.first?["type"] == "beacon.exited")

            let all = try await client.call(.get, "/v1/events", token: ann)
            let events = all.json?["events"]?.arrayValue ?? []
            #expect(events.compactMap { $0["type"]?.stringValue } == ["beacon.entered", "beacon.exited"])
            #expect(events.first?["id"]?.stringValue?.hasPrefix("evt_") == true)
            #expect(events.first?["recipient"] != nil && events.first?["created_at"] != nil && events.first?["data"] != nil)
            let after = try await client.call(.get, "/v1/events?after=\(events[0]["id"]!.stringValue!)", token: ann)
            #expect(after.json?["events"]?.arrayValue?.count == 1)
            #expect(after.json?["next_cursor"] == .null)
            let paged = try await client.call(.get, "/v1/events?limit=1", token: ann)
            let cursor = try #require(paged.json?["next_cursor"]?.stringValue)
            #expect(try await client.call(.get, "/v1/events?after=\(cursor)", token: ann).json?["events"]?.arrayValue?.count == 1)
            #expect(try await client.call(.get, "/v1/events", token: TestHarness.adminToken).json?["events"]?.arrayValue?.count == 2)
        }
    }

    /// A fix's answer names the beacons the user is inside that they may see: those covering
    /// the fix on the coverage lookup's word (what covers a viewer they may see), the others
    /// (held by the exit cushion) on the visibility rule; a hidden one is never named.
    @Test(arguments: Backend.all) func theInsideListNamesWhatTheUserMaySee(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let b = try await h.beacon(feature(name: "square", perimeter: circle(100)), owner: owner)
        let hidden = try await h.beacon(feature(name: "private", perimeter: circle(100), members: [owner]), owner: owner)
        try await h.app().test(.router) { client in
            let inside = try await client.call(.post, "/v1/me/location", token: annToken, json: ["lat": 48.7784, "lon": 9.18, "accuracy_m": 5])
            #expect(inside.json?["inside"] == [.string(b.id.rawValue)], "\(inside.text)")
            // 110 m north of the centre: 10 m outside the circle, within the 25 m cushion.
            let held = try await client.call(.post, "/v1/me/location", token: annToken,
                                             json: ["lat": .number(48.7784 + 110 / 111_200), "lon": 9.18, "accuracy_m": 5])
            #expect(held.json?["inside"] == [.string(b.id.rawValue)] && held.json?["events"] == [], "\(held.text)")
        }
        // The gate itself: a beacon named as covering is visible; the others are decided by the
        // rule; the answer keeps the order asked for.
        let gate = h.services.beacons.gate
        #expect(try await gate.visible([b.id, hidden.id], to: .user(ann), coveringNow: []) == [b.id])
        #expect(try await gate.visible([b.id, hidden.id], to: .user(ann), coveringNow: [b.id]) == [b.id])
        #expect(try await gate.visible([b.id, hidden.id], to: .user(owner), coveringNow: []) == [b.id, hidden.id])
        #expect(try await gate.visible([hidden.id, b.id], to: .user(owner), coveringNow: [b.id]) == [hidden.id, b.id])
        // Lists too long to compare pairwise go through sets, with the same answer.
        let absent = (0..<80).map { BeaconID(uncheckedRawValue: "bcn_absent\($0)") }
        let elsewhere = (0..<80).map { BeaconID(uncheckedRawValue: "bcn_elsewhere\($0)") }
        #expect(try await gate.visible([hidden.id] + absent.prefix(60) + [b.id], to: .user(ann),
                                       coveringNow: elsewhere + [b.id]) == [b.id])
        #expect(try await gate.visible([hidden.id] + absent.prefix(60) + [b.id], to: .user(owner),
                                       coveringNow: Array(absent.suffix(79))) == [hidden.id] + absent.dropFirst().prefix(59) + [b.id])
        #expect(try await gate.visibleIDs([b.id, hidden.id], to: .user(ann)) == [b.id])
    }

    @Test(arguments: Backend.all, [
        (#"{"lat":95,"lon":9,"timestamp":"2026-11-21T12:00:00Z"}"#, "lat"),
        (#"{"lat":48,"lon":NaN}"#, "lon"),
        (#"{"lat":48,"lon":9,"timestamp":"2027-01-01T00:00:00Z"}"#, "timestamp"),
        (#"{"lat":48,"lon":9,"accuracy_m":-1}"#, "accuracy_m"),
        (#"{"fixes":[{"lat":48,"lon":9},{"lat":48,"lon":200}]}"#, "fixes[1].lon"),
        (#"{"fixes":[]}"#, "fixes"),
        (#"{"lon":9}"#, "lat"),
    ])
    func rejectsBadFixes(_ backend: Backend, _ example: (String, String)) async throws {
        let (body, path) = example
        let h = try await TestHarness.make(backend: backend)
        let (ann, token) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/me/location", token: token, raw: body)
            #expect(r.status == .unprocessableContent, "\(r.text)")
            #expect(r.errorPath == path)
        }
        #expect(await h.fences.location(of: ann) == nil, "nothing is stored")
    }

    @Test(arguments: Backend.all) func backgroundServicesRunWithTheServer(_ backend: Backend) async throws {
        // A live server with its services: a new beacon around a standing user enters them
        // without any new fix (the change relay), and the admin token cannot report fixes.
        let h = try await TestHarness.make(backend: backend, start: Timestamp.now()) { $0.runBackgroundServices = true }
        let (_, ann) = try await h.user("ann")
        let (_, owner) = try await h.user("owner")
        try await h.app().test(.live) { client in
            _ = try await client.call(.post, "/v1/me/location", token: ann, json: ["lat": 48.7784, "lon": 9.18])
            #expect(try await client.call(.post, "/v1/me/location", token: TestHarness.adminToken, json: ["lat": 1, "lon": 1]).status == .forbidden)
            _ = try await client.call(.post, "/v1/beacons", token: owner, json: feature(name: "pop-up", perimeter: circle(80)))
            var types: [String] = []
            for _ in 0..<50 {
                types = (try await client.call(.get, "/v1/events", token: ann).json?["events"]?.arrayValue ?? []).compactMap { $0["type"]?.stringValue }
                if !types.isEmpty { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(types == ["beacon.entered"])
        }
    }
}
