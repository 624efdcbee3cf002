import DBeaconCore
import Synchronization

/// The functions told about committed changes: set once at start-up, read after each commit.
final class ChangeObserverBox: Sendable {
    private let observers = Mutex<(changes: (@Sendable (BeaconChange) -> Void)?, waker: (@Sendable () -> Void)?)>((nil, nil))

    /// Receives each committed beacon change.
    var observer: (@Sendable (BeaconChange) -> Void)? { observers.withLock { $0.changes } }

    func set(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        observers.withLock { $0.changes = observer }
    }

    /// Called after commits (wakes the webhook deliverer).
    var outboxWaker: (@Sendable () -> Void)? { observers.withLock { $0.waker } }

    func setOutboxWaker(_ waker: @escaping @Sendable () -> Void) {
        observers.withLock { $0.waker = waker }
    }
}
