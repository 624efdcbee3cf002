import DBeaconCore
import DBeaconServices
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Visit analytics (issue 14.5): aggregates of a beacon's entries and exits for its owner,
/// co-visit suggestions with a minimum of two shared visitors, and interests inferred for a user
/// from where they went. Never per-user trails.
@Suite(.bounded) struct VisitTests {
    @Test(arguments: Backend.all) func ownerSeesAggregatesOnly(_ backend: Backend) async throws {
        // Two shared visitors suffice here (the default, 5, is tested below).
        let h = try await TestHarness.make(backend: backend) { $0.alsoVisitedMinVisitors = 2 }  // 2026-11-21T12:00:00Z, a Saturday
        let (owner, ownerToken) = try await h.user("owner")
        let (u1, u1Token) = try await h.user("u1")
        let (u2, _) = try await h.user("u2")
        let (u3, _) = try await h.user("u3")
        let here = Walk.schlossplatz, museum = Walk.offset(here, north: 1000), away = Walk.offset(here, north: 500)
        let cafe = try await h.beacon(feature(name: "cafe", lat: here.lat, lon: here.lon, perimeter: circle(100), tags: ["food"]),
                                      owner: owner)
        let art = try await h.beacon(feature(name: "museum", lat: museum.lat, lon: museum.lon, perimeter: circle(100), tags: ["art"]),
                                     owner: owner)
        func at(_ time: String, _ user: UserID, _ p: Position) async throws {
            h.clock.set(Timestamp(rfc3339: "2026-11-21T\(time):00Z")!)
            _ = try await h.fix(user, lat: p.lat, lon: p.lon)
        }
        // u1: cafe 12:00–12:10, museum 12:20–12:30, cafe again 16:00–18:30.
        try await at("12:00", u1, here); try await at("12:10", u1, away)
        try await at("12:20", u1, museum); try await at("12:30", u1, away)
        // u2: cafe 13:00–13:45, then the museum (still there).
        try await at("13:00", u2, here); try await at("13:45", u2, away); try await at("14:00", u2, museum)
        // u3: in the cafe since 15:00.
        try await at("15:00", u3, here)
        try await at("16:00", u1, here); try await at("18:30", u1, away)

        try await h.app().test(.router) { client in
            let r = try await client.call(.get, "/v1/beacons/\(cafe.id)/visits", token: ownerToken)
            #expect(r.status == .ok)
            let v = try #require(r.json)
            #expect(v["visits"] == 4 && v["unique_visitors"] == 3 && v["ongoing"] == 1)
            // Completed dwells: 10 min, 45 min, 150 min.
            #expect(v["dwell"]?["completed"] == 3)
            #expect(v["dwell"]?["median_s"] == 2700)
            let mean = v["dwell"]?["mean_s"]?.numberValue ?? 0
            #expect(abs(mean - (600.0 + 2700 + 9000) / 3) < 1e-9)
            let histogram = (v["dwell"]?["histogram"]?.arrayValue ?? []).map { Int($0["visits"]?.numberValue ?? -1) }
            #expect(histogram == [0, 1, 0, 1, 0, 1])
            // Saturday = weekday 5 (Monday 0): entries at 12, 13, 15 and 16 h.
            let hours = try #require(v["hour_of_week"]?.arrayValue)
            #expect(hours.count == 168)
            #expect(hours[5 * 24 + 12] == 1 && hours[5 * 24 + 13] == 1 && hours[5 * 24 + 15] == 1 && hours[5 * 24 + 16] == 1)
            #expect(hours.compactMap(\.numberValue).reduce(0, +) == 4)
            // Two of the cafe's visitors also went to the museum: suggested as related.
            let also = (v["also_visited"]?.arrayValue ?? []).map { a in
                "\(a["beacon"]?.stringValue ?? ""):\(a["name"]?.stringValue ?? ""):\(Int(a["visitors"]?.numberValue ?? 0))"
            }
            #expect(also == ["\(art.id.rawValue):museum:2"])
            // No visitor ids anywhere in the answer.
            let text = JSONWriter.string(v)
            #expect(![u1, u2, u3].contains { text.contains($0.rawValue) })
            // The museum: two visits, one still open.
            let museumVisits = try await client.call(.get, "/v1/beacons/\(art.id)/visits", token: ownerToken).json
            #expect(museumVisits?["visits"] == 2 && museumVisits?["ongoing"] == 1)
            // Owner only: a visitor who sees the beacon gets 403; the operator may read it.
            #expect(try await client.call(.get, "/v1/beacons/\(cafe.id)/visits", token: u1Token).status == .forbidden)
            #expect(try await client.call(.get, "/v1/beacons/\(cafe.id)/visits", token: TestHarness.adminToken).status == .ok)

            // Interests inferred for u1 from where they went; accepting one takes it off the suggestions.
            func suggestions() async throws -> [String] {
                let items = try await client.call(.get, "/v1/me/interests/suggested", token: u1Token).json?["suggestions"]?.arrayValue ?? []
                return items.map { i in
                    "\(i["category"]?.stringValue ?? ""):\(Int(i["entries"]?.numberValue ?? 0)):\(Int(i["score"]?.numberValue ?? 0))"
                }
            }
            #expect(try await suggestions() == ["food:2:20", "art:1:10"])
            let accept: JSONValue = ["interests": ["food": 20]]
            #expect(try await client.call(.put, "/v1/me/interests", token: u1Token, json: accept).status == .ok)
            #expect(try await suggestions() == ["art:1:10"])
        }
    }

    /// Issue 26, defect 14: an owner and one sock-puppet account do not make two visitors; by
    /// default five visitors other than the owner, with accounts older than their visits, must
    /// share a beacon before it is offered.
    @Test(arguments: Backend.all) func alsoVisitedNeedsFiveRealVisitors(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let here = Walk.schlossplatz, elsewhere = Walk.offset(here, north: 2000), away = Walk.offset(here, north: 1000)
        let shop = try await h.beacon(feature(name: "shop", lat: here.lat, lon: here.lon, perimeter: circle(100)), owner: owner)
        let other = try await h.beacon(feature(name: "secret spot", lat: elsewhere.lat, lon: elsewhere.lon, perimeter: circle(100)),
                                       owner: owner)
        func visitBoth(_ user: UserID) async throws {
            h.clock.advance(seconds: 60); _ = try await h.fix(user, lat: here.lat, lon: here.lon)
            h.clock.advance(seconds: 60); _ = try await h.fix(user, lat: away.lat, lon: away.lon)
            h.clock.advance(seconds: 60); _ = try await h.fix(user, lat: elsewhere.lat, lon: elsewhere.lon)
            h.clock.advance(seconds: 60); _ = try await h.fix(user, lat: away.lat, lon: away.lon)
        }
        func alsoVisited() async throws -> [String] {
            try await h.app().test(.router) { client in
                let v = try await client.call(.get, "/v1/beacons/\(shop.id)/visits", token: ownerToken).json
                return (v?["also_visited"]?.arrayValue ?? []).compactMap { $0["beacon"]?.stringValue }
            }
        }
        let real = try await h.user("real").id
        try await visitBoth(real)
        // The owner walks the same way, with one sock puppet: still nothing to learn.
        try await visitBoth(owner)
        try await visitBoth(try await h.user("puppet").id)
        #expect(try await alsoVisited() == [])
        for i in 0..<2 { try await visitBoth(try await h.user("visitor\(i)").id) }
        #expect(try await alsoVisited() == [], "4 visitors besides the owner (who does not count)")
        try await visitBoth(try await h.user("visitor2").id)
        #expect(try await alsoVisited() == [other.id.rawValue])
    }

    /// Issue 26, defect 3: suggestions come from the beacons a user entered as they are now and
    /// only while the user may still see them: made private, then retagged, a beacon suggests nothing.
    @Test(arguments: Backend.all) func suggestionsForgetBeaconsNoLongerVisible(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (visitor, visitorToken) = try await h.user("visitor")
        let here = Walk.schlossplatz
        let club = try await h.beacon(feature(name: "club", lat: here.lat, lon: here.lon, perimeter: circle(100), tags: ["music"]),
                                      owner: owner)
        _ = try await h.fix(visitor, lat: here.lat, lon: here.lon)
        func suggested() async throws -> [String] {
            try await h.app().test(.router) { client in
                let items = try await client.call(.get, "/v1/me/interests/suggested", token: visitorToken).json?["suggestions"]?.arrayValue
                return (items ?? []).compactMap { $0["category"]?.stringValue }
            }
        }
        func patch(_ body: JSONValue) async throws -> HTTPResponse.Status {
            try await h.app().test(.router) { client in
                try await client.call(.patch, "/v1/beacons/\(club.id)", token: ownerToken, json: body).status
            }
        }
        #expect(try await suggested() == ["music"])
        #expect(try await patch(["properties": ["visibility": ["members": .array([])]]]) == .ok)
        #expect(try await patch(["properties": ["tags": ["gambling"]]]) == .ok)
        #expect(try await suggested() == [])
    }

    @Test func hourOfWeekStartsOnMonday() {
        #expect(VisitStats.hourOfWeek(Timestamp(rfc3339: "2026-11-23T00:30:00Z")!) == 0)       // Monday
        #expect(VisitStats.hourOfWeek(Timestamp(rfc3339: "2026-11-22T23:59:00Z")!) == 167)     // Sunday
        #expect(VisitStats.hourOfWeek(Timestamp(rfc3339: "1970-01-01T05:00:00Z")!) == 3 * 24 + 5)  // a Thursday
    }
}
