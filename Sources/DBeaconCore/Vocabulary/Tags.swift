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
