import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/beacons…` and `/v1/nearby`: CRUD with ETag/If-Match, lists, nearby, followers,
/// related beacons, content and directions.
struct BeaconController {
    /// The beacon service: every handler reads and writes through it, so its visibility gate
    /// decides what each caller sees.
    let beacons: BeaconService
    /// Bodies of the other JSON requests may be this large (`HTTPSettings.maxBodyBytes`); beyond,
    /// 413 `body_too_large`.
    let maxBodyBytes: Int
    /// Bodies of `POST /v1/beacons/import` may be this large.
    let maxImportBytes: Int

    /// Registers the beacon routes on `/v1`, the group `buildRouter` puts behind `AuthMiddleware`
    /// and `RateLimitMiddleware`: every handler here has a principal.
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

    /// `POST /v1/beacons`: a beacon owned by the caller, from a GeoJSON Feature
    /// (`BeaconFeatureCodec.decodeDraft`). 201 with the Feature as the caller sees it, its `ETag`
    /// and `Location`; 403 for the admin token (it owns no beacons), 422 for an invalid Feature or
    /// an id outside the caller's namespace (`id_outside_namespace`), 429 `beacon_quota_exceeded`.
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

    /// `GET /v1/beacons/{id}`: the Feature with its `ETag`; 404 when the caller may not see it. An
    /// `If-None-Match` naming the current version (or `*`) answers 304 with the `ETag` and no body.
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let beacon = try await beacons.get(try Self.beaconID(context), by: context.principal)
        if let tags = try request.entityTags(.ifNoneMatch), tags == Request.anyVersion || tags.contains(beacon.version) {
            return Response(status: .notModified, headers: [.eTag: "\"\(beacon.version)\""])
        }
        return .feature(beacon)
    }

    /// `PATCH /v1/beacons/{id}`: an RFC 7396 merge patch of the Feature
    /// (`BeaconFeatureCodec.patched`), validated as on create; the owner only (403). `If-Match` is
    /// honoured: 412 `version_mismatch` for another version, 409 `edit_conflict` when the beacon
    /// kept changing while the patch was applied. 200 with the new Feature and its `ETag`.
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

    /// `DELETE /v1/beacons/{id}`: deletes the beacon (its owner, or the operator for moderation;
    /// 403 otherwise) and tells its followers (`beacon.deleted`, `meeting.cancelled` for a
    /// meeting). `If-Match` is honoured (412 `version_mismatch`). 204.
    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        _ = try await beacons.delete(try Self.beaconID(context), ifMatch: try request.ifMatchVersions(), by: context.principal)
        return Response(status: .noContent)
    }

    /// `GET /v1/beacons`: the beacons the caller may see, a page at a time (`limit`, `cursor`),
    /// filtered by `tag`, `bbox`, `service` and `owner` (`me` or a user id: 400 otherwise, 403 for
    /// `owner=me` with the admin token). A FeatureCollection with `next_cursor`.
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

    /// `GET /v1/nearby?lat=&lon=`: the beacons whose perimeter covers the point, visible to the
    /// caller and alive at `at` (default now), nearest first with `distance_m` and `bearing_deg`;
    /// `tag` (any of them) and `limit` narrow it. Written straight into the response's buffer
    /// (`Response.nearby`); `perimeter` other than `full` or `none` is 400.
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

    /// `POST /v1/beacons/{id}/followers`: the caller follows a beacon they can see (users only: 403
    /// for the admin token). 201 when this started the subscription, 200 when it existed already;
    /// the answer carries `followers_count`.
    @Sendable func follow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (beacon, created) = try await beacons.follow(try Self.beaconID(context), by: context.principal)
        return .json(.object([
            "beacon": .string(beacon.id.rawValue), "user": .optional(context.principal.userID?.rawValue),
            "following": true, "followers_count": .int(beacon.followersCount),
        ]), status: created ? .created : .ok)
    }

    /// `DELETE /v1/beacons/{id}/followers/me`: 204. A follower may always unfollow; anyone else
    /// needs to see the beacon (404 otherwise), and unfollowing a visible beacon one does not
    /// follow changes nothing.
    @Sendable func unfollow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await beacons.unfollow(try Self.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// `GET /v1/beacons/{id}/followers`: the followers (`id`, `name`, `since`) in the order they
    /// started following, a page at a time; the owner (or the operator) only, 403 for others who
    /// may see the beacon.
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

    /// `GET /v1/beacons/{id}/related`: the targets of the beacon's relationships that the caller
    /// may see (others silently left out), ordered ones first; `type` keeps one relationship type
    /// (a tag: 422 when it is not one). Each Feature's properties add `relationship` (`type`, and
    /// `order` when set). Not paginated.
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

    /// `POST /v1/beacons/{id}/content`: appends one content reference (`kind`, `url`, `title`) as
    /// the beacon's `content_policy` allows (403 otherwise, and for the admin token); 422
    /// `too_many` past `BeaconLimits.maxContent` items. 201 with the updated Feature; followers
    /// hear `beacon.updated`.
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

    /// `GET /v1/beacons/{id}/directions?from_lat=&from_lon=`: geodesic distance and initial bearing
    /// from the point to the beacon's current location, a walking time and a `geo:` URI (`encode`);
    /// 404 when the caller may not see the beacon.
    @Sendable func directions(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let from = try q.position(lat: "from_lat", lon: "from_lon")
        let d = try await beacons.directions(to: try Self.beaconID(context), from: from, by: context.principal)
        return .json(Self.encode(d, from: from))
    }

    /// The directions answer: `beacon`, `from` and `to` (`{"lat","lon"}`), `distance_m` (metres on
    /// the WGS84 ellipsoid), `bearing_deg` (degrees clockwise from north), `walking_eta_s` (seconds
    /// at 1.4 m/s) and `geo_uri` (RFC 5870).
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
