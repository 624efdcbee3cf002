import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/meetings…`: the meeting organizer.
struct MeetingController {
    /// The meeting service; its `beacons` presents meetings through the visibility gate and holds
    /// the geometry limits.
    let meetings: MeetingService
    /// Bodies of `POST /v1/meetings` and `PATCH /v1/meetings/{id}` may be this large; beyond, 413
    /// `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the meeting routes on the authenticated `/v1` group. A meeting is a beacon: `{id}`
    /// is its beacon id (`BeaconController.beaconID`).
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("meetings", use: create)
        group.get("meetings", use: mine)
        group.get("meetings/nearby", use: nearby)
        group.get("meetings/:id", use: get)
        group.patch("meetings/:id", use: update)
        group.delete("meetings/:id", use: cancel)
        group.post("meetings/:id/join", use: join)
        group.post("meetings/:id/leave", use: leave)
        group.get("meetings/:id/directions", use: directions)
    }

    /// `POST /v1/meetings` (`MeetingDraft(json:limits:)`): a meeting organized by the caller, a
    /// beacon of service `meeting` whose lifetime is `start`…`end` and whose visibility members are
    /// the invitees. 201 with the Feature, its `ETag` and `Location`; 422 for an invalid body.
    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try MeetingDraft(json: try await request.jsonBody(limit: maxBodyBytes), limits: meetings.beacons.limits)
        let beacon = try await meetings.beacons.present(try await meetings.create(draft, by: context.principal), to: context.principal)
        var response = Response.feature(beacon, status: .created)
        response.headers[.location] = "/v1/meetings/\(beacon.id)"
        return response
    }

    /// `GET /v1/meetings/{id}`: the meeting Feature with `properties.meeting` (attendee count,
    /// whether the caller joined, the attendees for the organizer) and its `ETag`; 404 for anything
    /// the caller may not see or that is not a meeting.
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let view = try await meetings.view(try BeaconController.beaconID(context), by: context.principal)
        return .json(ServiceEncoding.meeting(view), headers: [.eTag: "\"\(view.beacon.version)\""])
    }

    /// `PATCH /v1/meetings/{id}` (`MeetingChanges(json:limits:)`): changes any create member, the
    /// organizer only; attendees receive `meeting.updated`. `If-Match` is honoured (412 for another
    /// version). 200 with the new Feature.
    @Sendable func update(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let id = try BeaconController.beaconID(context)
        let ifMatch = try request.ifMatchVersions()
        let changes = try MeetingChanges(json: try await request.jsonBody(limit: maxBodyBytes), limits: meetings.beacons.limits)
        let (beacon, _) = try await meetings.update(id, changes, ifMatch: ifMatch, by: context.principal)
        return .feature(try await meetings.beacons.present(beacon, to: context.principal))
    }

    /// `DELETE /v1/meetings/{id}`: cancels the meeting (the organizer, or the operator); attendees
    /// receive `meeting.cancelled`. `If-Match` is honoured. 204.
    @Sendable func cancel(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await meetings.cancel(try BeaconController.beaconID(context), ifMatch: try request.ifMatchVersions(), by: context.principal)
        return Response(status: .noContent)
    }

    /// `POST /v1/meetings/{id}/join`: the caller joins (and follows) a meeting they can see now.
    /// 201 when this joined them, 200 when they had joined already; the answer carries
    /// `participants_count`.
    @Sendable func join(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        let (joined, count) = try await meetings.join(id, by: context.principal)
        return .json(.object(JSONObject([
            ("meeting", .string(id.rawValue)), ("user", .optional(context.principal.userID?.rawValue)), ("joined", true),
            ("participants_count", .int(count)),
        ])), status: joined ? .created : .ok)
    }

    /// `POST /v1/meetings/{id}/leave`: the caller stops attending and following the meeting. 204.
    @Sendable func leave(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await meetings.leave(try BeaconController.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// `GET /v1/meetings/nearby?lat=&lon=`: meetings whose discovery perimeter covers the point,
    /// visible to the caller and alive at `at` (default now), nearest first, written as
    /// `GET /v1/nearby` writes beacons.
    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let results = try await meetings.nearby(point: try q.position(), at: try q.timestamp("at"), limit: try q.limit(),
                                                by: context.principal)
        return .nearby(results)
    }

    /// `GET /v1/meetings`: a FeatureCollection of the meetings the caller organizes or attends (and
    /// can still see), soonest start first.
    @Sendable func mine(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let list = try await meetings.mine(by: context.principal)
        return .json(BeaconFeatureCodec.collection(list.map(BeaconFeatureCodec.encode)))
    }

    /// `?lat=&lon=` (or `from_lat`/`from_lon`, as for beacons).
    @Sendable func directions(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let from = try q.string("from_lat") != nil ? try q.position(lat: "from_lat", lon: "from_lon") : try q.position()
        let d = try await meetings.directions(try BeaconController.beaconID(context), from: from, by: context.principal)
        return .json(ServiceEncoding.directions(d, from: from))
    }
}
