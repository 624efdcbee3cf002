package import DBeaconCore

/// How many beacons carry a tag (the category view).
package struct TagCount: Sendable, Hashable {
    package var tag: String
    package var count: Int

    package init(tag: String, count: Int) {
        self.tag = tag
        self.count = count
    }
}

/// A category a user follows: new beacons with `tag` within `radiusM` of their last location.
package struct TagFollow: Sendable, Hashable {
    package var user: UserID
    package var tag: String
    package var radiusM: Double
    package var createdAt: Timestamp

    package init(user: UserID, tag: String, radiusM: Double, createdAt: Timestamp) {
        self.user = user
        self.tag = tag
        self.radiusM = radiusM
        self.createdAt = createdAt
    }
}

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
