import DBeaconCore
import DBeaconServices
import Hummingbird

/// `/v1/users` (admin creates users) and `/v1/me`.
struct UserController {
    let auth: AuthService
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("users", use: create)
        group.get("me", use: me)
    }

    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
        let name = try body.string("name", maxLength: 100)
        let (user, token) = try await auth.createUser(name: name, by: context.principal)
        return .json(.object(["id": .string(user.id.rawValue), "name": .string(user.name), "token": .string(token)]),
                     status: .created)
    }

    @Sendable func me(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        switch context.principal {
        case .admin: return .json(.object(["id": .null, "admin": true]))
        case .user(let id):
            return .json(.object(JSONObject([
                ("id", .string(id.rawValue)), ("admin", false), ("beacon_id_prefix", .string(BeaconID.namespace(of: id))),
            ])))
        }
    }
}
