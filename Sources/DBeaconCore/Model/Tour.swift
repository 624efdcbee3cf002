/// A stop of a tour that a follower reached (from a `beacon.entered` event).
package struct TourVisit: Sendable, Hashable {
    package var tour: BeaconID
    package var user: UserID
    package var place: BeaconID
    package var visitedAt: Timestamp

    package init(tour: BeaconID, user: UserID, place: BeaconID, visitedAt: Timestamp) {
        self.tour = tour
        self.user = user
        self.place = place
        self.visitedAt = visitedAt
    }
}

/// A media reference a visitor shared at a place.
package struct PlaceMedia: Sendable, Hashable {
    package var id: MediaID
    package var place: BeaconID
    package var user: UserID
    package var content: ContentRef
    package var createdAt: Timestamp

    package init(id: MediaID, place: BeaconID, user: UserID, content: ContentRef, createdAt: Timestamp) {
        self.id = id
        self.place = place
        self.user = user
        self.content = content
        self.createdAt = createdAt
    }
}
