import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct HTTPBeaconTests {
    @Test(arguments: Backend.all) func everyV1CallNeedsAValidToken(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        try await h.app().test(.router) { client in
            let none = try await client.call(.get, "/v1/nearby?lat=48&lon=9")
            #expect(none.status == .unauthorized)
            #expect(none.errorCode == "unauthorized")
            #expect(none.headers[.wwwAuthenticate] == "Bearer")
            #expect(try await client.call(.get, "/v1/beacons", token: "wrong").status == .unauthorized)
            #expect(try await client.call(.get, "/healthz").json == .object(["status": "ok"]))
        }
    }

    @Test(arguments: Backend.all) func adminCreatesUsersAndUsersCannot(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/users", token: TestHarness.adminToken, json: ["name": "ann"])
            #expect(created.status == .created)
            let token = try #require(created.json?["token"]?.stringValue)
            #expect(created.json?["id"]?.stringValue?.hasPrefix("usr_") == true)
            let me = try await client.call(.get, "/v1/me", token: token)
            #expect(me.json?["id"] == created.json?["id"])
            #expect(try await client.call(.post, "/v1/users", token: token, json: ["name": "eve"]).status == .forbidden)
            #expect(try await client.call(.post, "/v1/users", token: TestHarness.adminToken, json: ["name": ""]).status == .unprocessableContent)
            // Lengths are counted as the schema counts them, in code points: 40 letters with two
            // combining marks each are 40 characters on screen but 120 code points, over 100.
            let marked = String(repeating: "e\u{0301}\u{0323}", count: 40)
            let tooLong = try await client.call(.post, "/v1/users", token: TestHarness.adminToken, json: ["name": .string(marked)])
            #expect(tooLong.status == .unprocessableContent)
            #expect(tooLong.json?["error"]?["path"] == "name" && tooLong.json?["error"]?["code"] == "too_long")
            let fits = String(repeating: "e\u{0301}", count: 50)
            #expect(try await client.call(.post, "/v1/users", token: TestHarness.adminToken, json: ["name": .string(fits)]).status == .created)
        }
    }

    @Test(arguments: Backend.all) func createGetPatchDeleteWithETags(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/beacons", token: ann,
                                                json: feature(name: "Lunch", tags: ["food"], lifetime: ("2026-11-21T11:00:00Z", "2026-11-21T14:00:00Z")))
            #expect(created.status == .created)
            #expect(created.headers[.eTag] == "\"1\"")
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(created.headers[.location] == "/v1/beacons/\(id)")

            let fetched = try await client.call(.get, "/v1/beacons/\(id)", token: ann)
            #expect(fetched.json == created.json)

            let stale = try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: ["properties": ["name": "x"]],
                                              headers: [.ifMatch: "\"7\""])
            #expect(stale.status == .preconditionFailed)

            let patched = try await client.call(.patch, "/v1/beacons/\(id)", token: ann,
                                                json: ["properties": ["name": "Late lunch", "lifetime": nil, "version": 99]],
                                                headers: [.ifMatch: "\"1\""])
            #expect(patched.status == .ok)
            #expect(patched.headers[.eTag] == "\"2\"")
            #expect(patched.json?["properties"]?["name"] == "Late lunch")
            #expect(patched.json?["properties"]?["lifetime"] == .null)
            #expect(patched.json?["properties"]?["version"] == 2)
            #expect(patched.json?["properties"]?["tags"] == ["food"])

            // The earlier ETag is now stale: a concurrent editor holding it gets 412, not a silent overwrite.
            let lost = try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: ["properties": ["name": "y"]],
                                             headers: [.ifMatch: "\"1\""])
            #expect(lost.status == .preconditionFailed)
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: ann).json?["properties"]?["name"] == "Late lunch")

            let notModified = try await client.call(.get, "/v1/beacons/\(id)", token: ann, headers: [.ifNoneMatch: "\"2\""])
            #expect(notModified.status == .notModified)

            #expect(try await client.call(.delete, "/v1/beacons/\(id)", token: ann, headers: [.ifMatch: "\"1\""]).status == .preconditionFailed)
            #expect(try await client.call(.delete, "/v1/beacons/\(id)", token: ann).status == .noContent)
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: ann).status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func serverOwnedFieldsCannotBeSet(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (annID, ann) = try await h.user("ann")
        let (benID, _) = try await h.user("ben")
        try await h.app().test(.router) { client in
            let claimed = try await client.call(.post, "/v1/beacons", token: ann,
                                                json: feature(extra: [("owner", .string(benID.rawValue)), ("version", 50), ("followers_count", 9)]))
            #expect(claimed.status == .unprocessableContent)
            #expect(claimed.errorPath == "properties.owner")
            let created = try await client.call(.post, "/v1/beacons", token: ann, json: feature(extra: [("version", 50), ("followers_count", 9)]))
            #expect(created.json?["properties"]?["version"] == 1)
            #expect(created.json?["properties"]?["followers_count"] == 0)
            #expect(created.json?["properties"]?["owner"] == .string(annID.rawValue))
            let id = try #require(created.json?["id"]?.stringValue)
            let steal = try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: ["properties": ["owner": .string(benID.rawValue)]])
            #expect(steal.status == .unprocessableContent)
            let rename = try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: ["id": "bcn_other"])
            #expect(rename.status == .unprocessableContent)
            #expect(rename.errorPath == "id")
        }
    }

    @Test(arguments: Backend.all) func privateAndExpiredBeaconsAreNotFoundForOthers(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        let (benID, ben) = try await h.user("ben")
        let (_, eve) = try await h.user("eve")
        try await h.app().test(.router) { client in
            let priv = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "secret", members: [benID]))
            let privID = try #require(priv.json?["id"]?.stringValue)
            let expired = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "old", lifetime: (nil, "2026-01-01T00:00:00Z")))
            let expiredID = try #require(expired.json?["id"]?.stringValue)
            let pub = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "public"))
            let pubID = try #require(pub.json?["id"]?.stringValue)

            // A non-member cannot learn the private beacon exists, whatever they try.
            for (method, path) in [(HTTPRequest.Method.get, ""), (.patch, ""), (.delete, ""), (.post, "/followers"),
                                   (.get, "/followers"), (.get, "/related"), (.get, "/directions?from_lat=48&from_lon=9")] {
                let r = try await client.call(method, "/v1/beacons/\(privID)\(path)", token: eve, json: method == .patch ? ["properties": ["name": "x"]] : nil)
                #expect(r.status == .notFound, "\(method) \(path)")
            }
            #expect(try await client.call(.get, "/v1/beacons/\(privID)", token: ben).status == .ok)
            #expect(try await client.call(.get, "/v1/beacons/\(expiredID)", token: ben).status == .notFound)
            #expect(try await client.call(.get, "/v1/beacons/\(expiredID)", token: ann).status == .ok)
            #expect(try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18", token: eve).featureIDs == [pubID])

            // Visible but not theirs: 403.
            #expect(try await client.call(.patch, "/v1/beacons/\(privID)", token: ben, json: ["properties": ["name": "x"]]).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/beacons/\(pubID)", token: eve).status == .forbidden)
            #expect(try await client.call(.get, "/v1/beacons/\(pubID)/followers", token: eve).status == .forbidden)
        }
    }

    @Test(arguments: Backend.all) func nearbyFiltersSortsAndMeasures(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            // Point of interest: 48.7784, 9.1800. Beacons east (closer) and north (farther), all covering it.
            let east = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "east", lat: 48.7784, lon: 9.1810, perimeter: circle(200), tags: ["food"]))
            let north = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "north", lat: 48.7800, lon: 9.1800, perimeter: circle(300), tags: ["shopping"]))
            _ = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "far", lat: 48.80, lon: 9.20, perimeter: circle(100), tags: ["food"]))
            _ = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "later", perimeter: circle(100), tags: ["food"],
                                                                                       lifetime: ("2026-11-22T00:00:00Z", nil)))
            let all = try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18", token: ann)
            #expect(all.features.compactMap { $0["properties"]?["name"]?.stringValue } == ["east", "north"])
            let first = try #require(all.features.first?["properties"])
            #expect(abs((first["distance_m"]?.numberValue ?? 0) - 73.4) < 0.5)
            #expect(abs((first["bearing_deg"]?.numberValue ?? 0) - 90) < 0.1)
            #expect(abs((all.features[1]["properties"]?["bearing_deg"]?.numberValue ?? 0) - 0) < 0.1)

            #expect(try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&tag=food", token: ann).featureIDs == [east.json!["id"]!.stringValue!])
            #expect(try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&tag=food&tag=shopping", token: ann).features.count == 2)
            // A comma list with empty items and spaces, as the schema's TagList pattern allows.
            #expect(try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&tag=,%20Food%20,,shopping,", token: ann).features.count == 2)
            #expect(try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&limit=1", token: ann).featureIDs == [east.json!["id"]!.stringValue!])
            let tomorrow = try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&tag=food&at=2026-11-22T10:00:00Z", token: ann)
            #expect(tomorrow.features.compactMap { $0["properties"]?["name"]?.stringValue } == ["later", "east"])
            // perimeter=none leaves perimeters out; anything else but full is a 400 naming it.
            #expect(all.features.allSatisfy { $0["properties"]?["perimeter"]?["type"] != nil })
            let lean = try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&perimeter=none", token: ann)
            #expect(lean.featureIDs == all.featureIDs)
            #expect(lean.features.allSatisfy { $0["properties"]?["perimeter"] == nil && $0["properties"]?["name"] != nil })
            #expect(try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&perimeter=full", token: ann).featureIDs == all.featureIDs)
            let bad = try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&perimeter=some", token: ann)
            #expect(bad.status == .badRequest)
            #expect(bad.errorPath == "perimeter")
            _ = north
        }
    }

    @Test(arguments: [
        ("/v1/nearby?lon=9", 400, "lat"), ("/v1/nearby?lat=abc&lon=9", 400, "lat"), ("/v1/nearby?lat=95&lon=9", 422, "lat"),
        ("/v1/nearby?lat=nan&lon=9", 422, "lat"), ("/v1/nearby?lat=48&lon=-181", 422, "lon"), ("/v1/nearby?lat=48&lon=9&limit=0", 400, "limit"),
        ("/v1/nearby?lat=48&lon=9&at=yesterday", 400, "at"), ("/v1/nearby?lat=48&lon=9&tag=a%20b", 422, "tag"), ("/v1/nearby?lat=48&lon=9&tag=%09food", 422, "tag"),
        ("/v1/beacons?cursor=zzz", 400, "cursor"), ("/v1/beacons?bbox=1,2,3", 400, "bbox"), ("/v1/beacons?bbox=0,50,1,40", 422, "bbox"),
        ("/v1/beacons?owner=bob", 400, "owner"),
    ])
    func rejectsBadParameters(_ uri: String, _ status: Int, _ path: String) async throws {
        let h = try await TestHarness.make()
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let r = try await client.call(.get, uri, token: ann)
            #expect(r.status.code == status)
            #expect(r.errorPath == path)
        }
    }

    @Test(arguments: Backend.all) func listsPagesAndFilters(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        let (_, ben) = try await h.user("ben")
        try await h.app().test(.router) { client in
            for i in 0..<7 {
                _ = try await client.call(.post, "/v1/beacons", token: i < 5 ? ann : ben, json: feature(name: "b\(i)", lon: 9 + Double(i) * 0.01, tags: i.isMultiple(of: 2) ? ["food"] : []))
            }
            var names: [String] = []
            var cursor: String?
            repeat {
                let r = try await client.call(.get, "/v1/beacons?limit=3" + (cursor.map { "&cursor=\($0)" } ?? ""), token: ann)
                #expect(r.json?["type"] == "FeatureCollection")
                names += r.features.compactMap { $0["properties"]?["name"]?.stringValue }
                cursor = r.json?["next_cursor"]?.stringValue
            } while cursor != nil
            #expect(names == (0..<7).map { "b\($0)" })
            let mine = try await client.call(.get, "/v1/beacons?owner=me&tag=food", token: ben)
            #expect(mine.features.compactMap { $0["properties"]?["name"]?.stringValue } == ["b6"])
            let boxed = try await client.call(.get, "/v1/beacons?bbox=9.015,48,9.035,49", token: ben)
            #expect(boxed.features.compactMap { $0["properties"]?["name"]?.stringValue } == ["b2", "b3"])
        }
    }

    @Test(arguments: Backend.all) func followersRelatedContentAndDirections(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (annID, ann) = try await h.user("ann")
        let (benID, ben) = try await h.user("ben")
        try await h.app().test(.router) { client in
            let a = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "stop A", lat: 48.78, lon: 9.18))
            let b = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "stop B", lat: 48.79, lon: 9.18))
            let hidden = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "hidden", members: []))
            let aID = a.json!["id"]!.stringValue!, bID = b.json!["id"]!.stringValue!, hiddenID = hidden.json!["id"]!.stringValue!
            let tour = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "tour", relationships: [
                .object(["type": "tour", "target": .string(bID), "order": 2]),
                .object(["type": "tour", "target": .string(aID), "order": 1]),
                .object(["type": "related", "target": .string(hiddenID)]),
            ]))
            let tourID = try #require(tour.json?["id"]?.stringValue)

            let related = try await client.call(.get, "/v1/beacons/\(tourID)/related?type=tour", token: ben)
            #expect(related.featureIDs == [aID, bID])
            #expect(related.features.first?["properties"]?["relationship"]?["order"] == 1)
            #expect(try await client.call(.get, "/v1/beacons/\(tourID)/related", token: ben).featureIDs == [aID, bID])
            #expect(try await client.call(.get, "/v1/beacons/\(tourID)/related", token: ann).featureIDs == [aID, bID, hiddenID])

            // Relating to a beacon the author cannot see is refused as if it did not exist.
            let (_, eve) = try await h.user("eve")
            let sneaky = try await client.call(.post, "/v1/beacons", token: eve, json: feature(relationships: [.object(["type": "related", "target": .string(hiddenID)])]))
            #expect(sneaky.status == .unprocessableContent)
            #expect(sneaky.errorPath == "properties.relationships[0].target")

            let follow = try await client.call(.post, "/v1/beacons/\(aID)/followers", token: ben)
            #expect(follow.status == .created)
            #expect(follow.json?["followers_count"] == 1)
            #expect(try await client.call(.post, "/v1/beacons/\(aID)/followers", token: ben).status == .ok)
            let followers = try await client.call(.get, "/v1/beacons/\(aID)/followers", token: ann)
            #expect(followers.json?["followers"]?.arrayValue?.first?["id"] == .string(benID.rawValue))
            #expect(try await client.call(.get, "/v1/beacons/\(aID)", token: ann).json?["properties"]?["followers_count"] == 1)
            #expect(try await client.call(.delete, "/v1/beacons/\(aID)/followers/me", token: ben).status == .noContent)
            #expect(try await client.call(.get, "/v1/beacons/\(aID)", token: ann).json?["properties"]?["followers_count"] == 0)

            let content = try await client.call(.post, "/v1/beacons/\(aID)/content", token: ann,
                                                json: ["kind": "image", "url": "https://example.com/a.jpg", "title": "Front"])
            #expect(content.status == .created)
            #expect(content.json?["properties"]?["content"]?.arrayValue?.first?["added_by"] == .string(annID.rawValue))
            #expect(content.json?["properties"]?["version"] == 2)
            #expect(try await client.call(.post, "/v1/beacons/\(aID)/content", token: ben, json: ["kind": "image", "url": "https://x.org/b"]).status == .forbidden)
            #expect(try await client.call(.post, "/v1/beacons/\(aID)/content", token: ann, json: ["kind": "image", "url": "ftp://x"]).status == .unprocessableContent)

            let directions = try await client.call(.get, "/v1/beacons/\(bID)/directions?from_lat=48.78&from_lon=9.18", token: ben)
            #expect(abs((directions.json?["distance_m"]?.numberValue ?? 0) - 1111.8) < 1)
            #expect(abs(directions.json?["bearing_deg"]?.numberValue ?? 99) < 0.01)
            #expect(directions.json?["walking_eta_s"] == .int(Int((1111.8 / 1.4).rounded())) || directions.json?["walking_eta_s"] == .int(794))
            #expect(directions.json?["geo_uri"] == "geo:48.79,9.18")
        }
    }

    @Test(arguments: Backend.all) func invalidInputCorpusIsRejectedWithoutSideEffects(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let kept = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "kept"))
            let keptID = try #require(kept.json?["id"]?.stringValue)
            for c in invalidBeaconCorpus {
                let r = try await client.call(.post, "/v1/beacons", token: ann, raw: c.body)
                #expect(r.status == .unprocessableContent, "\(c.name)")
                #expect(r.errorCode == c.code, "\(c.name): \(r.text)")
                #expect(r.errorPath == c.path, "\(c.name): \(r.text)")
                // The same invalid content as a patch leaves the stored beacon untouched. (A body that
                // only lacks a member is a valid merge patch: the member keeps its value.)
                if c.code == "missing_field" { continue }
                let patch = try await client.call(.patch, "/v1/beacons/\(keptID)", token: ann, raw: c.body)
                #expect(patch.status.code >= 400 && patch.status.code < 500, "\(c.name) as patch")
            }
            for raw in ["{", "[1,2", "not json", "{\"type\":\"Feature\",}", ""] {
                let r = try await client.call(.post, "/v1/beacons", token: ann, raw: raw)
                #expect(r.status == .badRequest, "\(raw)")
                #expect(r.json?["error"]?["message"]?.stringValue != nil)
            }
            let huge = "{\"type\":\"Feature\",\"properties\":{\"name\":\"" + String(repeating: "x", count: 1 << 21) + "\"}}"
            #expect(try await client.call(.post, "/v1/beacons", token: ann, raw: huge).status == .contentTooLarge)
            #expect(try await client.call(.patch, "/v1/beacons/\(keptID)", token: ann, json: [1, 2]).status == .unprocessableContent)

            #expect(try await h.store.beaconCount() == 1)
            let after = try await client.call(.get, "/v1/beacons/\(keptID)", token: ann)
            #expect(after.json == kept.json)
            #expect(try await client.call(.get, "/healthz").status == .ok)
        }
    }

    @Test(arguments: Backend.all) func unknownRoutesAndOperationsEndpoints(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        try await h.app().test(.router) { client in
            let missing = try await client.call(.get, "/v1/nothing", token: TestHarness.adminToken)
            #expect(missing.status == .notFound)
            #expect(missing.errorCode == "not_found")
            let spec = try await client.call(.get, "/openapi.yaml")
            #expect(spec.status == .ok)
            #expect(spec.text.contains("openapi: 3"))
            _ = try await client.call(.get, "/v1/beacons", token: TestHarness.adminToken)
            // /metrics counts private beacons too: operator data, behind the admin token
            // (defect 10 of issue 26).
            #expect(try await client.call(.get, "/metrics").status == .unauthorized)
            #expect(try await client.call(.get, "/metrics", token: "not-a-token").status == .unauthorized)
            let ann = try await h.user("ann").token
            #expect(try await client.call(.get, "/metrics", token: ann).status == .unauthorized, "a user's token is not enough")
            let metrics = try await client.call(.get, "/metrics", token: TestHarness.adminToken)
            #expect(metrics.text.contains("dbeacon_http_requests_total"))
            #expect(metrics.text.contains("dbeacon_beacons_count"))
        }
    }

    @Test(arguments: Backend.all) func servesOverARealSocket(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.live) { client in
            let created = try await client.call(.post, "/v1/beacons", token: ann, json: feature(name: "live", tags: ["food"]))
            #expect(created.status == .created)
            let nearby = try await client.call(.get, "/v1/nearby?lat=48.7784&lon=9.18&tag=food", token: ann)
            #expect(nearby.features.count == 1)
        }
    }
}
