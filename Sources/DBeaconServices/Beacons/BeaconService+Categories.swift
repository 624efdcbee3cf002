package import DBeaconCore
import DBeaconGeo
import DBeaconStore

/// Categories (tags), as the original app's category view: the tags in use with their counts,
/// and following a category to hear of new beacons with that tag near one's last location.
extension BeaconService {
    /// The largest radius a category follow may ask for.
    package static let maxTagFollowRadiusM = 50_000.0
    /// The radius of a category follow that does not name one.
    package static let defaultTagFollowRadiusM = 2_000.0
    package static let maxTagCountLimit = 1_000

    /// Tags of the beacons the caller may see now (in `bbox` when given), most used first.
    package func tagCounts(bbox: BoundingBox?, limit: Int, by principal: Principal) async throws -> [TagCount] {
        try await store.tagCounts(viewer: principal, now: clock.now(), bbox: bbox, limit: min(max(limit, 1), Self.maxTagCountLimit))
    }

    /// Follows a category (or changes its radius); `created` is false when it was followed already.
    package func followTag(_ tag: String, radiusM: Double?, by principal: Principal) async throws -> (follow: TagFollow, created: Bool) {
        guard let user = principal.userID else { throw DBeaconError.forbidden("only users follow categories") }
        let radius = radiusM ?? Self.defaultTagFollowRadiusM
        guard radius.isFinite, radius > 0, radius <= Self.maxTagFollowRadiusM else {
            throw DBeaconError.invalid("radius_m", "radius_m must be more than 0 and at most \(Int(Self.maxTagFollowRadiusM)) m",
                                       code: "out_of_range")
        }
        return try await store.followTag(TagFollow(user: user, tag: tag, radiusM: radius, createdAt: clock.now()))
    }

    /// Stops following a category (404 when it was not followed).
    package func unfollowTag(_ tag: String, by principal: Principal) async throws {
        guard let user = principal.userID else { throw DBeaconError.forbidden("only users follow categories") }
        guard try await store.unfollowTag(user: user, tag: tag) else { throw DBeaconError.notFound("category \(tag) (not followed)") }
    }

    /// The categories the caller follows.
    package func tagFollows(by principal: Principal) async throws -> [TagFollow] {
        guard let user = principal.userID else { throw DBeaconError.forbidden("only users follow categories") }
        return try await store.tagFollows(of: user)
    }

    /// `beacon.created` for each user following one of the new beacon's tags whose last known
    /// location lies within that follow's radius of the beacon, if they may see it now (not
    /// the owner; a private beacon only for its members; not before its lifetime starts).
    /// Written in the transaction that stores the beacon.
    func categoryEvents(for beacon: Beacon, at now: Timestamp) async throws -> [Event] {
        guard !beacon.tags.isEmpty, beacon.isAlive(at: now) else { return [] }
        var events: [Event] = []
        var seen = Set<UserID>()
        for box in Geodesy.boundingBoxes(center: beacon.location, radiusM: Self.maxTagFollowRadiusM) {
            for follower in try await store.tagFollowers(tags: beacon.tags, in: box) where seen.insert(follower.user).inserted {
                guard follower.user != beacon.owner, beacon.allows(.see, to: .user(follower.user), at: now) else { continue }
                let distance = Geodesy.distance(follower.location, beacon.location)
                let matched = follower.follows.filter { distance <= $0.radiusM }.map(\.tag)
                guard !matched.isEmpty else { continue }
                events.append(Event(type: .created, createdAt: now, recipient: follower.user, beacon: beacon.id, data: JSONObject([
                    ("beacon", .string(beacon.id.rawValue)), ("name", .string(beacon.name)),
                    ("tags", .array(matched.map(JSONValue.string))),
                    ("location", .object(["lat": .number(beacon.location.lat), "lon": .number(beacon.location.lon)])),
                    ("distance_m", .number((distance * 10).rounded() / 10)),
                ])))
            }
        }
        return events
    }
}
