package import DBeaconCore
import Synchronization

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
