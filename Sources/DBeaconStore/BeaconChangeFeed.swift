package import DBeaconCore
import Logging

/// Where committed beacon changes are reported, so in-memory indexes stay exact. A store keeps
/// its observers, so an observer that needs the store (or what holds it) captures it weakly.
package protocol BeaconChangeFeed: AnyObject, Sendable {
    /// Receives every beacon change committed by this process, in commit order.
    func observeChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void)
    /// Called after every commit of this process (wakes the webhook deliverer).
    func observeCommits(_ waker: @escaping @Sendable () -> Void)
    /// Called after a commit that appended events to the log: this process's, and other
    /// processes' (PostGIS: through NOTIFY; SpatiaLite: any commit of another connection to
    /// the file, noticed by `pollRemoteChanges`, may have). Wakes the event streams' notifier.
    func observeEventCommits(_ waker: @escaping @Sendable () -> Void)
    /// Receives beacon changes committed by other processes sharing the database: other
    /// server nodes on PostGIS (LISTEN/NOTIFY), the CLI writing to the same SpatiaLite file
    /// (found by `pollRemoteChanges`).
    func observeRemoteChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void)
    /// Called when another process wrote fence states or user locations (SpatiaLite: the CLI's
    /// `location` or `sighting` with `--db`): a fence engine holding them in memory must reload.
    func observeRemoteFenceWrites(_ handler: @escaping @Sendable () -> Void)
    /// Called when remote changes may have been missed (the listener reconnected): whoever
    /// mirrors the store must reload from it. Never called for SpatiaLite.
    func observeResyncNeeded(_ handler: @escaping @Sendable () async throws -> Void)
    /// The state of the change feed from other processes (PostGIS's LISTEN connection); nil
    /// where there is none to lose (SpatiaLite polls its own file).
    var changeFeedHealth: ChangeFeedHealth? { get }
    /// Whether the database answers a trivial query within `deadline`.
    func ping(within deadline: DatabaseDeadline) async -> Bool
    /// How often `pollRemoteChanges` should run; nil when remote changes are pushed (PostGIS).
    var remoteChangePollInterval: Duration? { get }
    /// Looks for changes other processes committed and reports them to the observers.
    func pollRemoteChanges() async throws
    /// Whether remote beacon changes need this process's fence evaluation: true when the
    /// writer was a one-shot process (SpatiaLite's CLI) that does not keep users' fence state;
    /// false on PostGIS, where the writing node evaluates its users.
    var remoteChangesNeedFenceEvaluation: Bool { get }
    /// The store's identity and change counter now, for an index snapshot: the counter grows
    /// with every committed transaction that changed beacons (of any process; fence writes do
    /// not count), so a snapshot taken at one stamp is current while the stamp is unchanged. Nil when the store keeps none (PostGIS: several
    /// nodes write at once, and an index is always loaded from the database).
    func changeStamp() async throws -> ChangeStamp?
    /// Runs `body` with the stamp once every change counted in it has reached the observers
    /// (other processes' changes are polled first), while no change of this process can commit;
    /// nil (without running `body`) when the store keeps no stamp.
    func withSettledChanges<T: Sendable>(_ body: @Sendable (ChangeStamp) throws -> T) async throws -> T?
}

/// Where a store stands: its identity (a random id made once per database) and its change
/// counter.
package struct ChangeStamp: Sendable, Hashable {
    package var store: String
    package var counter: Int64

    package init(store: String, counter: Int64) {
        self.store = store
        self.counter = counter
    }
}
