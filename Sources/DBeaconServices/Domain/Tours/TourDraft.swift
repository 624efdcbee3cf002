package import DBeaconCore

/// A new tour, as read from a request (`POST /v1/tours`).
package struct TourDraft: Sendable {
    package var name: String
    package var description: String?
    /// Nil: a circle around the first stop reaching every stop.
    package var perimeter: Perimeter?
    package var lifetime: Lifetime?
    /// The visibility group of the tour and its new places (`visibility.members`); nil: public.
    package var members: [UserID]?
    /// Where `members` stands in the request, for errors about its users.
    package var membersPath: String
    package var tags: [String]
    package var content: [ContentRef]
    package var stops: [TourStopDraft]

    package init(name: String, description: String?, perimeter: Perimeter?, lifetime: Lifetime?, members: [UserID]?,
                 membersPath: String = "visibility.members", tags: [String], content: [ContentRef], stops: [TourStopDraft]) {
        self.name = name
        self.description = description
        self.perimeter = perimeter
        self.lifetime = lifetime
        self.members = members
        self.membersPath = membersPath
        self.tags = tags
        self.content = content
        self.stops = stops
    }
}
