import DBeaconCore
import Foundation
import DBeaconServices
import Hummingbird

/// Resolves `Authorization: Bearer <token>` into a principal; 401 without a valid token.
///
/// Failed attempts are limited per client address and, for Basic credentials, per user name
/// (`RateLimits.authFailuresPerSecond`): once either has used up its failures, a request gets
/// 429 before its token is even looked up, so a flood of bad tokens costs a dictionary lookup,
/// not a database query. A token that authenticated lately on this process still goes through
/// (`AuthService.seenValid`): one attacker behind a carrier's NAT does not lock out the phones
/// behind it, and guessing at one user's password does not lock out that user's own phone.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let auth: AuthService
    let limiter: RateLimiter

    func handle(_ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response) async throws -> Response {
        // A context made in process with its principal (the CLI on the database file) needs no
        // token; one made for a network request never has a principal before this point.
        if context.principal != nil {
            var context = context
            context.cursors = auth.cursors
            return try await next(request, context)
        }
        let presented = Self.presented(request)
        let keys = [context.clientAddress] + (presented.name.map { ["name:" + $0] } ?? [])
        do {
            for key in keys { try limiter.check(.authFailures, key: key) }
        } catch {
            guard let token = presented.token, auth.seenValid(token: token) else { throw error }
        }
        let caller: AuthService.Caller
        do {
            caller = try await authenticate(request)
        } catch let error as DBeaconError where error.kind == .unauthorized {
            for key in keys.dropFirst() { try? limiter.consume(.authFailures, key: key) }
            try limiter.consume(.authFailures, key: context.clientAddress)
            throw error
        }
        var context = context
        context.principal = caller.principal
        context.device = caller.device
        context.tokenHash = caller.tokenHash
        context.cursors = auth.cursors
        context.logger[metadataKey: "principal"] = "\(caller.principal.userID?.rawValue ?? "admin")"
        return try await next(request, context)
    }

    /// The token and (for Basic) the user name a request presents, read without a check.
    static func presented(_ request: Request) -> (token: String?, name: String?) {
        guard let header = request.headers[.authorization] else { return (nil, nil) }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return (nil, nil) }
        switch parts[0].lowercased() {
        case "bearer": return (String(parts[1].trimmingSpaces), nil)
        case "basic":
            guard parts[1].utf8.count <= 400, let decoded = Data(base64Encoded: String(parts[1].trimmingSpaces)),
                  let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return (nil, nil) }
            return (String(text[text.index(after: colon)...]), String(text[..<colon].prefix(100)))
        default: return (nil, nil)
        }
    }

    /// The principal of a valid token (and its device, for a device token); 401 otherwise.
    ///
    /// `Bearer <token>`, or HTTP Basic (as phone apps such as OwnTracks send it): the password
    /// is the token, and the user name must be the user's id or name.
    private func authenticate(_ request: Request) async throws -> AuthService.Caller {
        guard let header = request.headers[.authorization] else {
            throw DBeaconError.unauthorized("an Authorization: Bearer <token> header is required")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { throw DBeaconError.unauthorized("the Authorization header must be Bearer <token>") }
        switch parts[0].lowercased() {
        case "bearer":
            guard let caller = try await auth.authenticateCaller(token: String(parts[1].trimmingSpaces)) else {
                throw DBeaconError.unauthorized("the bearer token is not valid")
            }
            return caller
        case "basic":
            guard parts[1].utf8.count <= 400, let decoded = Data(base64Encoded: String(parts[1].trimmingSpaces)),
                  let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else {
                throw DBeaconError.unauthorized("Basic credentials must be base64 of user:token")
            }
            let name = String(text[..<colon]), token = String(text[text.index(after: colon)...])
            guard let caller = try await auth.authenticateCaller(token: token), let user = caller.principal.userID,
                  try await auth.isNamed(user, name) else {
                throw DBeaconError.unauthorized("the user name and token do not match (the password is the user's or a device's token)")
            }
            return caller
        default:
            throw DBeaconError.unauthorized("the Authorization header must be Bearer <token> (or Basic user:token)")
        }
    }
}

/// Per-token limits on writes and location reports (`RateLimits`); the operator's token is
/// not limited.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = AuthenticatedContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: AuthenticatedContext,
                next: (Request, AuthenticatedContext) async throws -> Response) async throws -> Response {
        if let user = context.principal.userID, let category = Self.category(request) {
            try limiter.consume(category, key: user.rawValue)
        }
        return try await next(request, context)
    }

    /// Location reports, other writes, or nothing (reads).
    static func category(_ request: Request) -> RateLimiter.Category? {
        switch request.method {
        case .get, .head, .options: return nil
        default:
            let path = request.uri.path
            if path.hasSuffix("/me/location") || path.hasSuffix("/sightings") || path.hasSuffix("/me/region-events")
                || path.hasSuffix("/owntracks") {
                return .locationReports
            }
            return .writes
        }
    }
}
