package import DBeaconCore
import DBeaconGeo
import DBeaconStore
import Foundation

/// A sighting of a physical beacon that stands for `beacon` (resolved and visible to the user).
package struct PresenceSighting: Sendable {
    package var beacon: Beacon
    /// When the device saw it.
    package var at: Timestamp
    /// Where the physical beacon is installed, if registered.
    package var installedAt: Position?
    package var distanceM: Double?
    package var registryEntry: RegistryID?

    package init(beacon: Beacon, at: Timestamp, installedAt: Position? = nil, distanceM: Double? = nil, registryEntry: RegistryID? = nil) {
        self.beacon = beacon
        self.at = at
        self.installedAt = installedAt
        self.distanceM = distanceM
        self.registryEntry = registryEntry
    }
}

/// An entry or exit the phone reported for a monitored region (`POST /v1/me/region-events`),
/// resolved to the beacon it stands for.
package struct RegionCrossing: Sendable {
    package var beacon: Beacon
    package var entered: Bool
    package var at: Timestamp
    /// The region as the phone named it when it was not the beacon id (a registry entry, `reg_…`).
    package var region: String?

    package init(beacon: Beacon, entered: Bool, at: Timestamp, region: String? = nil) {
        self.beacon = beacon
        self.entered = entered
        self.at = at
        self.region = region
    }
}
