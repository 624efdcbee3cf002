import DBeaconHTTP
import Foundation
import Hummingbird
import Testing

/// The router and `schema/openapi.yaml` describe the same operations (issue 11.13): a route
/// the document lacks, or an operation the server does not serve, fails here (the map console's
/// page and files included).
@Suite struct OpenAPIRoutesTests {
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

    /// `METHOD /path` of every operation under `paths:` (a line scan of the YAML's fixed layout:
    /// paths indented by two spaces, methods by four).
    static func documentedOperations() throws -> Set<String> {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("schema/openapi.yaml")
        var operations = Set<String>()
        var inPaths = false
        var path: String?
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("paths:") { inPaths = true; continue }
            guard inPaths else { continue }
            if !line.isEmpty, !line.hasPrefix(" "), !line.hasPrefix("#") { break }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast().uppercased()
                if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) { operations.insert("\(method) \(path)") }
            }
        }
        return operations
    }
}
