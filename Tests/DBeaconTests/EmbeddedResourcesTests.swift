import DBeaconApp
import DBeaconHTTP
import DBeaconStore
import Foundation
import Testing

/// The binary embeds schema/ and web/console/ (no resource bundle to lose); these copies must be current.
@Suite(.bounded) struct EmbeddedResourcesTests {
    static let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("schema")

    @Test func openAPIDocumentIsCurrent() throws {
        let file = try String(contentsOf: Self.schema.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        #expect(OpenAPIDocument.yaml == file, "run scripts/embed-resources.sh")
    }

    @Test(arguments: ["spatialite", "postgis"]) func migrationsAreCurrent(_ store: String) throws {
        let dir = Self.schema.appendingPathComponent(store)
        let migrations = store == "postgis" ? PostGISSchema.migrations : SpatiaLiteSchema.migrations
        // In version order (v9 before v10), the order they are applied in.
        func version(_ file: String) -> Int { Int(file.dropFirst().prefix { $0.isNumber }) ?? 0 }
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".sql") }
            .sorted { version($0) < version($1) }
        #expect(files.count == migrations.count, "run scripts/embed-resources.sh")
        for (file, (name, sql)) in zip(files, migrations) {
            #expect(file.hasPrefix(name + "_"))
            #expect(try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8) == sql, "run scripts/embed-resources.sh")
        }
    }

    @Test func consoleIsCurrent() throws {
        let dir = Self.schema.deletingLastPathComponent().appendingPathComponent("web/console")
        for (file, embedded) in [("index.html", ConsoleAssets.indexHTML), ("console.js", ConsoleAssets.consoleJS),
                                 ("console.css", ConsoleAssets.consoleCSS)] {
            #expect(try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8) == embedded, "run scripts/embed-resources.sh")
        }
    }
}
