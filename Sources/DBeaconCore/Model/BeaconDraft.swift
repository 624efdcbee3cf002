/// What a client may set on a beacon; everything else is owned by the server.
package struct BeaconDraft: Sendable, Hashable {
    package var id: BeaconID?
    package var name: String
    package var description: String?
    package var location: Position
    package var perimeter: Perimeter
    package var lifetime: Lifetime?
    package var members: [UserID]?
    package var tags: [String]
    package var relationships: [Relationship]
    package var content: [ContentRef]
    package var tracksOwner: Bool
    package var contentPolicy: ContentPolicy
    /// `properties.owner` as sent, if any: it may only repeat the true owner.
    package var claimedOwner: String?
    /// `properties.service` as sent, if any: set only by the services, so a client may only
    /// repeat the stored value (in a merge patch) and never choose one.
    package var claimedService: String?

    package init(
        id: BeaconID? = nil, name: String, description: String? = nil, location: Position, perimeter: Perimeter,
        lifetime: Lifetime? = nil, members: [UserID]? = nil, tags: [String] = [], relationships: [Relationship] = [],
        content: [ContentRef] = [], tracksOwner: Bool = false, contentPolicy: ContentPolicy = .owner, claimedOwner: String? = nil,
        claimedService: String? = nil
    ) {
        self.contentPolicy = contentPolicy
        self.id = id
        self.name = name
        self.description = description
        self.location = location
        self.perimeter = perimeter
        self.lifetime = lifetime
        self.members = members
        self.tags = tags
        self.relationships = relationships
        self.content = content
        self.tracksOwner = tracksOwner
        self.claimedOwner = claimedOwner
        self.claimedService = claimedService
    }
}

/// Limits on the non-geometric parts of a beacon.
package enum BeaconLimits {
    package static let maxNameLength = 200
    package static let maxDescriptionLength = 10_000
    package static let maxTags = 32
    package static let maxTagLength = 40
    package static let maxRelationships = 200
    package static let maxContent = 100
    package static let maxMembers = 1_000
    package static let maxURLLength = 2_048
    /// Circle radius used when a point beacon is created without a perimeter.
    package static let defaultRadiusM = 50.0
}

extension BeaconDraft {
    /// The draft a stored beacon is: editing it and handing it back changes only what was edited.
    package init(_ beacon: Beacon) {
        self.init(id: beacon.id, name: beacon.name, description: beacon.description, location: beacon.location,
                  perimeter: beacon.perimeter, lifetime: beacon.lifetime, members: beacon.members, tags: beacon.tags,
                  relationships: beacon.relationships, content: beacon.content, tracksOwner: beacon.tracksOwner,
                  contentPolicy: beacon.contentPolicy, claimedOwner: beacon.owner.rawValue, claimedService: beacon.service)
    }
}
