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
        let body = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
        let fixes = try Self.decodeFixes(body, now: clock.now(), config: await fences.config)
        try limiter.consume(.fixes, key: user.rawValue, cost: Double(fixes.count))
        let report = try await fences.report(user: user, fixes: fixes)
        return .json(.object(JSONObject([
            ("inside", .array(report.inside.map { .string($0.rawValue) })),
            ("events", .array(report.events.map(\.json))),
            ("accepted", .int(report.accepted)),
            ("ignored", .int(report.ignored)),
        ])))
    }

    /// One fix (`{"lat","lon","accuracy_m","timestamp"}`) or `{"fixes":[…]}`.
    static func decodeFixes(_ body: ObjectReader, now: Timestamp, config: FenceConfig) throws -> [LocationFix] {
        if let list = try body.optionalArray("fixes", maxCount: config.maxFixesPerRequest) {
            guard !list.isEmpty else { throw DBeaconError.invalid("fixes", "fixes must not be empty", code: "empty_value") }
            return try list.enumerated().map { i, value in
                try decodeFix(try ObjectReader(value, path: "fixes[\(i)]"), now: now, config: config)
            }
        }
        return [try decodeFix(body, now: now, config: config)]
    }

    static func decodeFix(_ f: ObjectReader, now: Timestamp, config: FenceConfig) throws -> LocationFix {
        let lat = try f.number("lat"), lon = try f.number("lon")
        guard (-90...90).contains(lat) else { throw DBeaconError.invalid(f.path("lat"), "lat must be within [-90, 90]", code: "out_of_range") }
        guard (-180...180).contains(lon) else { throw DBeaconError.invalid(f.path("lon"), "lon must be within [-180, 180]", code: "out_of_range") }
        let accuracy = try f.optionalNumber("accuracy_m") ?? 0
        guard accuracy >= 0, accuracy <= 100_000 else {
            throw DBeaconError.invalid(f.path("accuracy_m"), "accuracy_m must be within [0, 100000]", code: "out_of_range")
        }
        let timestamp = try f.optionalTimestamp("timestamp") ?? now
        guard timestamp.seconds(since: now) <= config.maxFutureSkewSeconds else {
            throw DBeaconError.invalid(f.path("timestamp"), "timestamp is more than \(Int(config.maxFutureSkewSeconds)) s in the future",
                                       code: "future_timestamp")
        }
        return LocationFix(position: Position(lon: lon, lat: lat), accuracyM: accuracy, timestamp: timestamp)
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
