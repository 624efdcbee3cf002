/// `[start, end)`: the beacon exists for everyone but its owner only inside this window.
/// Either bound may be open.
package struct Lifetime: Sendable, Hashable {
    package var start: Timestamp?
    package var end: Timestamp?

    package init(start: Timestamp?, end: Timestamp?) {
        self.start = start
        self.end = end
    }

    /// True when `t` is in `[start, end)`.
    package func contains(_ t: Timestamp) -> Bool {
        if let start, t < start { return false }
        if let end, t >= end { return false }
        return true
    }
}

/// A typed, directed link to another beacon (`tour` with `order`, `related`, or custom).
package struct Relationship: Sendable, Hashable {
    package var type: String
    package var target: BeaconID
    package var order: Int?

    package init(type: String, target: BeaconID, order: Int? = nil) {
        self.type = type
        self.target = target
        self.order = order
    }
}

/// A reference to media about the beacon (image, video, audio, web page, text).
package struct ContentRef: Sendable, Hashable {
    package var kind: String
    package var url: String
    package var title: String?
    /// Who added it, when someone other than the owner shared it (tours).
    package var addedBy: UserID?
    package var createdAt: Timestamp?

    package init(kind: String, url: String, title: String? = nil, addedBy: UserID? = nil, createdAt: Timestamp? = nil) {
        self.kind = kind
        self.url = url
        self.title = title
        self.addedBy = addedBy
        self.createdAt = createdAt
    }
}

/// A digital beacon: an entity with a location, a perimeter where it can be found, an optional
/// lifetime and visibility group, and context (tags, relationships, content, followers).
package struct Beacon: Sendable, Hashable {
    package var id: BeaconID
    package var name: String
    package var description: String?
    package var owner: UserID
    package var location: Position
    package var perimeter: Perimeter
    package var lifetime: Lifetime?
    /// Members who may see a private beacon; nil means public.
    package var members: [UserID]?
    package var tags: [String]
    package var relationships: [Relationship]
    package var content: [ContentRef]
    /// When true, `location` follows the owner's live location fixes.
    package var tracksOwner: Bool
    /// The service that manages this beacon (`meeting`, `group`, `tour`, `place`, `promotion`), if any.
    package var service: String?
    package var followersCount: Int
    package var version: Int
    package var createdAt: Timestamp
    package var updatedAt: Timestamp

    package init(
        id: BeaconID, name: String, description: String? = nil, owner: UserID, location: Position,
        perimeter: Perimeter, lifetime: Lifetime? = nil, members: [UserID]? = nil, tags: [String] = [],
        relationships: [Relationship] = [], content: [ContentRef] = [], tracksOwner: Bool = false,
        service: String? = nil, followersCount: Int = 0, version: Int = 1, createdAt: Timestamp, updatedAt: Timestamp
    ) {
        self.id = id
        self.name = name
        self.description = description
        self.owner = owner
        self.location = location
        self.perimeter = perimeter
        self.lifetime = lifetime
        self.members = members
        self.tags = tags
        self.relationships = relationships
        self.content = content
        self.tracksOwner = tracksOwner
        self.service = service
        self.followersCount = followersCount
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    package var isPrivate: Bool { members != nil }

    /// True when the beacon is alive at `t` (no lifetime means always).
    package func isAlive(at t: Timestamp) -> Bool { lifetime?.contains(t) ?? true }
}
