/// Id of a tracked group (`grp_…`); the group's beacon has its own `bcn_…` id.
package struct GroupID: PrefixedID {
    package static let prefix = "grp_"
    package let rawValue: String
    package init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }
}

/// Id of a media item shared by a visitor at a tour place (`med_…`).
package struct MediaID: PrefixedID {
    package static let prefix = "med_"
    package let rawValue: String
    package init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }
}

/// The `properties.service` values of beacons managed by the four services.
package enum ServiceKind {
    package static let meeting = "meeting"
    package static let group = "group"
    package static let tour = "tour"
    package static let place = "place"
    package static let promotion = "promotion"
    /// The relationship type of a tour's stops (`{"type":"tour","target":…,"order":n}`).
    package static let tourRelationship = "tour"
}

/// Whether a group member is within the group's range of the guide (decided with hysteresis).
package enum RangeState: String, Sendable, Hashable {
    case inRange = "in"
    case outOfRange = "out"
}

/// A consumer's interaction with a promotion (the Noticon interaction log).
package enum InteractionType: String, Sendable, Hashable, CaseIterable {
    case shown
    case clicked
    case calendarAdd = "calendar_add"
    /// Saved for later (listed in `GET /v1/me/saved` until deleted there).
    case saved
    /// Rated 1–5, once per consumer and promotion.
    case rated
    /// Feedback text for the advertiser.
    case feedback
}
