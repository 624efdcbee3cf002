import DBeaconCore
import Foundation
import Testing

/// Content that can grow (issue 14.7): visitors add content where the owner's
/// `content_policy` allows it, and the owner moderates (deletes) it.
@Suite(.bounded) struct ContentPolicyTests {
    @Test(arguments: Backend.all) func policyDecidesWhoAddsAndTheOwnerModerates(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, owner) = try await h.user("owner")
        let (_, fan) = try await h.user("fan")
        let (_, passer) = try await h.user("passer")
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/beacons", token: owner, json: feature(name: "wall"))
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(created.json?["properties"]?["content_policy"] == "owner")
            let item: JSONValue = ["kind": "image", "url": "https://example.org/fan.jpg"]
            func add(_ token: String) async throws -> JSONResponse {
                try await client.call(.post, "/v1/beacons/\(id)/content", token: token, json: item)
            }
            // owner (default): only the owner adds.
            #expect(try await add(fan).status == .forbidden)
            // followers: the fan follows and may add; the passer-by may not.
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: owner,
                                          json: ["properties": ["content_policy": "followers"]]).status == .ok)
            _ = try await client.call(.post, "/v1/beacons/\(id)/followers", token: fan)
            let added = try await add(fan)
            #expect(added.status == .created)
            #expect(added.json?["properties"]?["content"]?.arrayValue?.last?["added_by"] != nil)
            #expect(try await add(passer).status == .forbidden)
            // anyone: the passer-by too.
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: owner,
                                          json: ["properties": ["content_policy": "anyone"]]).status == .ok)
            #expect(try await add(passer).status == .created)
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: fan).json?["properties"]?["content"]?.arrayValue?.count == 2)

            // Deleting: the passer may not delete the fan's item (0), but their own (1); the owner moderates any.
            #expect(try await client.call(.delete, "/v1/beacons/\(id)/content/0", token: passer).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/beacons/\(id)/content/1", token: passer).status == .ok)
            let moderated = try await client.call(.delete, "/v1/beacons/\(id)/content/0", token: owner)
            #expect(moderated.status == .ok && moderated.json?["properties"]?["content"] == [])
            #expect(try await client.call(.delete, "/v1/beacons/\(id)/content/0", token: owner).status == .notFound)
            #expect(try await client.call(.delete, "/v1/beacons/\(id)/content/x", token: owner).status == .notFound)
            // The fan, a follower, heard of each change.
            let fanID = try #require(try await client.call(.get, "/v1/me", token: fan).json?["id"]?.stringValue.flatMap(UserID.init))
            let changes = try await h.events(fanID).filter { $0.type == .updated }.map { $0.data["changed"] }
            #expect(changes.contains(["content"]) && changes.contains(["content_policy"]))

            // A bad policy is a 422 naming the member; the stored beacon keeps it.
            let bad = try await client.call(.patch, "/v1/beacons/\(id)", token: owner, json: ["properties": ["content_policy": "everyone"]])
            #expect(bad.status == .unprocessableContent && bad.errorPath == "properties.content_policy")
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: owner).json?["properties"]?["content_policy"] == "anyone")
        }
    }
}
