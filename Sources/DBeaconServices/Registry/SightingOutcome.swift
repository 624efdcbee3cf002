package import DBeaconCore
package import DBeaconGeo

/// What a sighting batch did: one result per item, the indoor position if one was estimated,
/// and the fence events it caused.
package struct SightingOutcome: Sendable {
    package var results: [SightingResult]
    package var position: PositionReport?
    package var events: [Event]
}

/// One item of a batch. An item that could not be decoded has only `error`.
package struct SightingResult: Sendable {
    package var index: Int
    package var identity: PhysicalBeaconIdentity?
    /// The registry entry and digital beacon it resolved to (as the caller may see it).
    package var resolution: Resolution?
    package var distanceM: Double?
    package var proximity: Proximity?
    /// Why the item was not decoded, or `unknown_beacon`.
    package var error: BeaconFrameError?
}

/// An indoor position estimated from the ranged entries of a batch.
package struct PositionReport: Sendable {
    package var estimate: PositionEstimate
    /// The newest sighting it rests on.
    package var at: Timestamp
    /// Why it was not applied: a move faster than the configured speed since the last fix.
    package var implausibleReason: String?
    /// Whether the fence engine took it as a new fix.
    package var applied: Bool
}
