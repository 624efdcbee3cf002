import DBeaconCore
import DBeaconGeo
import DBeaconStore
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
    /// Fixes, sightings and region crossings stamped further in the past than this are refused
    /// (`stale_timestamp`): what happened is judged against visibility now, and an old claim
    /// must not reach into a lifetime that has ended.
    package var maxFixAgeSeconds = 600.0
    /// Largest batch of fixes in one request.
    package var maxFixesPerRequest = 1000
    /// A user inside a beacon by sighting its physical beacon exits after this long without
    /// a sighting (iOS reports beacon region exits after about 30 s).
    package var sightingExitSeconds = 30.0

    package init() {}
}
