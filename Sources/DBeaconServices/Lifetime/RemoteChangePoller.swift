package import DBeaconStore
package import Logging
import ServiceLifecycle

/// Polls the store for changes committed by other processes (SpatiaLite: the CLI writing to
/// the served file), as a background service; the store reports what it finds to its remote
/// observers. Does nothing on stores that push remote changes (PostGIS).
package struct RemoteChangePoller: Service {
    package let store: any BeaconChangeFeed
    package let logger: Logger

    package init(store: any BeaconChangeFeed, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    package func run() async throws {
        // A service that returns stops the whole group: without polling, wait for shutdown.
        guard let interval = store.remoteChangePollInterval else { return try await gracefulShutdown() }
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await store.pollRemoteChanges()
                } catch is CancellationError {
                    break
                } catch {
                    logger.error("polling for other processes' changes failed", metadata: ["error": "\(error)"])
                }
                // Cancelled at shutdown: the loop ends, the service returns normally (exit status 0).
                try? await Task.sleep(for: interval)
            }
        }
    }
}
