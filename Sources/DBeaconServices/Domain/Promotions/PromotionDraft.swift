package import DBeaconCore

/// A new promotion, as read from a request (`POST /v1/promotions`).
package struct PromotionDraft: Sendable {
    package var name: String
    package var description: String?
    /// The business.
    package var location: Position
    /// The promotion region.
    package var perimeter: Perimeter
    /// Category first, then the other tags (normalized; `promotion` is added by the service).
    package var categories: [String]
    package var lifetime: Lifetime?
    /// Promotions this one suggests (`related` relationships).
    package var related: [BeaconID]
    package var content: [ContentRef]

    package init(name: String, description: String?, location: Position, perimeter: Perimeter, categories: [String],
                 lifetime: Lifetime?, related: [BeaconID], content: [ContentRef]) {
        self.name = name
        self.description = description
        self.location = location
        self.perimeter = perimeter
        self.categories = categories
        self.lifetime = lifetime
        self.related = related
        self.content = content
    }
}
