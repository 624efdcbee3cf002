package import DBeaconCore
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

    /// Largest accuracy radius a fix may claim, in metres.
    package static let maxAccuracyM = 100_000.0

    // MARK: The rules every way in applies

    /// Why a claimed time is refused: `future_timestamp` or `stale_timestamp`, with a message
    /// naming `field`; nil when it lies in the accepted window (no further in the future than
    /// `maxFutureSkewSeconds`, no older than `maxFixAgeSeconds`). Fixes, sightings, region
    /// crossings, OwnTracks and OsmAnd reports all judge their times here.
    package func timeProblem(_ at: Timestamp, now: Timestamp, field: String = "timestamp") -> (code: String, message: String)? {
        if at.seconds(since: now) > maxFutureSkewSeconds {
            return ("future_timestamp", "\(field) is more than \(Int(maxFutureSkewSeconds)) s in the future")
        }
        if now.seconds(since: at) > maxFixAgeSeconds {
            return ("stale_timestamp", "\(field) is more than \(Int(maxFixAgeSeconds)) s in the past")
        }
        return nil
    }

    /// Whether `at` lies in the accepted window (`timeProblem` is nil).
    package func accepts(time at: Timestamp, now: Timestamp) -> Bool {
        timeProblem(at, now: now) == nil
    }

    /// `timeProblem` as a 422 naming `path`.
    package func requireAccepted(time at: Timestamp, now: Timestamp, field: String, path: String) throws(DBeaconError) {
        if let problem = timeProblem(at, now: now, field: field) {
            throw DBeaconError.invalid(path, problem.message, code: problem.code)
        }
    }

    /// A fix's accuracy in metres from what a client sent: absent is 0; above
    /// `maxAccuracyM` (or not finite) is a 422 naming `path`; negative is 422 when `strict`
    /// (our own API) and 0 otherwise (the phone protocols use it for "unknown").
    package static func accuracy(_ raw: Double?, path: String, strict: Bool) throws(DBeaconError) -> Double {
        guard let raw else { return 0 }
        guard raw.isFinite, raw <= maxAccuracyM, !(strict && raw < 0) else {
            throw DBeaconError.invalid(path, "\(path) is metres, within [0, \(Int(maxAccuracyM))]", code: "out_of_range")
        }
        return max(0, raw)
    }
}
