import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Hummingbird

/// `GET /v1/regions`: what a phone should monitor near the caller.
struct RegionController {
    let regions: RegionService
    let fences: FenceEngine
    let clock: any WallClock
    let limiter: RateLimiter
    let maxBodyBytes: Int

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("regions", use: list)
        group.post("me/region-events", use: report)
    }

    /// Entries and exits decided on the phone, instead of a stream of fixes.
    @Sendable func report(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let user = context.principal.userID else {
            throw DBeaconError.forbidden("region events belong to users; the admin token has none")
        }
        var request = request
        let body = try await request.jsonBody(limit: maxBodyBytes)
        let reported = try RegionEventRequest.decode(body, now: clock.now(), config: await fences.config)
        try limiter.consume(.fixes, key: user.rawValue, cost: Double(reported.count))
        let crossings = try await regions.crossings(reported.map { ($0.region, $0.entered, $0.at, $0.path) }, by: context.principal)
        let (events, inside) = try await fences.reportRegions(user: user, crossings: crossings)
        return .json(.object(JSONObject([
            ("inside", .array(inside.map { .string($0.rawValue) })), ("events", .array(events.map(\.json))),
        ])))
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let point = try q.position()
        var max = RegionService.defaultMax
        if let raw = try q.string("max") {
            guard raw.count <= 12, let n = Int(raw) else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "max must be an integer", path: "max")
            }
            guard (2...RegionService.maxMax).contains(n) else {
                throw DBeaconError.invalid("max", "max is an integer from 2 to \(RegionService.maxMax)", code: "out_of_range")
            }
            max = n
        }
        let found = try await regions.regions(at: point, max: max, tags: try q.tags(), by: context.principal)
        return .json(RegionEncoding.regions(found, max: max))
    }
}
