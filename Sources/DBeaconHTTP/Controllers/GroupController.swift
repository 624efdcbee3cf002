import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/groups…`: group tracking with out-of-range alerts.
struct GroupController {
    let groups: GroupService
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("groups", use: create)
        group.get("groups", use: mine)
        group.get("groups/nearby", use: nearby)
        group.get("groups/:id", use: get)
        group.delete("groups/:id", use: delete)
        group.post("groups/:id/join", use: join)
        group.post("groups/:id/leave", use: leave)
        group.delete("groups/:id/members/:user", use: remove)
    }

    static func groupID(_ context: AuthenticatedContext) throws -> GroupID {
        let raw = try context.parameters.require("id")
        guard let id = GroupID(raw) else { throw DBeaconError.notFound("group \(raw)") }
        return id
    }

    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let status = try await groups.create(try GroupDraft(json: try await request.jsonBody(limit: maxBodyBytes)), by: context.principal)
        return .json(ServiceEncoding.group(status), status: .created, headers: [.location: "/v1/groups/\(status.group.id)"])
    }

    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.group(try await groups.status(try Self.groupID(context), by: context.principal)))
    }

    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await groups.delete(try Self.groupID(context), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func join(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (status, _) = try await groups.join(try Self.groupID(context), by: context.principal)
        return .json(ServiceEncoding.group(status))
    }

    @Sendable func leave(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await groups.leave(try Self.groupID(context), by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func remove(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let raw = try context.parameters.require("user")
        guard let user = UserID(raw) else { throw DBeaconError.notFound("member \(raw)") }
        try await groups.remove(try Self.groupID(context), member: user, by: context.principal)
        return Response(status: .noContent)
    }

    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let found = try await groups.nearby(point: try q.position(), limit: try q.limit(), by: context.principal)
        return .json(BeaconFeatureCodec.collection(found.map { r, g in
            ServiceEncoding.nearbyFeature(r, extra: [("group", ServiceEncoding.groupSummary(g))])
        }))
    }

    @Sendable func mine(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(.object(["groups": .array(try await groups.mine(by: context.principal).map(ServiceEncoding.groupSummary))]))
    }
}
