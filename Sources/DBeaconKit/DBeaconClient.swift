public import Foundation
public import HTTPTypes
public import OpenAPIRuntime

// DBeaconKit: the typed client of the DBeacon API. `Client`, `Operations` and `Components` are
// generated at build time from `schema/openapi.yaml` (Apple's swift-openapi-generator); this file
// and its neighbours add what an app needs besides: the server's timestamps, the token, the
// event stream with resume, and the set of regions to monitor.
//
//     let client = Client.dbeacon(serverURL: URL(string: "https://beacons.example.org")!,
//                                 token: token, transport: URLSessionTransport())
//     let nearby = try await client.nearby(query: .init(lat: 48.7784, lon: 9.18, radiusM: 500))

extension Client {
    /// A client for a DBeacon server at `serverURL` (its root; the API's paths start with
    /// `/v1`), sending `token` (a user or device token) as `Authorization: Bearer`, reading and
    /// writing timestamps as the server does (`DBeaconDateTranscoder`).
    public static func dbeacon(serverURL: URL, token: String?, transport: any ClientTransport,
                               middlewares: [any ClientMiddleware] = []) -> Client {
        Client(serverURL: serverURL,
               configuration: .dbeacon,
               transport: transport,
               middlewares: [EntityTagHeaderMiddleware()] + (token.map { [BearerTokenMiddleware(token: $0)] } ?? []) + middlewares)
    }
}

extension Configuration {
    /// The runtime configuration for DBeacon: RFC 3339 timestamps with or without fractional
    /// seconds (the runtime's default transcoder rejects `2026-11-21T12:00:00.250Z`).
    public static var dbeacon: Configuration { Configuration(dateTranscoder: DBeaconDateTranscoder()) }
}

/// Timestamps as DBeacon writes them: RFC 3339 in UTC, with milliseconds when the instant is
/// not a whole second (`2026-11-21T12:00:00Z`, `2026-11-21T12:00:00.250Z`). Reading accepts
/// both forms, any number of fractional digits and any offset.
public struct DBeaconDateTranscoder: DateTranscoder {
    public init() {}

    private static let whole = Date.ISO8601FormatStyle(includingFractionalSeconds: false)
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    public func encode(_ date: Date) throws -> String {
        let millis = (date.timeIntervalSince1970 * 1000).rounded()
        let rounded = Date(timeIntervalSince1970: millis / 1000)
        return millis.truncatingRemainder(dividingBy: 1000) == 0
            ? rounded.formatted(Self.whole) : rounded.formatted(Self.fractional)
    }

    public func decode(_ string: String) throws -> Date {
        if let d = try? Self.whole.parse(string) { return d }
        if let d = try? Self.fractional.parse(string) { return d }
        // More or fewer than three fractional digits: the format style wants exactly three.
        if let d = Self.normalisingFraction(string).flatMap({ try? Self.fractional.parse($0) }) { return d }
        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "Expected an RFC 3339 timestamp, got \(string)"))
    }

    /// `…:00.5Z` → `…:00.500Z`, `…:00.123456+02:00` → `…:00.123+02:00`.
    private static func normalisingFraction(_ s: String) -> String? {
        guard let dot = s.firstIndex(of: ".") else { return nil }
        let digits = s[s.index(after: dot)...].prefix(while: \.isNumber)
        guard !digits.isEmpty else { return nil }
        let three = String((digits + "000").prefix(3))
        return String(s[..<dot]) + "." + three + String(s[digits.endIndex...])
    }

    /// A `JSONDecoder` reading dates as this transcoder does (for event data read off a stream).
    public static func jsonDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        let transcoder = DBeaconDateTranscoder()
        decoder.dateDecodingStrategy = .custom { d in
            try transcoder.decode(try d.singleValueContainer().decode(String.self))
        }
        return decoder
    }
}

/// Sends `Authorization: Bearer <token>` with every request.
public struct BearerTokenMiddleware: ClientMiddleware {
    public var token: String

    public init(token: String) { self.token = token }

    public func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                          next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        return try await next(request, body, baseURL)
    }
}

/// Sends `If-Match` / `If-None-Match` as given (`"3"`, `W/"3"`, `*`). The OpenAPI runtime writes
/// every header parameter URI-encoded, which turns the quotes of an entity tag into `%22`; an
/// entity tag is plain header text (RFC 9110), so this undoes that for those two fields.
public struct EntityTagHeaderMiddleware: ClientMiddleware {
    public init() {}

    public func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                          next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        for name in [HTTPField.Name.ifMatch, .ifNoneMatch] {
            if let value = request.headerFields[name], value.contains("%"), let decoded = value.removingPercentEncoding {
                request.headerFields[name] = decoded
            }
        }
        return try await next(request, body, baseURL)
    }
}
