package import DBeaconCore
import DBeaconStore
package import Logging
import ServiceLifecycle

/// Feeds committed beacon changes to the fence engine, in commit order, so a beacon that
/// appears, moves, grows or changes visibility around a standing user enters or exits them.
package struct BeaconChangeRelay: Service {
    package let changes: AsyncStream<BeaconChange>
    package let fences: FenceEngine
    package let logger: Logger

    package init(changes: AsyncStream<BeaconChange>, fences: FenceEngine, logger: Logger) {
        self.changes = changes
        self.fences = fences
        self.logger = logger
    }

    package func run() async throws {
        for await change in changes.cancelOnGracefulShutdown() {
            do {
                switch change {
                case .upsert(let beacon): try await fences.beaconChanged(beacon, reason: "updated")
                case .delete(let id): await fences.beaconDeleted(id)
                case .move: break  // moves come from the fence engine itself
                }
            } catch {
                logger.error("fence re-evaluation failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
