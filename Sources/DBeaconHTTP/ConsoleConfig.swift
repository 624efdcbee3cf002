import Foundation

/// The map console (`/`): a web page on the API, with Leaflet from Debian's `libjs-leaflet`.
package struct ConsoleConfig: Sendable {
    package static let openStreetMap = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"

    /// Whether `/` serves the console (otherwise `/` and `/console/…` answer 404).
    package var enabled = true
    /// The background's tile URL template (`{z}`, `{x}`, `{y}`, optionally `{s}`), or nil for no
    /// background (offline use).
    package var tiles: String? = openStreetMap
    /// The attribution shown for the tiles.
    package var attribution = "© OpenStreetMap contributors"
    /// Where Leaflet's files are (Debian's `libjs-leaflet` installs them here).
    package var leafletDirectory = "/usr/share/javascript/leaflet"

    package init() {}

    /// Checks a tile URL template: http(s), with `{z}`, `{x}` and `{y}`. The message names the problem.
    package static func validateTiles(_ template: String) -> String? {
        guard let url = URL(string: template.replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D")),
              let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
            return "must be an http(s) URL template such as \(openStreetMap), or none"
        }
        for part in ["{z}", "{x}", "{y}"] where !template.contains(part) {
            return "must contain \(part) (for example \(openStreetMap))"
        }
        return nil
    }

    /// Scripts, styles and API calls from this server only; images also from the tile server
    /// (`{s}.host` becomes `*.host`); no framing.
    package var securityPolicy: String {
        var images = "'self' data:"
        if let tiles, let schemeEnd = tiles.range(of: "://") {
            let scheme = tiles[..<schemeEnd.lowerBound]
            let rest = tiles[schemeEnd.upperBound...]
            let authority = String(rest.prefix { $0 != "/" })
            let host = authority.hasPrefix("{s}.") ? "*." + authority.dropFirst(4) : authority
            images += host.contains("{") ? " \(scheme):" : " \(scheme)://\(host)"
        }
        return "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src \(images); "
            + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }
}
