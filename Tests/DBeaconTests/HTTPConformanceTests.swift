import DBeaconApp
import DBeaconCore
import DBeaconHTTP
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// What outside suites (schemathesis against schema/openapi.yaml) found about the HTTP surface
/// (issue 11.12), pinned here so it stays fixed.
@Suite(.bounded) struct HTTPConformanceTests {
    /// A header sent once is read as sent; sent twice, as its values joined (what the
    /// subscript gives): two Authorization headers are no valid token, two Content-Types no JSON.
    @Test func aHeaderSentTwiceIsReadJoined() {
        var fields: HTTPFields = [.contentType: "application/json", .contentLength: "12"]
        #expect(fields.value(of: .contentType) == "application/json")
        #expect(fields.value(of: .authorization) == nil)
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        #expect(fields.value(of: .contentType) == "application/json, text/plain")
        #expect(fields.value(of: .contentType) == fields[.contentType])
        #expect(fields.value(of: .contentLength) == "12")
    }

    @Test(arguments: Backend.all) func methodsMediaTypesAndParameters(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, ann) = try await h.user("ann")
        try await h.app().test(.router) { client in
            // A known path with another method: 405 and the methods it has, not 404
            let trace = try await client.call(.init("TRACE")!, "/healthz")
            #expect(trace.status == .methodNotAllowed && trace.headers[.allow] == "GET, HEAD", "\(trace.text)")
            let put = try await client.call(.put, "/v1/beacons", token: ann)
            #expect(put.status == .methodNotAllowed && put.headers[.allow] == "GET, HEAD, POST")
            #expect(try await client.call(.get, "/v1/nowhere", token: ann).status == .notFound)

            // A body that is not JSON by its Content-Type: 415, nothing stored
            let plain = try await client.call(.post, "/v1/beacons", token: ann, raw: JSONWriter.string(feature()),
                                              headers: [.contentType: "text/plain"])
            #expect(plain.status == .unsupportedMediaType && plain.errorCode == "unsupported_media_type")
            let form = try await client.call(.post, "/v1/beacons", token: ann, raw: JSONWriter.string(feature()),
                                             headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(form.status == .unsupportedMediaType)
            #expect(try await client.call(.get, "/v1/beacons", token: ann).features.isEmpty)

            // Empty parameters are mistakes (400), not a way to leave them out
            for uri in ["/v1/nearby?lat=48.78&lon=9.18&at=", "/v1/beacons?limit=", "/v1/events?after=",
                        "/v1/beacons?tag="] {
                let r = try await client.call(.get, uri, token: ann)
                #expect(r.status == .badRequest && r.errorCode == "empty_parameter", "\(uri): \(r.text)")
            }
            // A parameter that is not a list, given twice: 400 naming it, not the first value read
            // (schemathesis sent `/v1/regions?…&lon=2.1e-127&lon=±á…` and got 200); `tag` may repeat
            for (uri, name) in [("/v1/regions?lat=48.78&lon=9.18&lon=x", "lon"), ("/v1/nearby?lat=48.78&lat=1&lon=9.18", "lat"),
                                ("/v1/beacons?limit=5&limit=6", "limit"), ("/v1/nearby?lat=48.78&lon=9.18&perimeter=none&perimeter=full", "perimeter")] {
                let r = try await client.call(.get, uri, token: ann)
                #expect(r.status == .badRequest && r.errorCode == "invalid_parameter" && r.errorPath == name,
                        "\(uri): \(r.text)")
            }
            #expect(try await client.call(.get, "/v1/nearby?lat=48.78&lon=9.18&tag=food&tag=drink", token: ann).status == .ok)
            // A limit beyond any integer is capped like any other
            #expect(try await client.call(.get, "/v1/nearby?lat=48.78&lon=9.18&limit=84722104129979700362608640", token: ann)
                .status == .ok)

            // If-Match takes a list of entity tags (RFC 9110); tags never issued match nothing
            let made = try await client.call(.post, "/v1/beacons", token: ann, json: feature())
            let id = try #require(made.json?["id"]?.stringValue)
            let patch: JSONValue = ["properties": ["name": "renamed"]]
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: patch,
                                          headers: [.ifMatch: #""abc", W/"x""#]).status == .preconditionFailed)
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: patch,
                                          headers: [.ifMatch: #""7", "1""#]).status == .ok)
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: patch,
                                          headers: [.ifMatch: "not an etag"]).errorCode == "invalid_if_match")
            #expect(try await client.call(.patch, "/v1/beacons/\(id)", token: ann, json: patch,
                                          headers: [.ifMatch: "60842657054772199874487"]).status == .preconditionFailed)
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: ann, headers: [.ifNoneMatch: "*"]).status == .notModified)
            #expect(try await client.call(.get, "/v1/beacons/\(id)", token: ann, headers: [.ifNoneMatch: #""1""#]).status == .ok)

            // Content URLs are RFC 3986 (ASCII): raw Unicode is refused, percent-encoded is fine
            let unicode = try await client.call(.post, "/v1/beacons/\(id)/content", token: ann,
                                                json: ["kind": "image", "url": "https://example.org/ü.jpg"])
            #expect(unicode.status == .unprocessableContent && unicode.errorCode == "invalid_url")
            #expect(try await client.call(.post, "/v1/beacons/\(id)/content", token: ann,
                                          json: ["kind": "image", "url": "https://example.org/%C3%BC.jpg"]).status == .created)

            // A promotion whose category is `promotion` itself (found by schemathesis: was a 409)
            #expect(try await client.call(.post, "/v1/promotions", token: ann, json: [
                "name": "p", "location": ["lat": 48.7784, "lon": 9.18], "perimeter": ["type": "Circle", "radius_m": 50],
                "category": "promotion", "tags": ["promotion", "food"],
            ]).status == .created)

            // Event pages follow the document: 50 by default, at most 500
            for _ in 0..<3 { _ = try await client.call(.post, "/v1/me/location", token: ann, json: ["lat": 1, "lon": 1]) }
            #expect(try await client.call(.get, "/v1/events?limit=100000", token: ann).status == .ok)
        }
    }
}
