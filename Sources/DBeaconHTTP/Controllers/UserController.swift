import DBeaconAPI
import DBeaconCore
import DBeaconServices
import DBeaconStore
import Hummingbird

/// `/v1/users` (admin creates users), `/v1/me` and the caller's devices (`/v1/me/devices`).
struct UserController {
    let auth: AuthService
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("users", use: create)
        group.get("me", use: me)
        group.post("me/devices", use: createDevice)
        group.get("me/devices", use: listDevices)
        group.delete("me/devices/:device", use: revokeDevice)
    }

    /// `POST /v1/me/devices` `{"name"}`: a device token for one phone (shown only this once).
    @Sendable func createDevice(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
        try RequestReader.checkKnownMembers(body, ["name"])
        let (device, token) = try await auth.createDevice(name: try body.string("name", maxLength: 100), by: context.principal,
                                                          device: context.device)
        var o = Self.device(device)
        o["token"] = .string(token)
        return .json(.object(o), status: .created, headers: [.location: "/v1/me/devices/\(device.id.rawValue)"])
    }

    /// `GET /v1/me/devices`: the caller's devices, newest first (no tokens).
    @Sendable func listDevices(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let devices = try await auth.devices(by: context.principal, device: context.device)
        return .json(.object(["devices": .array(devices.map { .object(Self.device($0)) })]))
    }

    /// `DELETE /v1/me/devices/{device}`: revokes the device's token at once.
    @Sendable func revokeDevice(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let raw = context.parameters.get("device"), let id = DeviceID(raw) else {
            throw DBeaconError.notFound("device")
        }
        try await auth.revokeDevice(id, by: context.principal, device: context.device)
        return Response(status: .noContent)
    }

    static func device(_ d: Device) -> JSONObject {
        JSONObject([("id", .string(d.id.rawValue)), ("name", .string(d.name)), ("created_at", .string(d.createdAt.rfc3339)),
                    ("last_seen_at", d.lastSeenAt.map { .string($0.rfc3339) } ?? .null),
                    ("revoked_at", d.revokedAt.map { .string($0.rfc3339) } ?? .null),
                    ("active", .bool(d.revokedAt == nil))])
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
