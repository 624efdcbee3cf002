import DBeaconApp
import DBeaconCore
import DBeaconHTTP
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The map console's routes: the page, its files and Leaflet's are served by the binary with a
/// strict content security policy; the tile background is configurable. (The page itself is
/// tested in a real browser by scripts/console-test.py.)
@Suite(.bounded) struct ConsoleTests {
    static let csp = HTTPField.Name.contentSecurityPolicy

    @Test func servesThePageItsFilesAndLeaflet() async throws {
        let leaflet = try Scratch.directory("leaflet")
        try FileManager.default.createDirectory(at: leaflet.appendingPathComponent("images"), withIntermediateDirectories: true)
        try Data("/* leaflet */".utf8).write(to: leaflet.appendingPathComponent("leaflet.js"))
        try Data("/* css */".utf8).write(to: leaflet.appendingPathComponent("leaflet.css"))
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: leaflet.appendingPathComponent("images/marker-icon.png"))
        try Data("secret".utf8).write(to: leaflet.appendingPathComponent("other.txt"))
        let h = try await TestHarness.make { $0.console.leafletDirectory = leaflet.path }
        try await h.app().test(.router) { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "text/html; charset=utf-8")
                #expect(String(buffer: response.body) == ConsoleAssets.indexHTML)
                let policy = try #require(response.headers[Self.csp])
                #expect(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"))
                #expect(policy.contains("img-src 'self' data: https://tile.openstreetmap.org"))
            }
            try await client.execute(uri: "/console/console.js", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "text/javascript; charset=utf-8")
                #expect(String(buffer: response.body) == ConsoleAssets.consoleJS)
            }
            try await client.execute(uri: "/console/config.json", method: .get) { response in
                let config = try JSONParser.parse(String(buffer: response.body))
                #expect(config["tiles"]?.stringValue == ConsoleConfig.openStreetMap)
                #expect(config["attribution"]?.stringValue?.contains("OpenStreetMap") == true)
                #expect(config["leaflet"] == .bool(true))
            }
            try await client.execute(uri: "/console/leaflet/leaflet.js", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body) == "/* leaflet */")
            }
            try await client.execute(uri: "/console/leaflet/images/marker-icon.png", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/png")
            }
            // Only Leaflet's own files are served from its folder, and nothing outside it.
            for uri in ["/console/leaflet/other.txt", "/console/leaflet/..%2Fother.txt", "/console/leaflet/images/..%2F..%2Fother.txt",
                        "/console/nope.js", "/console/leaflet/images/layers.png"] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    let body = try JSONParser.parse(String(buffer: response.body))
                    #expect(body["error"]?["code"]?.stringValue == "not_found", "\(uri)")
                    #expect(!String(buffer: response.body).contains("secret"))
                }
            }
            // The page needs no token; the API still does.
            try await client.execute(uri: "/v1/beacons", method: .get) { response in #expect(response.status == .unauthorized) }
        }
    }

    @Test func offlineWithoutLeafletOrTiles() async throws {
        let h = try await TestHarness.make {
            $0.console.tiles = nil
            $0.console.leafletDirectory = "/nonexistent/leaflet"
        }
        try await h.app().test(.router) { client in
            try await client.execute(uri: "/console/config.json", method: .get) { response in
                let config = try JSONParser.parse(String(buffer: response.body))
                #expect(config["tiles"] == .null && config["leaflet"] == .bool(false))
            }
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                // No tile server: images from this server only.
                #expect(response.headers[Self.csp]?.contains("img-src 'self' data:;") == true)
            }
            try await client.execute(uri: "/console/leaflet/leaflet.js", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body).contains("libjs-leaflet"))
            }
        }
    }

    @Test func canBeTurnedOff() async throws {
        let h = try await TestHarness.make { $0.console.enabled = false }
        try await h.app().test(.router) { client in
            for uri in ["/", "/console/console.js"] {
                try await client.execute(uri: uri, method: .get) { response in #expect(response.status == .notFound, "\(uri)") }
            }
            try await client.execute(uri: "/healthz", method: .get) { response in #expect(response.status == .ok) }
        }
    }

    static func policy(_ tiles: String) -> String {
        var config = ConsoleConfig()
        config.tiles = tiles
        return config.securityPolicy
    }

    @Test func tileTemplatesAreCheckedAndAllowedByThePolicy() {
        #expect(ConsoleConfig.validateTiles(ConsoleConfig.openStreetMap) == nil)
        #expect(ConsoleConfig.validateTiles("https://{s}.tile.example.org/{z}/{x}/{y}.png") == nil)
        #expect(ConsoleConfig.validateTiles("ftp://tiles.example.org/{z}/{x}/{y}.png")?.contains("http(s)") == true)
        #expect(ConsoleConfig.validateTiles("https://tiles.example.org/{z}/{x}.png")?.contains("{y}") == true)
        #expect(ConsoleConfig.validateTiles("tiles") != nil)
        #expect(Self.policy("https://{s}.tile.example.org/{z}/{x}/{y}.png")
            .contains("img-src 'self' data: https://*.tile.example.org;"))
        #expect(Self.policy("http://127.0.0.1:8081/{z}/{x}/{y}.png")
            .contains("img-src 'self' data: http://127.0.0.1:8081;"))
    }

    @Test func serveRefusesABadTileTemplate() async throws {
        let result = try await CLI.run(["serve", "--map-tiles", "ftp://tiles.example.org/{z}/{x}/{y}.png", "--port", "1"])
        #expect(result.status != 0)
        #expect(result.err.contains("--map-tiles") && result.err.contains("http(s)"))
    }
}
