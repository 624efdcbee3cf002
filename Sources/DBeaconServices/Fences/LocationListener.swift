package import DBeaconCore
import DBeaconStore

/// Told about a user's newest accepted fix once the fence update that recorded it is durable,
/// so a service can react to movement (group range alerts, tour progress). A listener writes
/// its own state change and the events it causes in one transaction of its own, and returns
/// the events addressed to the reporting user so the location answer can list them.
package protocol LocationListener: Sendable {
    /// `location` is the user's newest fix; `events` are the fence events the batch produced
    /// for that user (`beacon.entered`, …).
    func locationAccepted(_ location: UserLocation, events: [Event]) async -> [Event]
}
