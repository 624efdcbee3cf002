import Dispatch

/// Runs long synchronous work (a snapshot's file writes, a batch of polygons prepared on every
/// core) on a Dispatch thread and awaits it. `dbeacon serve` runs Swift tasks on NIO's event
/// loops, which also serve the connections: work like this on a task's own thread would hold
/// up every connection of that loop until it ends.
package func offEventLoops<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}

/// `offEventLoops` for work that does not throw.
package func offEventLoops<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}
