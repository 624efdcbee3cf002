import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/promotions…` and `/v1/me/interests`: location-based advertising.
struct PromotionController {
    /// The promotion service (scoring, interactions, interests); its `beacons` presents promotions
    /// through the gate.
    let promotions: PromotionService
    /// Bodies of the promotion, interaction and interests requests may be this large; beyond, 413
    /// `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the promotion routes and the caller's saved items and interests (`/v1/me/saved`,
    /// `/v1/me/interests`) on the authenticated `/v1` group; `{id}` is the promotion's beacon id.
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("promotions", use: create)
        group.get("promotions/nearby", use: nearby)
        group.get("promotions/pick", use: pick)
        group.get("promotions/:id", use: get)
        group.post("promotions/:id/interactions", use: interact)
        group.get("promotions/:id/stats", use: stats)
        group.get("promotions/:id/feedback", use: feedback)
        group.get("me/saved", use: saved)
        group.delete("me/saved/:id", use: unsave)
        group.put("me/interests", use: setInterests)
        group.get("me/interests", use: interests)
        group.get("me/interests/suggested", use: suggestedInterests)
    }

    /// `POST /v1/promotions` (`PromotionDraft(json:limits:)`): a promotion advertised by the
    /// caller, a beacon of service `promotion` whose perimeter is the promotion region. 201 with
    /// the Feature, its `ETag` and `Location`.
    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try PromotionDraft(json: try await request.jsonBody(limit: maxBodyBytes), limits: promotions.beacons.limits)
        let beacon = try await promotions.beacons.present(try await promotions.create(draft, by: context.principal), to: context.principal)
        var response = Response.feature(beacon, status: .created)
        response.headers[.location] = "/v1/promotions/\(beacon.id)"
        return response
    }

    /// `GET /v1/promotions/{id}`: the promotion's Feature with its `ETag`; 404 when the caller may
    /// not see it.
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .feature(try await promotions.promotion(try BeaconController.beaconID(context), by: context.principal))
    }

    /// `GET /v1/promotions/nearby?lat=&lon=`: promotions whose region covers the point (visible,
    /// alive at `at`), best score for the caller first, then nearest, each with `score`; `related`
    /// adds the promotions they relate to that are not listed (`ServiceEncoding.promotionsNearby`).
    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let (listed, related) = try await promotions.nearby(point: try q.position(), tags: try q.tags(), at: try q.timestamp("at"),
                                                            limit: try q.limit(), by: context.principal)
        return .json(ServiceEncoding.promotionsNearby(listed, related: related))
    }

    /// `GET /v1/promotions/pick?lat=&lon=`: the one promotion to notify the caller of here (highest
    /// score, ties broken at random), recorded as `shown`. Past the per-user frequency cap the
    /// answer is still 200, with `capped: true`, no promotion, and `Retry-After` besides
    /// `retry_after_s`.
    @Sendable func pick(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let pick = try await promotions.pick(point: try q.position(), at: try q.timestamp("at"), by: context.principal)
        var response = Response.json(ServiceEncoding.pick(pick))
        if let wait = pick.retryAfterSeconds { response.headers[.retryAfter] = String(wait) }
        return response
    }

    /// See `InteractionRequest`.
    @Sendable func interact(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try InteractionRequest(json: try await request.jsonBody(limit: maxBodyBytes))
        let interaction = try await promotions.record(try BeaconController.beaconID(context), type: body.type, rating: body.rating,
                                                      text: body.text, by: context.principal)
        return .json(ServiceEncoding.interaction(interaction), status: .created)
    }

    /// `GET /v1/promotions/{id}/feedback`: the feedback texts without their authors, a page at a
    /// time; the advertiser only (403 for others who may see the promotion).
    @Sendable func feedback(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let page = try await promotions.feedback(try BeaconController.beaconID(context), limit: try q.limit(), after: try await context.position(of: try q.string("cursor")),
                                                 by: context.principal)
        return .json(ServiceEncoding.feedback(page, nextCursor: try await context.cursor(after: page.next)))
    }

    /// `GET /v1/me/saved`: the promotions the caller saved and may still see, most recently saved
    /// first.
    @Sendable func saved(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.saved(try await promotions.saved(by: context.principal)))
    }

    /// `DELETE /v1/me/saved/{id}`: deletes a saved item. 204; 404 when it is not among the caller's
    /// saved items as they see them (a promotion that became hidden answers as a deleted one).
    @Sendable func unsave(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await promotions.unsave(try BeaconController.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// `GET /v1/promotions/{id}/stats`: interaction totals (shown, clicked, calendar adds, saves,
    /// ratings, feedback) and the click-through rate; the advertiser only (403 for others who may
    /// see it).
    @Sendable func stats(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        return .json(ServiceEncoding.stats(id, try await promotions.stats(id, by: context.principal)))
    }

    /// `PUT /v1/me/interests` (`InterestsRequest`): replaces the caller's interest categories and
    /// answers them as stored.
    @Sendable func setInterests(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let interests = try InterestsRequest.decode(try await request.jsonBody(limit: maxBodyBytes))
        let stored = try await promotions.setInterests(interests, by: context.principal)
        return .json(ServiceEncoding.interests(stored))
    }

    /// `GET /v1/me/interests/suggested`: tags of the beacons the caller entered that are not among
    /// their interests yet, each with a suggested score; offered only, never set.
    @Sendable func suggestedInterests(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(VisitEncoding.suggestedInterests(try await promotions.suggestedInterests(by: context.principal)))
    }

    /// `GET /v1/me/interests`: `{"interests": [category, …], "scores": {category: score}}`.
    @Sendable func interests(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.interests(try await promotions.interests(by: context.principal)))
    }
}
