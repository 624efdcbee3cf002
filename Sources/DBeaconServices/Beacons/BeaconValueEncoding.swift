package import DBeaconCore

/// How changed values appear in `beacon.updated` / `meeting.updated` events: the wire form of
/// the beacon's members, which the API layer owns (`BeaconFeatureCodec`). The service decides
/// that an event is due and which fields changed.
package protocol BeaconValueEncoding: Sendable {
    /// `{field: value}` for each of `fields` (`name`, `perimeter`, `location`, …).
    func values(of beacon: Beacon, fields: [String]) -> JSONObject
}
