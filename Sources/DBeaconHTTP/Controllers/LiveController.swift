import DBeaconAPI
import DBeaconCore
import DBeaconServices
import DBeaconStore
import Hummingbird

/// `POST /v1/me/location` and `GET /v1/events`.
struct LiveController {
    let fences: FenceEngine
    let feed: EventFeed
    let clock: any WallClock
    /// Fixes per user and minute.
    let limiter: RateLimiter
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("me/location", use: report)
        group.get("events", use: events)
    }

    @Sendable func report(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let user = context.principal.userID else {
            throw DBeaconError.forbidden("location fixes belong to users; the admin token has none")
        }
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        let fixes = try LocationFixRequest.decode(body, now: clock.now(), config: await fences.config)
        try limiter.consume(.fixes, key: user.rawValue, cost: Double(fixes.count))
        let report = try await fences.report(user: user, fixes: fixes)
        return .json(.object(JSONObject([
            ("inside", .array(report.inside.map { .string($0.rawValue) })),
            ("events", .array(report.events.map(\.json))),
            ("accepted", .int(report.accepted)),
            ("ignored", .int(report.ignored)),
        ])))
    }

    @Sendable func events(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        var after: Int64?
        if let raw = try q.string("after") ?? q.string("cursor") {
            if let id = EventID(raw) {
                guard let position = try await feed.position(after: id, by: context.principal) else {
                    throw DBeaconError.notFound("event \(raw)", path: "after")
                }
                after = position
            } else if let cursor = Cursor.decode(raw) {
                after = cursor
            } else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "after must be an event id or a cursor", path: "after")
            }
        }
        let page = try await feed.events(by: context.principal, after: after, limit: try q.limit())
        return .json(.object([
            "events": .array(page.items.map(\.json)),
            "next_cursor": .optional(Cursor.encode(page.next)),
        ]))
    }
}
