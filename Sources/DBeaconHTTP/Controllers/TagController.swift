import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Hummingbird

/// Categories: `GET /v1/tags` (tags in use, with counts, over the beacons the caller may see)
/// and the categories the caller follows (`/v1/me/tags`).
struct TagController {
    let beacons: BeaconService
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("tags", use: counts)
        group.get("me/tags", use: follows)
        group.put("me/tags/:tag", use: follow)
        group.delete("me/tags/:tag", use: unfollow)
    }

    @Sendable func counts(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let counts = try await beacons.tagCounts(bbox: try q.bbox(), limit: try q.limit(default: 100, max: BeaconService.maxTagCountLimit),
                                                 by: context.principal)
        return .json(TagEncoding.counts(counts))
    }

    @Sendable func follows(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(TagEncoding.follows(try await beacons.tagFollows(by: context.principal)))
    }

    /// Follows the category; an optional body `{"radius_m": 2000}`. 201 when new, 200 when it
    /// was followed already (the radius is updated).
    @Sendable func follow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let tag = try Self.tag(context)
        let radius = try TagEncoding.radius(fromFollowBody: try await request.optionalJSONBody(limit: maxBodyBytes))
        let (follow, created) = try await beacons.followTag(tag, radiusM: radius, by: context.principal)
        return .json(TagEncoding.follow(follow), status: created ? .created : .ok)
    }

    @Sendable func unfollow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await beacons.unfollowTag(try Self.tag(context), by: context.principal)
        return Response(status: .noContent)
    }

    static func tag(_ context: AuthenticatedContext) throws -> String {
        try BeaconFeatureCodec.normalizeTag(try context.parameters.require("tag"), path: "tag")
    }
}
