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
        // The header is read once: its scheme, token and (Basic) user name.
        let presented = Self.presented(request.headers.value(of: .authorization))
        let nameKey = presented.name.map { "name:" + $0.prefix(100) }
        do {
            try limiter.check(.authFailures, key: context.clientAddress)
            if let nameKey { try limiter.check(.authFailures, key: nameKey) }
        } catch {
            guard let token = presented.token, auth.seenValid(token: token) else { throw error }
        }
        let caller: AuthService.Caller
        do {
            caller = try await authenticate(presented)
        } catch let error as DBeaconError where error.kind == .unauthorized {
            if let nameKey { try? limiter.consume(.authFailures, key: nameKey) }
            try limiter.consume(.authFailures, key: context.clientAddress)
            throw error
        }
        var context = context
        context.principal = caller.principal
        context.device = caller.device
        context.tokenHash = caller.tokenHash
        context.cursors = auth.cursors
        context.logger[metadataKey: "principal"] = .string(caller.principal.userID?.rawValue ?? "admin")
        return try await next(request, context)
    }

    /// What an `Authorization` header presents, read without a check: its scheme (nil without
    /// a header; `malformed` when it is not `<scheme> <credentials>`), the token, and for Basic
    /// the user name.
    struct Presented {
        enum Scheme { case bearer, basic, other, malformed }
        var scheme: Scheme?
        var token: String?
        var name: String?
    }

    /// The token and (for Basic) the user name `header` presents. Basic credentials that are
    /// not base64 of `user:token` (or longer than 400 characters) present none.
    static func presented(_ header: String?) -> Presented {
        guard let header else { return Presented() }
        guard let space = header.utf8.firstIndex(of: UInt8(ascii: " ")), space != header.startIndex,
              case let credentials = header[header.index(after: space)...], !credentials.isEmpty else {
            return Presented(scheme: .malformed)
        }
        switch header[..<space] {
        case let s where s.utf8.elementsEqual("Bearer".utf8) || s.lowercased() == "bearer":
            return Presented(scheme: .bearer, token: String(credentials.trimmingSpaces))
        case let s where s.lowercased() == "basic":
            guard credentials.utf8.count <= 400, let decoded = Data(base64Encoded: String(credentials.trimmingSpaces)),
                  let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else {
                return Presented(scheme: .basic)
            }
            return Presented(scheme: .basic, token: String(text[text.index(after: colon)...]), name: String(text[..<colon]))
        default:
            return Presented(scheme: .other)
        }
    }

    /// The principal of a valid token (and its device, for a device token); 401 otherwise.
    ///
    /// `Bearer <token>`, or HTTP Basic (as phone apps such as OwnTracks send it): the password
    /// is the token, and the user name must be the user's id or name.
    private func authenticate(_ presented: Presented) async throws -> AuthService.Caller {
        switch presented.scheme {
        case nil:
            throw DBeaconError.unauthorized("an Authorization: Bearer <token> header is required")
        case .bearer:
            guard let caller = try await auth.authenticateCaller(token: presented.token ?? "") else {
                throw DBeaconError.unauthorized("the bearer token is not valid")
            }
            return caller
        case .basic:
            guard let token = presented.token, let name = presented.name else {
                throw DBeaconError.unauthorized("Basic credentials must be base64 of user:token")
            }
            guard let caller = try await auth.authenticateCaller(token: token), let user = caller.principal.userID,
                  try await auth.isNamed(user, name) else {
                throw DBeaconError.unauthorized("the user name and token do not match (the password is the user's or a device's token)")
            }
            return caller
        case .other:
            throw DBeaconError.unauthorized("the Authorization header must be Bearer <token> (or Basic user:token)")
        case .malformed:
            throw DBeaconError.unauthorized("the Authorization header must be Bearer <token>")
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
