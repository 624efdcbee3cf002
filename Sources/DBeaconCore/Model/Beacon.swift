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
///
/// A value type whose fields live in one shared, copy-on-write storage object: copying a beacon
/// (into an answer, out of the in-memory index) costs one reference count, not one per field.
package struct Beacon: Sendable, Hashable {
    /// The fields. Mutated only through `mutate`, which copies it first unless uniquely referenced.
    private final class Storage: @unchecked Sendable {
        var id: BeaconID
        var name: String
        var description: String?
        var owner: UserID
        var location: Position
        var perimeter: Perimeter
        var lifetime: Lifetime?
        var members: [UserID]?
        var tags: [String]
        var relationships: [Relationship]
        var content: [ContentRef]
        var tracksOwner: Bool
        var contentPolicy: ContentPolicy
        var service: String?
        var followersCount: Int
        var version: Int
        var createdAt: Timestamp
        var updatedAt: Timestamp

        init(id: BeaconID, name: String, description: String?, owner: UserID, location: Position, perimeter: Perimeter, lifetime: Lifetime?, members: [UserID]?, tags: [String], relationships: [Relationship], content: [ContentRef], tracksOwner: Bool, contentPolicy: ContentPolicy, service: String?, followersCount: Int, version: Int, createdAt: Timestamp, updatedAt: Timestamp) {
            self.contentPolicy = contentPolicy
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

        func copy() -> Storage {
            Storage(id: id, name: name, description: description, owner: owner, location: location, perimeter: perimeter, lifetime: lifetime, members: members, tags: tags, relationships: relationships, content: content, tracksOwner: tracksOwner, contentPolicy: contentPolicy, service: service, followersCount: followersCount, version: version, createdAt: createdAt, updatedAt: updatedAt)
        }
    }

    private var storage: Storage

    @inline(__always)
    private mutating func mutate(_ body: (Storage) -> Void) {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        body(storage)
    }

    package var id: BeaconID {
        get { storage.id }
        set { mutate { $0.id = newValue } }
    }
    package var name: String {
        get { storage.name }
        set { mutate { $0.name = newValue } }
    }
    package var description: String? {
        get { storage.description }
        set { mutate { $0.description = newValue } }
    }
    package var owner: UserID {
        get { storage.owner }
        set { mutate { $0.owner = newValue } }
    }
    package var location: Position {
        get { storage.location }
        set { mutate { $0.location = newValue } }
    }
    package var perimeter: Perimeter {
        get { storage.perimeter }
        set { mutate { $0.perimeter = newValue } }
    }
    package var lifetime: Lifetime? {
        get { storage.lifetime }
        set { mutate { $0.lifetime = newValue } }
    }
    /// Members who may see a private beacon; nil means public.
    package var members: [UserID]? {
        get { storage.members }
        set { mutate { $0.members = newValue } }
    }
    package var tags: [String] {
        get { storage.tags }
        set { mutate { $0.tags = newValue } }
    }
    package var relationships: [Relationship] {
        get { storage.relationships }
        set { mutate { $0.relationships = newValue } }
    }
    package var content: [ContentRef] {
        get { storage.content }
        set { mutate { $0.content = newValue } }
    }
    /// When true, `location` follows the owner's live location fixes.
    package var tracksOwner: Bool {
        get { storage.tracksOwner }
        set { mutate { $0.tracksOwner = newValue } }
    }
    /// Who besides the owner may add content (`POST /v1/beacons/{id}/content`).
    package var contentPolicy: ContentPolicy {
        get { storage.contentPolicy }
        set { mutate { $0.contentPolicy = newValue } }
    }
    /// The service that manages this beacon (`meeting`, `group`, `tour`, `place`, `promotion`), if any.
    package var service: String? {
        get { storage.service }
        set { mutate { $0.service = newValue } }
    }
    package var followersCount: Int {
        get { storage.followersCount }
        set { mutate { $0.followersCount = newValue } }
    }
    package var version: Int {
        get { storage.version }
        set { mutate { $0.version = newValue } }
    }
    package var createdAt: Timestamp {
        get { storage.createdAt }
        set { mutate { $0.createdAt = newValue } }
    }
    package var updatedAt: Timestamp {
        get { storage.updatedAt }
        set { mutate { $0.updatedAt = newValue } }
    }

    package init(
        id: BeaconID, name: String, description: String? = nil, owner: UserID, location: Position,
        perimeter: Perimeter, lifetime: Lifetime? = nil, members: [UserID]? = nil, tags: [String] = [],
        relationships: [Relationship] = [], content: [ContentRef] = [], tracksOwner: Bool = false,
        contentPolicy: ContentPolicy = .owner,
        service: String? = nil, followersCount: Int = 0, version: Int = 1, createdAt: Timestamp, updatedAt: Timestamp
    ) {
        storage = Storage(id: id, name: name, description: description, owner: owner, location: location, perimeter: perimeter, lifetime: lifetime, members: members, tags: tags, relationships: relationships, content: content, tracksOwner: tracksOwner, contentPolicy: contentPolicy, service: service, followersCount: followersCount, version: version, createdAt: createdAt, updatedAt: updatedAt)
    }

    package static func == (a: Beacon, b: Beacon) -> Bool {
        if a.storage === b.storage { return true }
        let x = a.storage, y = b.storage
        return x.id == y.id && x.name == y.name && x.description == y.description && x.owner == y.owner && x.location == y.location && x.perimeter == y.perimeter && x.lifetime == y.lifetime && x.members == y.members && x.tags == y.tags && x.relationships == y.relationships && x.content == y.content && x.tracksOwner == y.tracksOwner && x.contentPolicy == y.contentPolicy && x.service == y.service && x.followersCount == y.followersCount && x.version == y.version && x.createdAt == y.createdAt && x.updatedAt == y.updatedAt
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(storage.id)
        hasher.combine(storage.version)
        hasher.combine(storage.updatedAt)
    }

    package var isPrivate: Bool { members != nil }

    /// True when the beacon is alive at `t` (no lifetime means always).
    package func isAlive(at t: Timestamp) -> Bool { lifetime?.contains(t) ?? true }
}

/// Who besides the owner may add content to a beacon; the owner may always add, and delete
/// (moderate) any item.
package enum ContentPolicy: String, Sendable, Hashable, CaseIterable {
    case owner
    /// Its followers (who may see it).
    case followers
    /// Anyone who may see it.
    case anyone
}
