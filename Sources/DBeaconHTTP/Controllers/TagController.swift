import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Hummingbird

/// Categories: `GET /v1/tags` (tags in use, with counts, over the beacons the caller may see)
/// and the categories the caller follows (`/v1/me/tags`).
struct TagController {
    /// The beacon service, which counts tags and keeps the caller's category follows.
    let beacons: BeaconService
    /// Bodies of `PUT /v1/me/tags/{tag}` may be this large; beyond, 413 `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the category routes on the authenticated `/v1` group; `{tag}` is read as a tag
    /// (`tag(_:)`).
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("tags", use: counts)
        group.get("me/tags", use: follows)
        group.put("me/tags/:tag", use: follow)
        group.delete("me/tags/:tag", use: unfollow)
    }

    /// `GET /v1/tags`: the tags of the beacons the caller may see, with counts, most used first;
    /// `bbox` narrows the area, `limit` defaults to 100 (at most `BeaconService.maxTagCountLimit`).
    @Sendable func counts(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let counts = try await beacons.tagCounts(bbox: try q.bbox(), limit: try q.limit(default: 100, max: BeaconService.maxTagCountLimit),
                                                 by: context.principal)
        return .json(TagEncoding.counts(counts))
    }

    /// `GET /v1/me/tags`: the categories the caller follows, with their radius (users only: 403 for
    /// the admin token).
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

    /// `DELETE /v1/me/tags/{tag}`: stops following the category. 204; 404 when the caller did not
    /// follow it.
    @Sendable func unfollow(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await beacons.unfollowTag(try Self.tag(context), by: context.principal)
        return Response(status: .noContent)
    }

    /// The `:tag` path parameter, lower-cased and checked as a tag slug (422 `invalid_tag`
    /// otherwise).
    static func tag(_ context: AuthenticatedContext) throws -> String {
        try BeaconFeatureCodec.normalizeTag(try context.parameters.require("tag"), path: "tag")
    }
}
