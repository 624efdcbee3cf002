package import DBeaconCore

/// A stop of a new tour: an existing beacon the caller can see, or a new place.
package enum TourStopDraft: Sendable {
    /// `path`: where its `beacon` stands in the request, for errors.
    case existing(BeaconID, order: Int, path: String)
    case place(TourPlaceDraft)
}

/// A new place of a tour.
package struct TourPlaceDraft: Sendable {
    package var order: Int
    package var name: String
    package var description: String?
    package var location: Position
    /// Nil: a circle of the default radius.
    package var perimeter: Perimeter?
    package var tags: [String]
    package var content: [ContentRef]
    /// Where its `name` stands in the request, for errors.
    package var path: String

    package init(order: Int, name: String, description: String?, location: Position, perimeter: Perimeter?, tags: [String],
                 content: [ContentRef], path: String) {
        self.order = order
        self.name = name
        self.description = description
        self.location = location
        self.perimeter = perimeter
        self.tags = tags
        self.content = content
        self.path = path
    }
}
