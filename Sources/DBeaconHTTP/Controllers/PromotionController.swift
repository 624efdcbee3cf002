import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/promotions…` and `/v1/me/interests`: location-based advertising.
struct PromotionController {
    let promotions: PromotionService
    let maxBodyBytes: Int

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

    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try PromotionDraft(json: try await request.jsonBody(limit: maxBodyBytes), limits: promotions.beacons.limits)
        let beacon = try await promotions.beacons.present(try await promotions.create(draft, by: context.principal), to: context.principal)
        var response = Response.feature(beacon, status: .created)
        response.headers[.location] = "/v1/promotions/\(beacon.id)"
        return response
    }

    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .feature(try await promotions.promotion(try BeaconController.beaconID(context), by: context.principal))
    }

    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let (listed, related) = try await promotions.nearby(point: try q.position(), tags: try q.tags(), at: try q.timestamp("at"),
                                                            limit: try q.limit(), by: context.principal)
        return .json(ServiceEncoding.promotionsNearby(listed, related: related))
    }

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

    @Sendable func feedback(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let page = try await promotions.feedback(try BeaconController.beaconID(context), limit: try q.limit(), after: try await context.position(of: try q.string("cursor")),
                                                 by: context.principal)
        return .json(ServiceEncoding.feedback(page, nextCursor: try await context.cursor(after: page.next)))
    }

    @Sendable func saved(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.saved(try await promotions.saved(by: context.principal)))
    }

    @Sendable func unsave(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await promotions.unsave(try BeaconController.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func stats(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        return .json(ServiceEncoding.stats(id, try await promotions.stats(id, by: context.principal)))
    }

    @Sendable func setInterests(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let interests = try InterestsRequest.decode(try await request.jsonBody(limit: maxBodyBytes))
        let stored = try await promotions.setInterests(interests, by: context.principal)
        return .json(ServiceEncoding.interests(stored))
    }

    @Sendable func suggestedInterests(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(VisitEncoding.suggestedInterests(try await promotions.suggestedInterests(by: context.principal)))
    }

    @Sendable func interests(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.interests(try await promotions.interests(by: context.principal)))
    }
}
