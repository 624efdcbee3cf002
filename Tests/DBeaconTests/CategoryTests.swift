import DBeaconCore
import Foundation
import Testing

/// Categories (issue 14.8): the tags in use with counts over what the caller may see, and
/// following a category to hear of new beacons with that tag near one's last location.
@Suite(.bounded) struct CategoryTests {
    @Test(arguments: Backend.all) func countsOnlyWhatTheCallerMaySee(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let (_, benToken) = try await h.user("ben")
        try await h.beacon(feature(name: "kiosk", tags: ["food"]), owner: owner)
        try await h.beacon(feature(name: "stall", lat: 48.70, tags: ["food", "market"]), owner: owner)
        try await h.beacon(feature(name: "club", tags: ["food", "secret"], members: [ann]), owner: owner)
        try await h.beacon(feature(name: "tomorrow", tags: ["food", "later"], lifetime: ("2026-11-22T10:00:00Z", nil)), owner: owner)
        try await h.app().test(.router) { client in
            func counts(_ token: String, _ query: String = "") async throws -> [String: Int] {
                let r = try await client.call(.get, "/v1/tags\(query)", token: token)
                #expect(r.status == .ok)
                var out: [String: Int] = [:]
                for t in r.json?["tags"]?.arrayValue ?? [] { out[t["tag"]!.stringValue!] = Int(t["count"]!.numberValue!) }
                return out
            }
            // Ben: public, alive beacons only.
            #expect(try await counts(benToken) == ["food": 2, "market": 1])
            // Ann is a member of the private club.
            #expect(try await counts(annToken) == ["food": 3, "market": 1, "secret": 1])
            // The owner sees their own upcoming beacon; the operator sees everything.
            #expect(try await counts(ownerToken) == ["food": 4, "market": 1, "secret": 1, "later": 1])
            #expect(try await counts(TestHarness.adminToken) == ["food": 4, "market": 1, "secret": 1, "later": 1])
            // Most used first, then by name; bbox and limit.
            let ordered = try await client.call(.get, "/v1/tags", token: annToken).json?["tags"]?.arrayValue?.compactMap { $0["tag"]?.stringValue }
            #expect(ordered == ["food", "market", "secret"])
            #expect(try await counts(benToken, "?bbox=9.1,48.75,9.3,48.8") == ["food": 1])
            #expect(try await client.call(.get, "/v1/tags?limit=1", token: annToken).json?["tags"]?.arrayValue?.count == 1)
            #expect(try await client.call(.get, "/v1/tags?bbox=1,2,3", token: annToken).status == .badRequest)
        }
    }

    @Test(arguments: Backend.all) func followersHearOfNewBeaconsNearThem(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let (ben, benToken) = try await h.user("ben")
        let (cid, cidToken) = try await h.user("cid")
        // Ann and Ben stand at the square; Cid is 20 km away.
        _ = try await h.fix(ann, lat: 48.7784, lon: 9.18)
        _ = try await h.fix(ben, lat: 48.7784, lon: 9.18)
        _ = try await h.fix(cid, lat: 48.96, lon: 9.18)
        try await h.app().test(.router) { client in
            let follow = try await client.call(.put, "/v1/me/tags/Food", token: annToken, json: ["radius_m": 1500])
            #expect(follow.status == .created)
            #expect(follow.json?["tag"] == "food" && follow.json?["radius_m"] == 1500)
            #expect(try await client.call(.put, "/v1/me/tags/food", token: benToken).status == .created) // default radius
            #expect(try await client.call(.put, "/v1/me/tags/food", token: cidToken).status == .created)
            #expect(try await client.call(.put, "/v1/me/tags/food", token: benToken, json: ["radius_m": 800]).status == .ok)
            #expect(try await client.call(.get, "/v1/me/tags", token: benToken).json?["follows"]?.arrayValue?.first?["radius_m"] == 800)

            // A public food beacon 1 km north: Ann (1,500 m) hears of it; Ben (800 m) and Cid (far) do not.
            let north = try await client.call(.post, "/v1/beacons", token: ownerToken,
                                              json: feature(name: "new kiosk", lat: 48.7874, tags: ["food", "drinks"]))
            #expect(north.status == .created)
            let northID = try #require(north.json?["id"]?.stringValue)
            // A private food beacon at the square, for Ben only; an untagged one; the owner's own follow.
            _ = try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(name: "members", tags: ["food"], members: [ben]))
            _ = try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(name: "plain"))
            // Not yet alive: nobody hears of it now.
            _ = try await client.call(.post, "/v1/beacons", token: ownerToken,
                                      json: feature(name: "later", tags: ["food"], lifetime: ("2026-11-22T10:00:00Z", nil)))

            func created(_ user: UserID) async throws -> [Event] { try await h.events(user).filter { $0.type == .created } }
            let annEvents = try await created(ann)
            // Only the kiosk: Ann is not a member of the private one.
            #expect(annEvents.map(\.beacon?.rawValue) == [northID])
            #expect(annEvents.first?.data["tags"] == ["food"])
            #expect((annEvents.first?.data["distance_m"]?.numberValue ?? 0) > 900)
            #expect(try await created(ben).map { $0.data["name"]?.stringValue } == ["members"])
            #expect(try await created(cid).isEmpty)
            #expect(try await created(owner).isEmpty)

            // Unfollowing stops it; unfollowing again is 404; bad tags and radii are 422 naming the field.
            #expect(try await client.call(.delete, "/v1/me/tags/food", token: annToken).status == .noContent)
            #expect(try await client.call(.delete, "/v1/me/tags/food", token: annToken).status == .notFound)
            _ = try await client.call(.post, "/v1/beacons", token: ownerToken, json: feature(name: "another", tags: ["food"]))
            #expect(try await created(ann).count == annEvents.count)
            let badTag = try await client.call(.put, "/v1/me/tags/no%20spaces", token: annToken)
            #expect(badTag.status == .unprocessableContent && badTag.errorPath == "tag")
            let badRadius = try await client.call(.put, "/v1/me/tags/food", token: annToken, json: ["radius_m": 60000])
            #expect(badRadius.status == .unprocessableContent && badRadius.errorPath == "radius_m")
            let null = try await client.call(.put, "/v1/me/tags/food", token: annToken, json: ["radius_m": .null])
            #expect(null.status == .unprocessableContent && null.errorPath == "radius_m")
            let unknown = try await client.call(.put, "/v1/me/tags/food", token: annToken, json: ["radius": 10])
            #expect(unknown.status == .unprocessableContent && unknown.errorPath == "radius")
            #expect(try await client.call(.put, "/v1/me/tags/food", token: TestHarness.adminToken).status == .forbidden)
        }
    }
}
