import AsyncHTTPClient
import DBeaconCore
import Foundation
import NIOCore
import NIOHTTP1

/// The API of a server over HTTP, with a bearer token.
struct HTTPTransport: APITransport {
    let baseURL: String
    let token: String

    func send(_ request: APIRequest) async throws -> JSONValue? {
        var components = URLComponents(string: baseURL.hasSuffix("/") ? String(baseURL.dropLast()) + request.path : baseURL + request.path)
        if !request.query.isEmpty { components?.queryItems = request.query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let url = components?.string else { throw DBeaconError.badRequest("invalid server URL \(baseURL)") }
        var http = HTTPClientRequest(url: url)
        http.method = request.method
        http.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let body = request.body {
            http.headers.add(name: "Content-Type", value: "application/json")
            http.body = .bytes(ByteBuffer(bytes: JSONWriter.serialize(body)))
        }
        let response: HTTPClientResponse
        do {
            response = try await Self.client.execute(http, timeout: .seconds(request.bulk ? 600 : 60))
        } catch {
            throw Self.unreachable(baseURL, error)
        }
        let bytes = try await response.body.collect(upTo: 256 << 20)
        let json = bytes.readableBytes > 0 ? try? JSONParser.parse(bytes.readableBytesView) : nil
        guard (200..<300).contains(response.status.code) else {
            throw DBeaconError.fromAPI(status: Int(response.status.code), body: json)
        }
        return json
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
