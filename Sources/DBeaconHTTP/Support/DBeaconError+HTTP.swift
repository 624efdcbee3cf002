package import DBeaconCore
import Foundation
package import Hummingbird
import NIOCore

extension DBeaconError.Kind {
    /// The one mapping of error kinds to HTTP statuses.
    package var status: HTTPResponse.Status {
        switch self {
        case .badRequest: .badRequest
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .conflict: .conflict
        case .preconditionFailed: .preconditionFailed
        case .payloadTooLarge: .contentTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .unprocessable: .unprocessableContent
        case .tooManyRequests: .tooManyRequests
        case .unavailable: .serviceUnavailable
        case .insufficientStorage: HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        case .internal: .internalServerError
        }
    }
}

extension DBeaconError: HTTPResponseError {
    /// The HTTP status of the error's kind (`Kind.status`).
    package var status: HTTPResponse.Status { kind.status }

    /// `{"error":{"code","message","path"}}`; causes of internal errors are logged, not returned.
    package var body: JSONValue {
        var error: JSONObject = ["code": .string(code), "message": .string(message)]
        if let path { error["path"] = .string(path) }
        return .object(["error": .object(error)])
    }

    /// The JSON error answer, with `WWW-Authenticate` for a 401 (Basic on the OwnTracks endpoint or
    /// for Basic credentials, Bearer elsewhere) and `Retry-After` when the error names a wait (2 s
    /// for an unavailable database).
    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if kind == .unauthorized {
            // The challenge of the scheme the endpoint takes: OwnTracks authenticates with HTTP
            // Basic (user name and token), everything else with a bearer token.
            let basic = request.uri.path.hasSuffix("/owntracks")
                || request.headers[.authorization]?.lowercased().hasPrefix("basic ") == true
            headers[.wwwAuthenticate] = basic ? "Basic realm=\"DBeacon\", charset=\"UTF-8\"" : "Bearer"
        }
        // An unavailable database tells clients when to come back.
        if let seconds = retryAfterSeconds ?? (kind == .unavailable ? 2 : nil) { headers[.retryAfter] = String(seconds) }
        return Response(status: status, headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.serialize(body))))
    }
}

/// The methods each route template answers, filled in once the router has all its routes:
/// a request for a known path with another method is 405 with `Allow`, not 404.
final class RouteMethods: @unchecked Sendable {
    private var templates: [(segments: [Substring], methods: [String])] = []
    private let lock = NSLock()

    /// Records the router's routes by path template; a GET template answers HEAD too, as the router
    /// generates it.
    func load(_ routes: [(path: String, method: String)]) {
        var byPath: [String: [String]] = [:]
        for r in routes { byPath[r.path, default: []].append(r.method) }
        lock.lock()
        templates = byPath.map { path, methods in
            (path.split(separator: "/"), Array(Set(methods + (methods.contains("GET") ? ["HEAD"] : []))).sorted())
        }
        lock.unlock()
    }

    /// The methods of the template matching `path` (`:name` matches any one segment), if any.
    func allowed(for path: String) -> [String]? {
        let segments = path.split(separator: "/")
        lock.lock()
        defer { lock.unlock() }
        for t in templates where t.segments.count == segments.count {
            if zip(t.segments, segments).allSatisfy({ $0.hasPrefix(":") || $0 == $1 }) { return t.methods }
        }
        return nil
    }
}

/// Turns every error into the JSON error shape: DBeaconError as it is, Hummingbird's own
/// errors (unknown route, body too large, …) by status, and anything else as a logged 500.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The router's routes by template, to tell an unknown path (404) from a wrong method (405).
    let methods: RouteMethods

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError where error.status == .notFound && !(error is DBeaconError) {
            // An unknown route; if only the method is wrong, say so (405 with the methods allowed).
            guard let allowed = methods.allowed(for: request.uri.path) else {
                return try DBeaconError(.notFound, code: "not_found", message: "no such endpoint: \(request.method) \(request.uri.path)")
                    .response(from: request, context: context)
            }
            var response = try DBeaconError(.badRequest, code: "method_not_allowed",
                                            message: "\(request.method) is not allowed on \(request.uri.path); allowed: \(allowed.joined(separator: ", "))")
                .response(from: request, context: context)
            response.status = .methodNotAllowed
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch let error as DBeaconError {
            if error.kind == .internal {
                context.logger.error("request failed", metadata: ["error": "\(error)"])
            }
            return try error.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            let mapped: DBeaconError
            switch error.status {
            case .notFound: mapped = DBeaconError(.notFound, code: "not_found", message: "no such endpoint: \(request.method) \(request.uri.path)")
            case .methodNotAllowed: mapped = DBeaconError(.badRequest, code: "method_not_allowed", message: "\(request.method) is not allowed here")
            case .contentTooLarge: mapped = DBeaconError(.payloadTooLarge, code: "body_too_large", message: "the request body is too large")
            case .unauthorized: mapped = .unauthorized()
            default:
                mapped = DBeaconError(.badRequest, code: "bad_request", message: "\(error.status.reasonPhrase)")
            }
            var response = try mapped.response(from: request, context: context)
            if error.status == .methodNotAllowed { response.status = .methodNotAllowed }
            return response
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(error)"])
            return try DBeaconError.internalError("internal error").response(from: request, context: context)
        }
    }
}
