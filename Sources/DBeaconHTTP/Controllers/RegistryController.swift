import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import HTTPTypes
import Hummingbird

/// `/v1/registry…` (the shared physical beacon registry) and `POST /v1/sightings`.
struct RegistryController {
    /// The shared registry of physical beacons, each entry linking an identity to a digital beacon.
    let registry: RegistryService
    /// Resolves sighting batches (`POST /v1/sightings`) into distances, positions and fence events.
    let sightings: SightingService
    /// Bodies of registry entries, merge patches and sighting batches may be this large; beyond,
    /// 413 `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the registry routes and `POST /v1/sightings` on the authenticated `/v1` group.
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("registry", use: create)
        group.get("registry", use: list)
        group.get("registry/resolve", use: resolve)
        group.get("registry/:id", use: get)
        group.patch("registry/:id", use: update)
        group.delete("registry/:id", use: delete)
        group.post("sightings", use: report)
    }

    /// The `:id` path parameter as a registry entry id; a value that cannot be one is 404, as for
    /// an unknown entry.
    static func registryID(_ context: AuthenticatedContext) throws -> RegistryID {
        let raw = try context.parameters.require("id")
        guard let id = RegistryID(raw) else { throw DBeaconError.notFound("registry entry \(raw)") }
        return id
    }

    /// A registry entry's answer (`RegistryCodec.encode`) with its version as the `ETag`.
    static func entry(_ e: RegistryEntry, status: HTTPResponse.Status = .ok) -> Response {
        .json(RegistryCodec.encode(e), status: status, headers: [.eTag: "\"\(e.version)\""])
    }

    /// `POST /v1/registry` (`RegistryCodec.decodeDraft`): links a physical beacon identity to a
    /// digital beacon the caller owns (any, for the operator). 201 with the entry, its `ETag` and
    /// `Location`; 403 for a visible beacon of someone else, 404 for an invisible one, 409
    /// `duplicate_identity` for an identity that a live entry the caller may see already has.
    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try RegistryCodec.decodeDraft(try await request.jsonBody(limit: maxBodyBytes))
        let e = try await registry.register(draft, by: context.principal)
        var response = Self.entry(e, status: .created)
        response.headers[.location] = "/v1/registry/\(e.id)"
        return response
    }

    /// `GET /v1/registry/{id}`: the entry with its `ETag`, for the operator, the owner, and whoever
    /// may see its digital beacon (404 otherwise).
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        Self.entry(try await registry.get(try Self.registryID(context), by: context.principal))
    }

    /// `PATCH /v1/registry/{id}`: an RFC 7396 merge patch of the entry as shown
    /// (`RegistryCodec.patched`: `id`, `owner` and `created_at` are read-only, 422 `read_only`), by
    /// the owner of its digital beacon or the operator. `If-Match` is honoured. 200 with the entry
    /// and its `ETag`.
    @Sendable func update(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let id = try Self.registryID(context)
        let ifMatch = try request.ifMatchVersions()
        let patch = try await request.jsonBody(limit: maxBodyBytes)
        return Self.entry(try await registry.update(id, ifMatch: ifMatch, by: context.principal) { current in
            try RegistryCodec.patched(current, with: patch)
        })
    }

    /// `DELETE /v1/registry/{id}`: removes the entry (the owner of its digital beacon, or the
    /// operator; 403 for others who may see it). 204.
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

    /// The identity `resolve` asks about, from the query: `adv` (a raw advertisement, parsed as
    /// sightings are) wins; otherwise `type` (by default the kind whose members are given) with its
    /// members, whose integers are checked here (400). No identity at all is 422
    /// `missing_identity`.
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

    /// `POST /v1/sightings` (`SightingAnswer`): resolves a batch of BLE sightings for the caller
    /// (users only: 403 for the admin token), one result per sighting; an unreadable item carries
    /// its own `error` instead of failing the batch. A repeated `batch_id` replays the stored
    /// answer (409 `batch_id_reused` for a different batch).
    @Sendable func report(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let user = context.principal.userID else {
            throw DBeaconError.forbidden("sightings belong to users; the admin token has none")
        }
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        return .json(try await SightingAnswer.answer(body, user: user, service: sightings))
    }
}
