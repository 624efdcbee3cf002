import DBeaconApp
import DBeaconHTTP
import Foundation
import Hummingbird
import Testing

/// The router and `schema/openapi.yaml` describe the same operations (issue 11.13): a route
/// the document lacks, or an operation the server does not serve, fails here (the map console's
/// page and files included).
@Suite(.bounded) struct OpenAPIRoutesTests {
    @Test func everyRouteIsDocumentedAndEveryOperationServed() async throws {
        let h = try await TestHarness.make()
        let served = Set(buildRouter(h.services).routes.map { route in
            // Hummingbird spells a capture `:id` (or `{id}`); OpenAPI spells it `{id}`.
            let path = route.path.description.split(separator: "/").map { segment in
                segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
            }.joined(separator: "/")
            return "\(route.method.rawValue) /\(path)"
        })
        let documented = try Self.documentedOperations()
        #expect(served.count > 60 && served.contains("GET /v1/beacons/{id}"), "\(served.sorted())")
        #expect(served.subtracting(documented).sorted() == [], "served but not in schema/openapi.yaml")
        #expect(documented.subtracting(served).sorted() == [], "in schema/openapi.yaml but not served")
    }

    /// `METHOD /path` of every operation under `paths:`.
    static func documentedOperations() throws -> Set<String> { Set(try OpenAPIOperations.all().keys) }
}
