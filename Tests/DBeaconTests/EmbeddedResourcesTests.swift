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

    @Test func migrationsAreCurrent() throws {
        let dir = Self.schema.appendingPathComponent("spatialite")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count == SpatiaLiteSchema.migrations.count, "run scripts/embed-resources.sh")
        for (file, (name, sql)) in zip(files, SpatiaLiteSchema.migrations) {
            #expect(file.hasPrefix(name + "_"))
            #expect(try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8) == sql, "run scripts/embed-resources.sh")
        }
    }
}
