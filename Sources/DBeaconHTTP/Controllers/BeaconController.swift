import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/beacons…` and `/v1/nearby`: CRUD with ETag/If-Match, lists, nearby, followers,
/// related beacons, content and directions.
struct BeaconController {
    let beacons: BeaconService
    let maxBodyBytes: Int
    /// Bodies of `POST /v1/beacons/import` may be this large.
    let maxImportBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("beacons", use: create)
        group.post("beacons/import", use: importCollection)
        group.get("beacons", use: list)
        group.get("beacons/:id", use: get)
        group.patch("beacons/:id", use: update)
        group.delete("beacons/:id", use: delete)
        group.post("beacons/:id/followers", use: follow)
        group.get("beacons/:id/followers", use: followers)
        group.delete("beacons/:id/followers/me", use: unfollow)
        group.get("beacons/:id/related", use: related)
        group.post("beacons/:id/content", use: addContent)
        group.delete("beacons/:id/content/:index", use: removeContent)
        group.get("beacons/:id/directions", use: directions)
        group.get("beacons/:id/visits", use: visits)
        group.get("nearby", use: nearby)
    }

    /// The `:id` path parameter; an id that cannot exist is simply not found.
    static func beaconID(_ context: AuthenticatedContext) throws -> BeaconID {
        let raw = try context.parameters.require("id")
        guard let id = BeaconID(raw) else { throw DBeaconError.notFound("beacon \(raw)") }
        return id
    }

    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        let draft = try BeaconFeatureCodec.decodeDraft(body, limits: beacons.limits)
        let beacon = try await beacons.present(try await beacons.create(draft, by: context.principal), to: context.principal)
        var response = Response.feature(beacon, status: .created)
        response.headers[.location] = "/v1/beacons/\(beacon.id)"
        return response
    }

    /// A FeatureCollection (or one Feature) in one transaction: all stored, or none.
    /// `?owner=usr_…` (admin token): whose beacons they are; without it, each feature's
    /// `properties.owner`.
    @Sendable func importCollection(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let q = QueryReader(request)
        var owner: UserID?
        if let raw = try q.string("owner") {
            guard let id = UserID(raw) else { throw DBeaconError.invalid("owner", "not a user id (usr_…)", code: "invalid_id") }
            owner = id
        }
        let body = try await request.jsonBody(limit: maxImportBytes)
        let items = try BeaconFeatureCodec.importItems(body, limits: beacons.limits)
        let imported = try await beacons.importBeacons(items, by: context.principal, owner: owner)
        return .json(.object(["imported": .int(imported.count), "ids": .array(imported.map { .string($0.id.rawValue) })]),
                     status: .created)
    }

    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let beacon = try await beacons.get(try Self.beaconID(context), by: context.principal)
        if let tags = try request.entityTags(.ifNoneMatch), tags == Request.anyVersion || tags.contains(beacon.version) {
            return Response(status: .notModified, headers: [.eTag: "\"\(beacon.version)\""])
        }
        return .feature(beacon)
    }

    @Sendable func update(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let id = try Self.beaconID(context)
        let ifMatch = try request.ifMatchVersions()
        let patch = try await request.jsonBody(limit: maxBodyBytes)
        let limits = beacons.limits
        let (beacon, _) = try await beacons.update(id, ifMatch: ifMatch, by: context.principal) { current in
            try BeaconFeatureCodec.patched(current, with: patch, limits: limits)
        }
        return .feature(try await beacons.present(beacon, to: context.principal))
    }

    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        _ = try await beacons.delete(try Self.beaconID(context), ifMatch: try request.ifMatchVersions(), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        var query = BeaconListQuery(tags: try q.tags(), bbox: try q.bbox(), limit: try q.limit(),
                                    after: try await context.position(of: try q.string("cursor")))
        if let owner = try q.string("owner") {
            if owner == "me" {
                guard let uid = context.principal.userID else {
                    throw DBeaconError.forbidden("owner=me needs a user token: the admin token owns no beacons")
                }
                query.owner = uid
            } else if let uid = UserID(owner) {
                query.owner = uid
            } else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "owner must be me or a user id", path: "owner")
            }
        }
        query.service = try q.string("service")
        let page = try await beacons.list(query, by: context.principal)
        return .json(BeaconFeatureCodec.collection(page.items.map(BeaconFeatureCodec.encode),
                                                   nextCursor: try await context.cursor(after: page.next), includeCursor: true))
    }

    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let point = try q.position()
        // `perimeter=none` leaves perimeters out of the answer (apps that draw them on demand
        // save up to hundreds of KiB per answer when large regions cover the point).
        var includePerimeters = true
        switch try q.string("perimeter") {
        case nil, "full": includePerimeters = true
        case "none": includePerimeters = false
        case let other?:
            throw DBeaconError(.badRequest, code: "invalid_parameter",
                               message: "perimeter must be full or none, got \(other)", path: "perimeter")
        }
        let results = try await beacons.nearby(point: point, tags: try q.tags(), at: try q.timestamp("at"),
                                               limit: try q.limit(), perimeters: includePerimeters, formattedPerimeters: true,
                                               by: context.principal)
        return .nearby(results, includePerimeters: includePerimeters)
    }

    @Sendable func follow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (beacon, created) = try await beacons.follow(try Self.beaconID(context), by: context.principal)
        return .json(.object([
            "beacon": .string(beacon.id.rawValue), "user": .optional(context.principal.userID?.rawValue),
            "following": true, "followers_count": .int(beacon.followersCount),
        ]), status: created ? .created : .ok)
    }

    @Sendable func unfollow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await beacons.unfollow(try Self.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func followers(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let page = try await beacons.followers(of: try Self.beaconID(context), limit: try q.limit(), after: try await context.position(of: try q.string("cursor")),
                                               by: context.principal)
        return .json(.object([
            "followers": .array(page.items.map { f in
                .object(["id": .string(f.user.rawValue), "name": .string(f.name), "since": .string(f.since.rfc3339)])
            }),
            "next_cursor": .optional(try await context.cursor(after: page.next)),
        ]))
    }

    @Sendable func related(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let type = try q.string("type").map { try BeaconFeatureCodec.normalizeTag($0, path: "type") }
        let related = try await beacons.related(try Self.beaconID(context), type: type, by: context.principal)
        let features: [JSONValue] = related.map { beacon, link in
            var properties = BeaconFeatureCodec.encodeProperties(beacon)
            var relationship: JSONObject = ["type": .string(link.type)]
            if let order = link.order { relationship["order"] = .int(order) }
            properties["relationship"] = .object(relationship)
            return .object(JSONObject([
                ("type", "Feature"), ("id", .string(beacon.id.rawValue)),
                ("geometry", GeoJSONCodec.encodePoint(beacon.location)), ("properties", .object(properties)),
            ]))
        }
        return .json(BeaconFeatureCodec.collection(features))
    }

    @Sendable func addContent(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        let content = try BeaconFeatureCodec.decodeContentRef(try ObjectReader(body))
        let beacon = try await beacons.addContent(try Self.beaconID(context), content, by: context.principal)
        return .feature(beacon, status: .created)
    }

    /// Deletes one content item (0-based index): the owner moderates, an author removes their own.
    @Sendable func removeContent(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let raw = try context.parameters.require("index")
        guard raw.count <= 6, raw.allSatisfy(\.isASCII), let index = Int(raw), index >= 0, String(index) == raw else {
            throw DBeaconError.notFound("content item \(raw.prefix(20))")
        }
        return .feature(try await beacons.removeContent(try Self.beaconID(context), at: index, by: context.principal))
    }

    @Sendable func directions(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let from = try q.position(lat: "from_lat", lon: "from_lon")
        let d = try await beacons.directions(to: try Self.beaconID(context), from: from, by: context.principal)
        return .json(Self.encode(d, from: from))
    }

    static func encode(_ d: Directions, from: Position) -> JSONValue {
        .object(JSONObject([
            ("beacon", .string(d.beacon.id.rawValue)),
            ("from", .object(["lat": .number(from.lat), "lon": .number(from.lon)])),
            ("to", .object(["lat": .number(d.beacon.location.lat), "lon": .number(d.beacon.location.lon)])),
            ("distance_m", .number(d.distanceM)),
            ("bearing_deg", .number(d.bearingDeg)),
            ("walking_eta_s", .int(d.walkingETASeconds)),
            ("geo_uri", .string(d.geoURI)),
        ]))
    }

    /// Visit statistics (owner only): aggregates, never per-user trails.
    @Sendable func visits(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try Self.beaconID(context)
        return .json(VisitEncoding.stats(id, try await beacons.visits(id, by: context.principal)))
    }
}
