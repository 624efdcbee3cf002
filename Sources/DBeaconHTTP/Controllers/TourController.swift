import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/tours…` and `/v1/places/{id}/media`: city tours.
struct TourController {
    /// The tour service: tours, their stops and places, followers' progress and media shared at
    /// places.
    let tours: TourService
    /// Bodies of tours, stop lists and shared media may be this large; beyond, 413
    /// `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the tour and place routes on the authenticated `/v1` group. Tours and places are
    /// beacons: `{id}` is a beacon id (`BeaconController.beaconID`).
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

    /// `POST /v1/tours` (`TourDraft(json:limits:)`): a tour owned by the caller with its new
    /// places, in one transaction. 201 with the tour, its stops and `Location`; 422 for an invalid
    /// body or a stop the caller cannot see.
    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try TourDraft(json: try await request.jsonBody(limit: maxBodyBytes), limits: tours.beacons.limits)
        let view = try await tours.create(draft, by: context.principal)
        return .json(ServiceEncoding.tour(view), status: .created, headers: [.location: "/v1/tours/\(view.tour.id)"])
    }

    /// `GET /v1/tours/{id}`: the tour Feature with the stops the caller can see, in order, and the
    /// caller's progress when they follow it; 404 for anything the caller may not see or that is
    /// not a tour.
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.tour(try await tours.view(try BeaconController.beaconID(context), by: context.principal)))
    }

    /// `GET /v1/tours/nearby?lat=&lon=`: tours (visible, alive at `at`) with a stop whose perimeter
    /// covers the point, nearest matching stop first; each Feature lists the covering stops in
    /// `matched_stops`.
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

    /// `POST /v1/tours/{id}/follow`: from now on, entering a stop's perimeter marks it visited
    /// (users only: 403 for the admin token). 201 with the progress when this started following,
    /// 200 when the caller followed already.
    @Sendable func follow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        let (progress, started) = try await tours.follow(id, by: context.principal)
        return .json(ServiceEncoding.progress(progress, tour: id), status: started ? .created : .ok)
    }

    /// `DELETE /v1/tours/{id}/follow`: stops following and drops the progress. 204; 409
    /// `not_following` for a tour the caller does not follow.
    @Sendable func unfollow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await tours.unfollow(try BeaconController.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// `GET /v1/tours/{id}/progress`: the stops the caller visited (with when), the next one, and
    /// whether the tour is complete; 409 `not_following` until they follow it.
    @Sendable func progress(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        return .json(ServiceEncoding.progress(try await tours.progress(id, by: context.principal), tour: id))
    }

    /// `POST /v1/places/{id}/media`: shares a content reference at a place while the caller's last
    /// location fix, recent enough, lies inside its perimeter (403 `not_at_place` otherwise). 201
    /// with the media item.
    @Sendable func share(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        let content = try BeaconFeatureCodec.decodeContentRef(try ObjectReader(body))
        let media = try await tours.shareMedia(try BeaconController.beaconID(context), content: content, by: context.principal)
        return .json(ServiceEncoding.media(media), status: .created)
    }

    /// `GET /v1/places/{id}/media`: the media shared at a place, a page at a time, for those whose
    /// last fix is inside it and for its owner (403 `not_at_place` for others).
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

    /// `DELETE /v1/places/{id}/media/{media}`: its author, the place's owner or the operator (403
    /// for others); 404 when the place or the media is not there for the caller. 204.
    @Sendable func deleteMedia(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let raw = try context.parameters.require("media")
        guard let media = MediaID(raw) else { throw DBeaconError.notFound("media \(raw)") }
        try await tours.deleteMedia(try BeaconController.beaconID(context), media: media, by: context.principal)
        return Response(status: .noContent)
    }
}
