import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Hummingbird

/// `/v1/groups…`: group tracking with out-of-range alerts.
struct GroupController {
    /// The group service: membership, the members' range states and the group beacons' visibility.
    let groups: GroupService
    /// Bodies of `POST /v1/groups` may be this large; beyond, 413 `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the group routes on the authenticated `/v1` group; `{id}` is a group id
    /// (`groupID`).
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

    /// The `:id` path parameter as a group id; a value that cannot be one is 404, as for an unknown
    /// group.
    static func groupID(_ context: AuthenticatedContext) throws -> GroupID {
        let raw = try context.parameters.require("id")
        guard let id = GroupID(raw) else { throw DBeaconError.notFound("group \(raw)") }
        return id
    }

    /// `POST /v1/groups` (`GroupDraft(json:)`): a group guided by the caller, whose beacon follows
    /// the guide's live location with a circle of `range_m`. 201 with the group's status and
    /// `Location`; 422 for an invalid body.
    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let status = try await groups.create(try GroupDraft(json: try await request.jsonBody(limit: maxBodyBytes)), by: context.principal)
        return .json(ServiceEncoding.group(status), status: .created, headers: [.location: "/v1/groups/\(status.group.id)"])
    }

    /// `GET /v1/groups/{id}`: the guide and each member with their last shared position, its age,
    /// `stale`, the distance from the guide and the range state (`ServiceEncoding.group`); the
    /// guide and members only, 404 for anyone else.
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(ServiceEncoding.group(try await groups.status(try Self.groupID(context), by: context.principal)))
    }

    /// `DELETE /v1/groups/{id}`: deletes the group and its beacon (the guide, or the operator).
    /// 204.
    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await groups.delete(try Self.groupID(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// `POST /v1/groups/{id}/join`: the caller joins a group they may see and shares their live
    /// location with it from now on; the guide and the members receive `group.member_joined`. 200
    /// with the group's status.
    @Sendable func join(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let (status, _) = try await groups.join(try Self.groupID(context), by: context.principal)
        return .json(ServiceEncoding.group(status))
    }

    /// `POST /v1/groups/{id}/leave`: the caller leaves; the guide and the remaining members receive
    /// `group.member_left`. 204; 409 `group_leader` for the guide, who deletes the group instead.
    @Sendable func leave(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await groups.leave(try Self.groupID(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// `DELETE /v1/groups/{id}/members/{user}`: the guide (or the operator) removes a member, who
    /// loses access at once and cannot rejoin. 204; a `{user}` that is not a user id is 404.
    @Sendable func remove(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let raw = try context.parameters.require("user")
        guard let user = UserID(raw) else { throw DBeaconError.notFound("member \(raw)") }
        try await groups.remove(try Self.groupID(context), member: user, by: context.principal)
        return Response(status: .noContent)
    }

    /// `GET /v1/groups/nearby?lat=&lon=`: group beacons whose range around their guide covers the
    /// point and that the caller may see, nearest first; each Feature's properties add `group` (its
    /// summary, with the id to join).
    @Sendable func nearby(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let found = try await groups.nearby(point: try q.position(), limit: try q.limit(), by: context.principal)
        return .json(BeaconFeatureCodec.collection(found.map { r, g in
            ServiceEncoding.nearbyFeature(r, extra: [("group", ServiceEncoding.groupSummary(g))])
        }))
    }

    /// `GET /v1/groups`: `{"groups": [summary, …]}`, the groups the caller guides or belongs to.
    @Sendable func mine(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(.object(["groups": .array(try await groups.mine(by: context.principal).map(ServiceEncoding.groupSummary))]))
    }
}
