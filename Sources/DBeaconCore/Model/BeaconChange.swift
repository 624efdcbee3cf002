/// A committed change to a beacon, reported in commit order so in-memory indexes stay exact.
package enum BeaconChange: Sendable {
    case upsert(Beacon)
    case delete(BeaconID)
    /// A moving beacon's new location (no new version).
    case move(BeaconID, Position)
}
