import AsyncHTTPClient
import DBeaconCore
import Foundation
import NIOCore
import OpenAPIAsyncHTTPClient

/// The API of a server over HTTP: the OpenAPI runtime's AsyncHTTPClient transport on the CLI's
/// own HTTP client, with room for large answers (an export, an import's report).
enum HTTPTransport {
    static func make() -> AsyncHTTPClientTransport {
        AsyncHTTPClientTransport(configuration: .init(client: client, timeout: .seconds(600)))
    }

    /// The CLI's HTTP client: a refused or unreachable server is reported at once (the shared
    /// client retried the connection until the request's 60 s deadline, so `dbeacon nearby`
    /// with no server running took a minute to say so), within 10 s to connect.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(10)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// What went wrong reaching the server, and what to try: not the HTTP client's own words.
    static func unreachable(_ baseURL: String, _ error: any Error) -> DBeaconError {
        let text = "\(error)"
        let reason: String
        if text.contains("refused") || text.contains("errno: 111") {
            reason = "connection refused: nothing listens there"
        } else if text.contains("imeout") || text.contains("deadlineExceeded") {
            reason = "no answer in time"
        } else if text.contains("resolve") || text.contains("NXDOMAIN") || text.contains("lookup") {
            reason = "the host name does not resolve"
        } else {
            reason = String(text.prefix(200))
        }
        return DBeaconError(.unavailable, code: "server_unreachable", message: """
            cannot reach the DBeacon server at \(baseURL) (\(reason)). Start one with ./scripts/run.sh (or \
            dbeacon serve), check --server / $DBEACON_SERVER, or work on the database file with --db PATH
            """)
    }
}
