import DBeaconHTTP
import DBeaconStore
import Foundation
import Testing

/// The binary embeds schema/ (no resource bundle to lose); these copies must be current.
@Suite struct EmbeddedResourcesTests {
    static let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("schema")

    @Test func openAPIDocumentIsCurrent() throws {
        let file = try String(contentsOf: Self.schema.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        #expect(OpenAPIDocument.yaml == file, "run scripts/embed-resources.sh")
    }

    @Test(arguments: ["spatialite", "postgis"]) func migrationsAreCurrent(_ store: String) throws {
        let dir = Self.schema.appendingPathComponent(store)
        let migrations = store == "postgis" ? PostGISSchema.migrations : SpatiaLiteSchema.migrations
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count == migrations.count, "run scripts/embed-resources.sh")
        for (file, (name, sql)) in zip(files, migrations) {
            #expect(file.hasPrefix(name + "_"))
            #expect(try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8) == sql, "run scripts/embed-resources.sh")
        }
    }
}
