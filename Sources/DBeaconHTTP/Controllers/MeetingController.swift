import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/meetings…`: the meeting organizer.
struct MeetingController {
    let meetings: MeetingService
    let maxBodyBytes: Int

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

    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let draft = try MeetingDraft(json: try await request.jsonBody(limit: maxBodyBytes), limits: meetings.beacons.limits)
        let beacon = try await meetings.beacons.present(try await meetings.create(draft, by: context.principal), to: context.principal)
        var response = Response.feature(beacon, status: .created)
        response.headers[.location] = "/v1/meetings/\(beacon.id)"
        return response
    }

    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let view = try await meetings.view(try BeaconController.beaconID(context), by: context.principal)
        return .json(ServiceEncoding.meeting(view), headers: [.eTag: "\"\(view.beacon.version)\""])
    }

    @Sendable func update(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let id = try BeaconController.beaconID(context)
        let ifMatch = try request.ifMatchVersions()
        let changes = try MeetingChanges(json: try await request.jsonBody(limit: maxBodyBytes), limits: meetings.beacons.limits)
        let (beacon, _) = try await meetings.update(id, changes, ifMatch: ifMatch, by: context.principal)
        return .feature(try await meetings.beacons.present(beacon, to: context.principal))
    }

    @Sendable func cancel(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await meetings.cancel(try BeaconController.beaconID(context), ifMatch: try request.ifMatchVersions(), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func join(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let id = try BeaconController.beaconID(context)
        let (joined, count) = try await meetings.join(id, by: context.principal)
        return .json(.object(JSONObject([
            ("meeting", .string(id.rawValue)), ("user", .optional(context.principal.userID?.rawValue)), ("joined", true),
            ("participants_count", .int(count)),
        ])), status: joined ? .created : .ok)
    }

    @Sendable func leave(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await meetings.leave(try BeaconController.beaconID(context), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let results = try await meetings.nearby(point: try q.position(), at: try q.timestamp("at"), limit: try q.limit(),
                                                by: context.principal)
        return .nearby(results)
    }

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
