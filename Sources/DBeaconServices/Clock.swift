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

/// A clock that moves only when told to (tests of dwell times, lifetimes, retries).
package final class ManualClock: WallClock {
    private let current: Mutex<Timestamp>

    package init(_ start: Timestamp) { current = Mutex(start) }

    package func now() -> Timestamp { current.withLock { $0 } }

    package func advance(seconds: Double) {
        current.withLock { $0 = $0.adding(seconds: seconds) }
    }

    package func set(_ t: Timestamp) {
        current.withLock { $0 = t }
    }
}
