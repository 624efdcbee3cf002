import DBeaconCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The map console: `/` serves a web page (`web/console/`, embedded in the binary) that uses the
/// API with the token the user signs in with. Leaflet comes from Debian's `libjs-leaflet` and is
/// served by the binary from memory (no CDN); `/console/config.json` tells the page the tile
/// background. None of these routes needs a token: the page holds no data, the API calls do.
struct ConsoleController {
    /// A file served from memory, with the headers it is served with.
    struct Asset: Sendable {
        let body: ByteBuffer
        let contentType: String
        let cacheControl: String
    }

    /// Whether the console is served, its tiles and where Leaflet's files are.
    let config: ConsoleConfig
    /// The page's own files, by name (`console.js`, …).
    let app: [String: Asset]
    /// Leaflet's files, by path under its folder (`leaflet.js`, `images/marker-icon.png`, …).
    let leaflet: [String: Asset]
    /// The console's HTML page, served at `/`.
    let page: Asset
    /// The `Content-Security-Policy` of every console response (`ConsoleConfig.securityPolicy`).
    let securityPolicy: String

    /// Leaflet's files the page uses: read once, at start.
    static let leafletFiles = ["leaflet.js", "leaflet.css", "images/layers.png", "images/layers-2x.png",
                               "images/marker-icon.png", "images/marker-icon-2x.png", "images/marker-shadow.png"]

    /// Loads every asset once: Leaflet's files from `config.leafletDirectory` (a warning is logged
    /// when `leaflet.js` is missing and the console is enabled), the page's own files from the
    /// binary, and `config.json` from `config`.
    init(config: ConsoleConfig, logger: Logger) {
        self.config = config
        var leaflet: [String: Asset] = [:]
        let folder = URL(fileURLWithPath: config.leafletDirectory)
        for name in Self.leafletFiles {
            // The minified build when the folder has one (Debian's has both).
            let minified = name == "leaflet.js" ? try? Data(contentsOf: folder.appendingPathComponent("leaflet.min.js")) : nil
            guard let data = minified ?? (try? Data(contentsOf: folder.appendingPathComponent(name))) else { continue }
            leaflet[name] = Asset(body: ByteBuffer(bytes: data), contentType: Self.contentType(name), cacheControl: "public, max-age=86400")
        }
        if leaflet["leaflet.js"] == nil && config.enabled {
            logger.warning("the map console at / needs Leaflet: install Debian's libjs-leaflet (apt-get install libjs-leaflet) or pass --leaflet-dir",
                           metadata: ["leaflet_dir": "\(config.leafletDirectory)"])
        }
        self.leaflet = leaflet
        let fresh = "no-cache"
        app = [
            "console.js": Asset(body: ByteBuffer(string: ConsoleAssets.consoleJS), contentType: "text/javascript; charset=utf-8", cacheControl: fresh),
            "console.css": Asset(body: ByteBuffer(string: ConsoleAssets.consoleCSS), contentType: "text/css; charset=utf-8", cacheControl: fresh),
            "config.json": Asset(body: ByteBuffer(string: JSONWriter.string(.object([
                "tiles": .optional(config.tiles),
                "attribution": .string(config.tiles == nil ? "" : config.attribution),
                "leaflet": .bool(leaflet["leaflet.js"] != nil),
            ]))), contentType: "application/json", cacheControl: fresh),
        ]
        page = Asset(body: ByteBuffer(string: ConsoleAssets.indexHTML), contentType: "text/html; charset=utf-8", cacheControl: fresh)
        securityPolicy = config.securityPolicy
    }

    /// Registers `/`, `/console/{file}` and Leaflet's files at the root, without authentication;
    /// nothing when the console is disabled (those paths are then 404).
    func addRoutes(to router: Router<AppRequestContext>) {
        guard config.enabled else { return }
        router.get("/") { _, _ in respond(page) }
        router.get("console/:file") { _, context in
            let name = context.parameters.get("file") ?? ""
            guard let asset = app[name] else { throw DBeaconError.notFound("console file \(name.prefix(100))", path: nil) }
            return respond(asset)
        }
        router.get("console/leaflet/:file") { _, context in try leafletFile(context.parameters.get("file") ?? "") }
        router.get("console/leaflet/images/:file") { _, context in try leafletFile("images/" + (context.parameters.get("file") ?? "")) }
    }

    /// One of Leaflet's files; 404 naming `libjs-leaflet` for a file the page uses that the server
    /// does not have.
    private func leafletFile(_ name: String) throws -> Response {
        guard let asset = leaflet[name] else {
            if Self.leafletFiles.contains(name) {
                throw DBeaconError.notFound("Leaflet's \(name) (install Debian's libjs-leaflet on the server)", path: nil)
            }
            throw DBeaconError.notFound("console file \(name.prefix(100))", path: nil)
        }
        return respond(asset)
    }

    /// An asset with its type, cache policy and the security headers (the CSP, `nosniff`, no
    /// referrer).
    private func respond(_ asset: Asset) -> Response {
        Response(status: .ok, headers: [
            .contentType: asset.contentType,
            .cacheControl: asset.cacheControl,
            .contentSecurityPolicy: securityPolicy,
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ], body: ResponseBody(byteBuffer: asset.body))
    }

    /// The `Content-Type` of a Leaflet file, by its extension.
    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".png") { return "image/png" }
        return "application/octet-stream"
    }
}
