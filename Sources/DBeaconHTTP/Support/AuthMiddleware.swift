import DBeaconCore
import DBeaconServices
import Hummingbird

/// Resolves `Authorization: Bearer <token>` into a principal; 401 without a valid token.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let auth: AuthService

    func handle(_ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw DBeaconError.unauthorized("an Authorization: Bearer <token> header is required")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw DBeaconError.unauthorized("the Authorization header must be Bearer <token>")
        }
        guard let principal = try await auth.authenticate(token: String(parts[1].trimmingSpaces)) else {
            throw DBeaconError.unauthorized("the bearer token is not valid")
        }
        var context = context
        context.principal = principal
        context.logger[metadataKey: "principal"] = "\(principal.userID?.rawValue ?? "admin")"
        return try await next(request, context)
    }
}
