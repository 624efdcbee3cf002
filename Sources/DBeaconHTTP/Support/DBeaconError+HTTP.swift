package import DBeaconCore
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
        case .unprocessable: .unprocessableContent
        case .tooManyRequests: .tooManyRequests
        case .unavailable: .serviceUnavailable
        case .internal: .internalServerError
        }
    }
}

extension DBeaconError: HTTPResponseError {
    package var status: HTTPResponse.Status { kind.status }

    /// `{"error":{"code","message","path"}}`; causes of internal errors are logged, not returned.
    package var body: JSONValue {
        var error: JSONObject = ["code": .string(code), "message": .string(message)]
        if let path { error["path"] = .string(path) }
        return .object(["error": .object(error)])
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if kind == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if let seconds = retryAfterSeconds { headers[.retryAfter] = String(seconds) }
        return Response(status: status, headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.serialize(body))))
    }
}

/// Turns every error into the JSON error shape: DBeaconError as it is, Hummingbird's own
/// errors (unknown route, body too large, …) by status, and anything else as a logged 500.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
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
