/// Filters for listing beacons (`GET /v1/beacons`).
package struct BeaconListQuery: Sendable, Hashable {
    /// Any of these tags (empty: no tag filter).
    package var tags: [String] = []
    /// Only beacons owned by this user (`owner=me`).
    package var owner: UserID?
    /// Only beacons whose location lies in this box; `west > east` crosses the antimeridian.
    package var bbox: BoundingBox?
    /// Only beacons whose perimeter's box meets one of these boxes (the spatial index over
    /// perimeters: every beacon whose perimeter could reach into them, wherever it is located).
    package var perimeterMeets: [BoundingBox] = []
    /// Only beacons managed by this service (`meeting`, `tour`, …); nil: any.
    package var service: String?
    package var limit: Int = 50
    /// Return beacons after this position (from a previous page's cursor).
    package var after: Int64?

    package init(tags: [String] = [], owner: UserID? = nil, bbox: BoundingBox? = nil, service: String? = nil,
                 limit: Int = 50, after: Int64? = nil) {
        self.tags = tags
        self.owner = owner
        self.bbox = bbox
        self.service = service
        self.limit = limit
        self.after = after
    }
}
