/// Filters for listing registry entries (`GET /v1/registry`).
package struct RegistryListQuery: Sendable, Hashable {
    package var beacon: BeaconID?
    /// Only entries of any of these digital beacons (one query for many).
    package var beacons: [BeaconID]?
    package var kind: PhysicalBeaconKind?
    /// The UUID / namespace / id1 (normalised lowercase hex).
    package var id1: String?
    package var status: RegistryEntry.Status?
    /// Only entries of this user's digital beacons.
    package var owner: UserID?
    package var limit: Int = 50
    package var after: Int64?

    package init(beacon: BeaconID? = nil, kind: PhysicalBeaconKind? = nil, id1: String? = nil, status: RegistryEntry.Status? = nil,
                 owner: UserID? = nil, limit: Int = 50, after: Int64? = nil) {
        self.beacon = beacon
        self.kind = kind
        self.id1 = id1
        self.status = status
        self.owner = owner
        self.limit = limit
        self.after = after
    }
}
