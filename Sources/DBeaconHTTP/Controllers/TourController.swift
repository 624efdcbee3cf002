import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/tours…` and `/v1/places/{id}/media`: city tours.
struct TourController {
    let tours: TourService
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("tours", use: create)
        group.get("tours/nearby", use: nearby)
        group.get("tours/:id", use: get)
        group.get("tours/:id/next", use: next)
        group.post("tours/:id/follow", use: follow)
        group.delete("tours/:id/follow", use: unfollow)
        group.get("tours/:id/progress", use: progress)
        group.put("tours/:id/stops", use: setStops)
        group.delete("places/:id/media/:media", use: deleteMedia)
        group.post("places/:id/media", use: share)
        group.get("places/:id/media", use: media)
    }

    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try TourDraft(json: try await request.jsonBody(limit: maxBodyBytes), limits: tours.beacons.limits)
        let view = try await tours.create(draft, by: context.principal)
        return .json(ServiceEncoding.tour(view), status: .created, headers: [.location: "/v1/tours/\(view.tour.id)"])
    }

    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.tour(try await tours.view(try BeaconController.beaconID(context), by: context.principal)))
    }

    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let found = try await tours.nearby(point: try q.position(), tags: try q.tags(), at: try q.timestamp("at"), limit: try q.limit(),
                                           by: context.principal)
        return .json(ServiceEncoding.nearbyTours(found))
    }

    /// `?from=bcn_…` (a stop; absent: from the start) and optional `lat`/`lon` of the caller.
    @Sendable func next(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        var from: BeaconID?
        if let raw = try q.string("from") {
            guard let id = BeaconID(raw) else { throw DBeaconError.invalid("from", "not a beacon id (bcn_…)", code: "invalid_id") }
            from = id
        }
        if q.has("lat") != q.has("lon") {
            throw DBeaconError.invalid(q.has("lat") ? "lon" : "lat", "lat and lon are given together", code: "missing_partner")
        }
        let origin = q.has("lat") ? try q.position() : nil
        let n = try await tours.next(try BeaconController.beaconID(context), from: from, origin: origin, by: context.principal)
        return .json(ServiceEncoding.tourNext(n))
    }

    @Sendable func follow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        let (progress, started) = try await tours.follow(id, by: context.principal)
        return .json(ServiceEncoding.progress(progress, tour: id), status: started ? .created : .ok)
    }

    @Sendable func unfollow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await tours.unfollow(try BeaconController.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func progress(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        return .json(ServiceEncoding.progress(try await tours.progress(id, by: context.principal), tour: id))
    }

    @Sendable func share(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        let content = try BeaconFeatureCodec.decodeContentRef(try ObjectReader(body))
        let media = try await tours.shareMedia(try BeaconController.beaconID(context), content: content, by: context.principal)
        return .json(ServiceEncoding.media(media), status: .created)
    }

    @Sendable func media(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let page = try await tours.media(try BeaconController.beaconID(context), limit: try q.limit(), after: try await context.position(of: try q.string("cursor")),
                                         by: context.principal)
        return .json(.object(["media": .array(page.items.map(ServiceEncoding.media)), "next_cursor": .optional(try await context.cursor(after: page.next))]))
    }

    /// Replaces the stops (owner only; `If-Match` honoured): add, remove, reorder.
    @Sendable func setStops(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let stops = try TourDraft.stops(json: try await request.jsonBody(limit: maxBodyBytes), limits: tours.beacons.limits)
        let view = try await tours.setStops(try BeaconController.beaconID(context), stops: stops, ifMatch: try request.ifMatchVersions(),
                                            by: context.principal)
        return .json(ServiceEncoding.tour(view))
    }

    @Sendable func deleteMedia(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let raw = try context.parameters.require("media")
        guard let media = MediaID(raw) else { throw DBeaconError.notFound("media \(raw)") }
        try await tours.deleteMedia(try BeaconController.beaconID(context), media: media, by: context.principal)
        return Response(status: .noContent)
    }
}
