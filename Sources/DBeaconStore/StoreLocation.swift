package import Logging

/// A store the server can run on: everything the services need, and its change feed.
package typealias AppStore = ServiceBackingStore & RegistryStore & BeaconChangeFeed

/// Opens the store a `--db` value names: a `postgres://…` URL selects PostGIS, anything
/// else is the path of a SpatiaLite file.
package enum StoreLocation {
    package static func isPostgres(_ location: String) -> Bool { PostgresStore.isURL(location) }

    package static func open(_ location: String, synchronousFull: Bool = true, listen: Bool = true,
                             deadline: DatabaseDeadline = .default, logger: Logger) async throws -> any AppStore {
        if isPostgres(location) {
            return try await PostgresStore.connect(url: location, listen: listen, logger: logger, deadline: deadline)
        }
        return try SpatiaLiteStore(path: location, synchronousFull: synchronousFull)
    }
}
