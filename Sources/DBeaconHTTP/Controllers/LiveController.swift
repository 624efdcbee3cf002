import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Hummingbird

/// The caller's location reports (`POST /v1/me/location`: fixes; `POST /v1/me/region-events`:
/// crossings decided on the phone) and `GET /v1/events`.
struct LiveController {
    /// Evaluates fixes and region crossings against the fences of the beacons the caller may see.
    let fences: FenceEngine
    /// Resolves reported region ids to beacons, and (its `beacons`) the gate the answers pass
    /// through.
    let regions: RegionService
    /// The event log `GET /v1/events` reads, filtered for the caller.
    let feed: EventFeed
    /// The `now` of a fix or region event sent without a timestamp.
    let clock: any WallClock
    /// Fixes per user and minute.
    let limiter: RateLimiter
    /// Bodies of location and region reports may be this large; beyond, 413 `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the location routes and `GET /v1/events` on the authenticated `/v1` group.
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("me/location", use: report)
        group.post("me/region-events", use: reportRegions)
        group.get("events", use: events)
    }

    /// `POST /v1/me/location` (`LocationFixRequest`): one fix or a batch through the fence engine.
    /// 200 with the beacons the caller is inside now, the events the fixes produced, and how many
    /// fixes were `accepted` and `ignored`; 403 for the admin token, 422 for a fix too old or too
    /// far ahead, 429 past the user's fixes per minute.
    @Sendable func report(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await userReport(request, context, what: "location fixes", decode: { try LocationFixRequest.decode($0, now: $1, config: $2) }) {
            user, fixes in
            let report = try await fences.report(user: user, fixes: fixes)
            var answer = Self.outcome(try await visible(report.inside, to: context.principal, coveringNow: report.coveringNow),
                                      report.events)
            answer["accepted"] = .int(report.accepted)
            answer["ignored"] = .int(report.ignored)
            return answer
        }
    }

    /// Entries and exits decided on the phone, instead of a stream of fixes.
    @Sendable func reportRegions(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await userReport(request, context, what: "region events", decode: { try RegionEventRequest.decode($0, now: $1, config: $2) }) {
            user, reported in
            let crossings = try await regions.crossings(reported.map { ($0.region, $0.entered, $0.at, $0.path) }, by: context.principal)
            let (events, inside) = try await fences.reportRegions(user: user, crossings: crossings)
            return Self.outcome(try await visible(inside, to: context.principal), events)
        }
    }

    /// The beacons among `inside` (the fence engine's states) that the caller may see now: a
    /// state the engine has not yet dropped for a beacon that became hidden must not name it.
    private func visible(_ inside: [BeaconID], to principal: Principal, coveringNow: [BeaconID] = []) async throws -> [BeaconID] {
        try await regions.beacons.gate.visible(inside, to: principal, coveringNow: coveringNow)
    }

    /// A report by a user (the admin token has no location): decoded, counted against the
    /// user's fixes per minute (one per item), handled.
    private func userReport<Item>(_ request: Request, _ context: AuthenticatedContext, what: String,
                                  decode: (JSONValue, Timestamp, FenceConfig) throws -> [Item],
                                  handle: (UserID, [Item]) async throws -> JSONObject) async throws -> Response {
        guard let user = context.principal.userID else {
            throw DBeaconError.forbidden("\(what) belong to users; the admin token has none")
        }
        var request = request
        let items = try decode(try await request.jsonBody(limit: maxBodyBytes), clock.now(), fences.config)
        try limiter.consume(.fixes, key: user.rawValue, cost: Double(items.count))
        return .json(.object(try await handle(user, items)))
    }

    /// `{"inside": [ids], "events": […]}`.
    static func outcome(_ inside: [BeaconID], _ events: [Event]) -> JSONObject {
        JSONObject([("inside", .array(inside.map { .string($0.rawValue) })), ("events", .array(events.map(\.json)))])
    }

    /// `GET /v1/events`: the events addressed to the caller (every event for the admin token),
    /// oldest first, a page at a time; `after` (or `cursor`) resumes after an event id or a
    /// `next_cursor`.
    @Sendable func events(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        var after: Int64?
        if let raw = try q.string("after") ?? q.string("cursor") {
            after = try await feed.resumePosition(raw, path: "after", context: context)
        }
        return .json(try await feed.pageJSON(try await feed.events(by: context.principal, after: after, limit: try q.limit()), context: context))
    }
}
