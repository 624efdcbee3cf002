package import Logging

/// Where committed beacon changes are reported, so in-memory indexes stay exact.
package protocol BeaconChangeFeed: Sendable {
    /// Receives every beacon change committed by this process, in commit order.
    func observeChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void)
    /// Called after every commit of this process (wakes the webhook deliverer).
    func observeCommits(_ waker: @escaping @Sendable () -> Void)
    /// Receives beacon changes committed by other processes sharing the database (PostGIS;
    /// never called for the embedded SpatiaLite file, which one process owns).
    func observeRemoteChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void)
    /// Called when remote changes may have been missed (the listener reconnected): whoever
    /// mirrors the store must reload from it. Never called for SpatiaLite.
    func observeResyncNeeded(_ handler: @escaping @Sendable () -> Void)
}

/// A store the server can run on: everything the services need, and its change feed.
package typealias AppStore = ServiceBackingStore & RegistryStore & BeaconChangeFeed

extension SpatiaLiteStore: BeaconChangeFeed {
    package func observeRemoteChanges(_ observer: @escaping @Sendable (BeaconChange) -> Void) {}
    package func observeResyncNeeded(_ handler: @escaping @Sendable () -> Void) {}
}

extension PostgresStore: BeaconChangeFeed {}

/// Opens the store a `--db` value names: a `postgres://…` URL selects PostGIS, anything
/// else is the path of a SpatiaLite file.
package enum StoreLocation {
    package static func isPostgres(_ location: String) -> Bool { PostgresStore.isURL(location) }

    package static func open(_ location: String, synchronousFull: Bool = true, listen: Bool = true,
                             logger: Logger) async throws -> any AppStore {
        if isPostgres(location) {
            return try await PostgresStore.connect(url: location, listen: listen, logger: logger)
        }
        return try SpatiaLiteStore(path: location, synchronousFull: synchronousFull)
    }
}
