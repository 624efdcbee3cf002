import DBeaconCore
import Synchronization

/// The functions told about committed changes: set once at start-up, read after each commit.
///
/// The functions are kept in an immutable class instance, never as the value of the `Mutex`
/// itself: a function stored directly in a `Mutex`'s value (alone, optional, or in a tuple) is
/// re-abstracted on each `withLock` and written back wrapped in two more thunks, so every read
/// made the function one layer deeper. Every commit read them, and each call then walked the
/// whole chain: a server slowed down (and grew) with every write it had taken
/// (`ChangeObserverBoxTests`).
final class ChangeObserverBox: Sendable {
    private final class Functions: Sendable {
        let changes: (@Sendable (BeaconChange) -> Void)?
        let waker: (@Sendable () -> Void)?
        init(changes: (@Sendable (BeaconChange) -> Void)?, waker: (@Sendable () -> Void)?) {
            self.changes = changes
            self.waker = waker
        }
    }

    private let functions = Mutex(Functions(changes: nil, waker: nil))

    /// Receives each committed beacon change.
    var observer: (@Sendable (BeaconChange) -> Void)? { functions.withLock { $0 }.changes }

    func set(_ observer: @escaping @Sendable (BeaconChange) -> Void) {
        functions.withLock { $0 = Functions(changes: observer, waker: $0.waker) }
    }

    /// Called after commits (wakes the webhook deliverer).
    var outboxWaker: (@Sendable () -> Void)? { functions.withLock { $0 }.waker }

    func setOutboxWaker(_ waker: @escaping @Sendable () -> Void) {
        functions.withLock { $0 = Functions(changes: $0.changes, waker: waker) }
    }
}

/// One function in a `Mutex` without the re-abstraction that wraps it on every access (see
/// `ChangeObserverBox`): set and read whole.
package final class LockedFunction<Function: Sendable>: Sendable {
    private final class Holder: Sendable {
        let function: Function?
        init(_ function: Function?) { self.function = function }
    }

    private let holder = Mutex(Holder(nil))

    package init() {}

    package var value: Function? {
        get { holder.withLock { $0 }.function }
        set { let h = Holder(newValue); holder.withLock { $0 = h } }
    }
}
