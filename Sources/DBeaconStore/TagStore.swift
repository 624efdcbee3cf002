package import DBeaconCore

/// A follower of some categories with the last location the store knows for them.
package struct TagFollower: Sendable {
    package var user: UserID
    package var location: Position
    /// The followed tags among those asked for, each with its radius.
    package var follows: [(tag: String, radiusM: Double)]
}

/// Categories: counts of tags in use and the categories users follow.
package protocol TagStore: Sendable {
    /// Tags of the beacons `viewer` may see at `now` (in `bbox` when given), most used first,
    /// then by name; at most `limit`.
    func tagCounts(viewer: Principal, now: Timestamp, bbox: BoundingBox?, limit: Int) async throws -> [TagCount]
    /// Follows (or changes the radius of) a category: the stored follow (its first
    /// `createdAt` is kept), and whether it was not followed before.
    func followTag(_ follow: TagFollow) async throws -> (follow: TagFollow, created: Bool)
    /// Stops following a category; false when it was not followed.
    func unfollowTag(user: UserID, tag: String) async throws -> Bool
    /// The categories a user follows, by tag.
    func tagFollows(of user: UserID) async throws -> [TagFollow]
    /// Followers of any of `tags` whose last location lies in `box` (the caller checks the
    /// exact distance against each follower's radius).
    func tagFollowers(tags: [String], in box: BoundingBox) async throws -> [TagFollower]
}
