package import DBeaconCore
import Synchronization

/// Where services get the current time; tests substitute a `ManualClock`.
package protocol WallClock: Sendable {
    func now() -> Timestamp
}

/// The system's real-time clock.
package struct SystemClock: WallClock {
    package init() {}
    package func now() -> Timestamp { Timestamp.now() }
}

