import DBeaconCore
import NIOHTTP1

/// One API call: a method, a path under the server, query parameters and an optional JSON body.
struct APIRequest: Sendable {
    var method: HTTPMethod
    var path: String
    var query: [(String, String)] = []
    var body: JSONValue?
    /// Bodies that may be large (imports).
    var bulk = false
}

/// How the CLI's calls reach the API: over HTTP to a server (`--server`), or to the same router
/// built in this process on the database file (`--db`). Both answer with the API's JSON, so
/// every command is written once, against the API.
protocol APITransport: Sendable {
    /// The JSON answer (nil for 204); a `DBeaconError` with the API's code, message and path
    /// for an error status.
    func send(_ request: APIRequest) async throws -> JSONValue?
}

extension DBeaconError.Kind {
    /// The kind an HTTP error status stands for.
    init(status: Int) {
        switch status {
        case 400: self = .badRequest
        case 401: self = .unauthorized
        case 403: self = .forbidden
        case 404: self = .notFound
        case 409: self = .conflict
        case 412: self = .preconditionFailed
        case 413: self = .payloadTooLarge
        case 415: self = .unsupportedMediaType
        case 422: self = .unprocessable
        case 429: self = .tooManyRequests
        case 503: self = .unavailable
        case 507: self = .insufficientStorage
        default: self = .internal
        }
    }
}

extension DBeaconError {
    /// The error an API answer carries (`{"error":{"code","message","path"}}`).
    static func fromAPI(status: Int, body: JSONValue?) -> DBeaconError {
        let error = body?["error"]
        return DBeaconError(Kind(status: status), code: error?["code"]?.stringValue ?? "http_\(status)",
                            message: error?["message"]?.stringValue ?? "HTTP \(status)", path: error?["path"]?.stringValue)
    }
}
