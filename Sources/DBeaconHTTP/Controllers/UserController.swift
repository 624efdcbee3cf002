import DBeaconAPI
import DBeaconCore
import DBeaconServices
import HTTPTypes
import Hummingbird
import NIOCore

/// Accounts: `/v1/me` (the caller's own: profile, token, devices, export, erasure) and
/// `/v1/users…` (the admin's user management: create, list, show, rename, disable and enable,
/// rotate a token, export, erase).
struct UserController {
    /// Tokens and devices: creates users and device tokens.
    let auth: AuthService
    /// Accounts: profiles, token rotation, user management, export and erasure.
    let accounts: AccountService
    /// Bodies of the user and device requests may be this large; beyond, 413 `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the account routes on the authenticated `/v1` group: `users…` for the admin token,
    /// `me…` for the caller.
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("users", use: create)
        group.get("users", use: list)
        group.get("users/:user", use: get)
        group.patch("users/:user", use: update)
        group.post("users/:user/token", use: rotateFor)
        group.get("users/:user/export", use: exportFor)
        group.delete("users/:user", use: erase)
        group.get("me", use: me)
        group.delete("me", use: eraseMe)
        group.post("me/token", use: rotateOwn)
        group.get("me/export", use: exportOwn)
        group.post("me/devices", use: createDevice)
        group.get("me/devices", use: listDevices)
        group.delete("me/devices/:device", use: revokeDevice)
    }

    // MARK: The caller's own account

    /// `GET /v1/me`: who the token belongs to. The admin token gets `{"id": null, "admin": true}`;
    /// a user gets their profile (`AccountEncoding.user` without `disabled` and `disabled_at`),
    /// `beacon_id_prefix` (the namespace of client-chosen beacon ids) and, for a device token,
    /// `device`.
    @Sendable func me(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        switch context.principal {
        case .admin: return .json(.object(["id": .null, "admin": true]))
        case .user(let id):
            let user = try await accounts.me(context.principal)
            var o = JSONObject([("id", .string(id.rawValue)), ("admin", false), ("beacon_id_prefix", .string(BeaconID.namespace(of: id)))])
            for (k, v) in AccountEncoding.user(user).members where k != "id" && k != "disabled" && k != "disabled_at" { o[k] = v }
            if let device = context.device { o["device"] = .string(device.rawValue) }
            return .json(.object(o))
        }
    }

    /// `POST /v1/me/token`: a new token for the caller, shown once; the old one stops at once.
    @Sendable func rotateOwn(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (user, token) = try await accounts.rotateOwnToken(by: context.principal, device: context.device)
        return .json(AccountEncoding.withToken(user, token), headers: [.cacheControl: "no-store"])
    }

    /// `DELETE /v1/me?confirm=<your user id>`: erases the caller's account and everything that is
    /// theirs.
    @Sendable func eraseMe(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let confirm = QueryReader(request).parameters["confirm"].map(String.init)
        // The user hears that it is done, not how many rows went: counts would include rows about
        // beacons they may no longer see (the admin's answer has them).
        _ = try await accounts.eraseOwnAccount(confirm: confirm, by: context.principal, device: context.device)
        return .json(.object(["id": .string(context.principal.userID?.rawValue ?? ""), "erased": true]))
    }

    /// `GET /v1/me/export`: everything the service holds about the caller, streamed (`export`); 403
    /// for the admin token, which is no user.
    @Sendable func exportOwn(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let id = context.principal.userID else { throw DBeaconError.forbidden("the admin token belongs to no user: GET /v1/users/{id}/export") }
        return try await export(id, context: context)
    }

    // MARK: The admin's user management

    /// `POST /v1/users` `{"name"}`: creates a user (the admin token only, 403 otherwise). 201 with
    /// the user's id, name and token (shown only this once) and `Location`.
    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
        let name = try body.string("name", maxLength: 100)
        let (user, token) = try await auth.createUser(name: name, by: context.principal)
        return .json(.object(["id": .string(user.id.rawValue), "name": .string(user.name), "token": .string(token)]),
                     status: .created, headers: [.location: "/v1/users/\(user.id.rawValue)"])
    }

    /// `GET /v1/users?name_prefix=&limit=&cursor=`: users in creation order.
    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let prefix = try q.string("name_prefix")
        if let prefix, prefix.unicodeScalars.count > 100 {
            throw DBeaconError(.badRequest, code: "invalid_parameter", message: "name_prefix is at most 100 characters", path: "name_prefix")
        }
        let limit = try q.limit(default: 50, max: AccountService.maxPageSize)
        // Authorization before the cursor is read (a stranger learns nothing from its form).
        try AccountService.requireAdmin(context.principal)
        let after = try await context.position(of: try q.string("cursor"))
        let page = try await accounts.list(namePrefix: prefix, after: after, limit: limit, by: context.principal)
        return .json(.object([
            "users": .array(page.items.map { .object(AccountEncoding.user($0)) }),
            "next_cursor": .optional(try await context.cursor(after: page.next)),
        ]))
    }

    /// `GET /v1/users/{id}`: the user with how many beacons and active devices they have (admin
    /// only).
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try userID(context)
        return .json(AccountEncoding.summary(try await accounts.get(id, by: context.principal)))
    }

    /// `PATCH /v1/users/{id}` `{"name"?, "disabled"?}`.
    @Sendable func update(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try userID(context)
        var request = request
        let body = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
        try RequestReader.checkKnownMembers(body, ["name", "disabled"])
        for key in ["name", "disabled"] where body.has(key) && body.value(key) == nil {
            throw DBeaconError.invalid(key, "\(key) must not be null (leave it out to keep it)", code: "invalid_type")
        }
        let name = try body.optionalString("name", maxLength: 100)
        let disabled = try body.optionalBool("disabled")
        let summary = try await accounts.update(id, name: name, disabled: disabled, by: context.principal)
        return .json(AccountEncoding.summary(summary))
    }

    /// `POST /v1/users/{id}/token`: a new token for the user, shown once to the admin.
    @Sendable func rotateFor(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try userID(context)
        let (user, token) = try await accounts.rotateToken(of: id, by: context.principal)
        return .json(AccountEncoding.withToken(user, token), headers: [.cacheControl: "no-store"])
    }

    /// `GET /v1/users/{id}/export`: the export document of `GET /v1/me/export` for that user (admin
    /// only).
    @Sendable func exportFor(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await export(try userID(context), context: context)
    }

    /// `DELETE /v1/users/{id}`: erases the user (an id erased before is 404, as one never used).
    @Sendable func erase(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try userID(context)
        return .json(Self.erasure(id, try await accounts.erase(id, by: context.principal)))
    }

    // MARK: Helpers

    /// The `{user}` of the path: a user id (404 for anything else, as for an unknown user),
    /// after the admin check (403 first: a stranger learns nothing from the id's form).
    private func userID(_ context: AuthenticatedContext) throws -> UserID {
        try AccountService.requireAdmin(context.principal)
        guard let raw = context.parameters.get("user"), let id = UserID(raw) else { throw DBeaconError.notFound("user") }
        return id
    }

    /// What an erasure removed (the admin's answer): how many beacons, the rows deleted or changed
    /// per table (sorted by table name) and how many notices went to others.
    static func erasure(_ id: UserID, _ report: ErasureReport) -> JSONValue {
        .object(JSONObject([
            ("id", .string(id.rawValue)), ("erased", true), ("beacons", .int(report.beacons.count)),
            ("rows", .object(JSONObject(report.rows.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) }))),
            ("notices", .int(report.notices)),
        ]))
    }

    /// The export, streamed: refusals (403, 404) are answered before the body starts.
    private func export(_ id: UserID, context: AuthenticatedContext) async throws -> Response {
        _ = try await accounts.exportable(id, by: context.principal, device: context.device)
        let accounts = self.accounts, principal = context.principal, device = context.device
        let body = ResponseBody { writer in
            let out = WriterBox(writer)
            var sink = ExportJSONWriter { bytes in try await out.writer.write(ByteBuffer(bytes: bytes)) }
            try await accounts.export(id, by: principal, device: device, feature: { ServiceEncoding.feature($0) }, to: &sink)
            try await sink.finish()
            try await out.writer.finish(nil)
        }
        return Response(status: .ok, headers: [
            .contentType: "application/json", .cacheControl: "no-store",
            .contentDisposition: "attachment; filename=\"dbeacon-export-\(id.rawValue).json\"",
        ], body: body)
    }

    /// The response's writer, reachable from the export's flush (one task uses it).
    private final class WriterBox {
        var writer: any ResponseBodyWriter
        init(_ writer: any ResponseBodyWriter) { self.writer = writer }
    }

    // MARK: Devices

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

    /// A device as the API shows it (never its token): `active` until `revoked_at` is set.
    static func device(_ d: Device) -> JSONObject {
        JSONObject([("id", .string(d.id.rawValue)), ("name", .string(d.name)), ("created_at", .string(d.createdAt.rfc3339)),
                    ("last_seen_at", d.lastSeenAt.map { .string($0.rfc3339) } ?? .null),
                    ("revoked_at", d.revokedAt.map { .string($0.rfc3339) } ?? .null),
                    ("active", .bool(d.revokedAt == nil))])
    }
}
