package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import Foundation

/// Tunables of the fence state machine.
package struct FenceConfig: Sendable {
    /// Inside this long → `beacon.dwelled`.
    package var dwellSeconds = 300.0
    /// A user leaves only when farther outside than max(this, the fix's accuracy).
    package var exitCushionM = 25.0
    /// Locations older than this do not enter users into moving or changed beacons.
    package var presenceTTLSeconds = 900.0
    /// Fixes stamped further in the future than this are refused.
    package var maxFutureSkewSeconds = 300.0
    /// Largest batch of fixes in one request.
    package var maxFixesPerRequest = 1000
    /// A user inside a beacon by sighting its physical beacon exits after this long without
    /// a sighting (iOS reports beacon region exits after about 30 s).
    package var sightingExitSeconds = 30.0

    package init() {}
}

/// One location fix from a device.
package struct LocationFix: Sendable {
    package var position: Position
    package var accuracyM: Double
    package var timestamp: Timestamp

    package init(position: Position, accuracyM: Double, timestamp: Timestamp) {
        self.position = position
        self.accuracyM = accuracyM
        self.timestamp = timestamp
    }
}

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

/// What a batch of fixes did.
package struct FixReport: Sendable {
    /// Beacons the user is inside after the batch.
    package var inside: [BeaconID]
    /// Events addressed to the user that the batch produced.
    package var events: [Event]
    package var accepted: Int
    /// Fixes not newer than the newest already seen: they change nothing.
    package var ignored: Int
}
