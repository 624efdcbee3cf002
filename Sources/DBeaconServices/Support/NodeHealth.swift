package import DBeaconStore

/// What the operations endpoints (`/readyz`, `/metrics`) read of this node: whether the
/// database answers, the state of the change feed from other nodes, how many beacons there are
/// and how many large polygons the index still prepares. The store stays behind it.
package struct NodeHealth: Sendable {
    /// The change feed's state (PostgreSQL's LISTEN connection), as `/readyz` and `/metrics` say it.
    package struct Feed: Sendable {
        package var isCurrent: Bool
        package var isConnected: Bool
        package var isCatchingUp: Bool
        package var lagSeconds: Double
        package var reconnections: Int
    }

    private let store: any BeaconStore & BeaconChangeFeed
    private let pending: @Sendable () -> Int

    package init(store: any BeaconStore & BeaconChangeFeed, pendingPolygons: @escaping @Sendable () -> Int) {
        self.store = store
        self.pending = pendingPolygons
    }

    /// Whether the database answers a trivial query within `seconds`.
    package func databaseAnswers(within seconds: Double) async -> Bool {
        await store.ping(within: DatabaseDeadline(seconds: seconds))
    }

    /// The change feed's state; nil where there is none to lose (SpatiaLite).
    package var feed: Feed? {
        store.changeFeedHealth.map {
            Feed(isCurrent: $0.isCurrent, isConnected: $0.isConnected, isCatchingUp: $0.isCatchingUp, lagSeconds: $0.lagSeconds,
                 reconnections: $0.reconnections)
        }
    }

    package func beaconCount() async throws -> Int { try await store.beaconCount() }

    package var pendingPolygons: Int { pending() }
}
