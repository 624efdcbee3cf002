import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import HTTPTypes
import Hummingbird

/// `/v1/registry…` (the shared physical beacon registry) and `POST /v1/sightings`.
struct RegistryController {
    let registry: RegistryService
    let sightings: SightingService
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("registry", use: create)
        group.get("registry", use: list)
        group.get("registry/resolve", use: resolve)
        group.get("registry/:id", use: get)
        group.patch("registry/:id", use: update)
        group.delete("registry/:id", use: delete)
        group.post("sightings", use: report)
    }

    static func registryID(_ context: AuthenticatedContext) throws -> RegistryID {
        let raw = try context.parameters.require("id")
        guard let id = RegistryID(raw) else { throw DBeaconError.notFound("registry entry \(raw)") }
        return id
    }

    static func entry(_ e: RegistryEntry, status: HTTPResponse.Status = .ok) -> Response {
        .json(RegistryCodec.encode(e), status: status, headers: [.eTag: "\"\(e.version)\""])
    }

    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try RegistryCodec.decodeDraft(try await request.jsonBody(limit: maxBodyBytes))
        let e = try await registry.register(draft, by: context.principal)
        var response = Self.entry(e, status: .created)
        response.headers[.location] = "/v1/registry/\(e.id)"
        return response
    }

    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        Self.entry(try await registry.get(try Self.registryID(context), by: context.principal))
    }

    @Sendable func update(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let id = try Self.registryID(context)
        let ifMatch = try request.ifMatchVersions()
        let patch = try await request.jsonBody(limit: maxBodyBytes)
        return Self.entry(try await registry.update(id, ifMatch: ifMatch, by: context.principal) { current in
            try RegistryCodec.patched(current, with: patch)
        })
    }

    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await registry.delete(try Self.registryID(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// Filters: `beacon`, `type`, `uuid` (or `namespace`, `id1`), `status`, `owner=me`.
    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        var query = RegistryListQuery(limit: try q.limit(), after: try await context.position(of: try q.string("cursor")))
        if let raw = try q.string("beacon") {
            guard let id = BeaconID(raw) else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "beacon must be a beacon id", path: "beacon")
            }
            query.beacon = id
        }
        if let raw = try q.string("type") {
            guard let kind = PhysicalBeaconKind(rawValue: raw) else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "type must be ibeacon, eddystone-uid or altbeacon",
                                   path: "type")
            }
            query.kind = kind
        }
        if let raw = try q.string("uuid") ?? q.string("id1") {
            guard let uuid = PhysicalBeaconIdentity.normalizedUUID(raw) else {
                throw DBeaconError.invalid(try q.string("uuid") != nil ? "uuid" : "id1", "not a UUID", code: "invalid_uuid")
            }
            query.id1 = uuid
        } else if let raw = try q.string("namespace") {
            guard let ns = PhysicalBeaconIdentity.normalizedHex(raw, count: 20) else {
                throw DBeaconError.invalid("namespace", "namespace must be 20 hex digits", code: "invalid_namespace")
            }
            query.id1 = ns
        }
        if let raw = try q.string("status") {
            guard let status = RegistryEntry.Status(rawValue: raw) else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "status must be active, inactive or decommissioned",
                                   path: "status")
            }
            query.status = status
        }
        if let owner = try q.string("owner") {
            guard owner == "me" else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "owner must be me", path: "owner")
            }
            guard let uid = context.principal.userID else {
                throw DBeaconError.forbidden("owner=me needs a user token: the admin token owns no registry entries")
            }
            query.owner = uid
        }
        let page = try await registry.list(query, by: context.principal)
        return .json(.object([
            "entries": .array(page.items.map(RegistryCodec.encode)),
            "next_cursor": .optional(try await context.cursor(after: page.next)),
        ]))
    }

    /// `?uuid=&major=&minor=` (iBeacon), `?namespace=&instance=` (Eddystone-UID),
    /// `?type=altbeacon&id1=&id2=&id3=`, or `?adv=<hex>` (a raw advertisement).
    @Sendable func resolve(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let identity = try Self.identity(QueryReader(request))
        let r = try await registry.resolve(identity, by: context.principal)
        var response = Response.feature(r.beacon)
        response.headers[HTTPField.Name("Registry-Entry")!] = r.entry.id.rawValue
        return response
    }

    static func identity(_ q: QueryReader) throws -> PhysicalBeaconIdentity {
        if let adv = try q.string("adv") {
            switch BeaconFrameParser.parse(hex: adv) {
            case .success(let frame): return frame.identity
            case .failure(let e): throw DBeaconError.invalid("adv", e.message, code: e.code)
            }
        }
        var o = JSONObject()
        let type = try q.string("type") ?? (q.string("namespace") != nil ? "eddystone-uid" : q.string("id1") != nil ? "altbeacon" : "ibeacon")
        o["type"] = .string(type)
        for key in ["uuid", "namespace", "instance", "id1"] { if let v = try q.string(key) { o[key] = .string(v) } }
        for key in ["major", "minor", "id2", "id3"] {
            guard let raw = try q.string(key) else { continue }
            guard let n = Int(raw) else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "\(key) must be an integer", path: key)
            }
            o[key] = .int(n)
        }
        if o["uuid"] == nil && o["namespace"] == nil && o["id1"] == nil {
            // Each of these is optional on its own; that one of them is needed is a rule of the
            // combination, which the OpenAPI document cannot state: 422, not 400.
            throw DBeaconError.invalid("uuid", "an identity is required: uuid (iBeacon), namespace and instance (Eddystone-UID), "
                                       + "id1 (AltBeacon) or adv", code: "missing_identity")
        }
        return try RegistryCodec.decodeIdentity(try ObjectReader(.object(o)), concrete: false)
    }

    @Sendable func report(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let user = context.principal.userID else {
            throw DBeaconError.forbidden("sightings belong to users; the admin token has none")
        }
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        return .json(try await SightingAnswer.answer(body, user: user, service: sightings))
    }
}
