/// "Which beacons cover this point": the question nearby, fences, tours and promotions ask.
package struct CoverQuery: Sendable, Hashable {
    package var point: Position
    /// Any of these tags (empty: no tag filter).
    package var tags: [String]
    /// Only beacons alive at this instant.
    package var at: Timestamp
    /// Only beacons this principal may see.
    package var viewer: Principal
    /// Only beacons of this service, if set.
    package var service: String?
    /// The real time, when `at` may differ from it (nearby's `at=`): a beacon the viewer does
    /// not own must then be alive now as well, so `at` only narrows what they see. Nil: `at`.
    package var now: Timestamp?
    /// Whether the answer's beacons need their perimeters: false when only their other fields
    /// are used (nearby with `perimeter=none`), so an engine may return polygon perimeters empty.
    package var perimeters = true

    package init(point: Position, tags: [String] = [], at: Timestamp, viewer: Principal, service: String? = nil,
                 now: Timestamp? = nil) {
        self.point = point
        self.tags = tags
        self.at = at
        self.viewer = viewer
        self.service = service
        self.now = now
    }

    /// The instant at which a non-owner's view is checked besides `at`.
    package var visibleNow: Timestamp { now ?? at }
}
