import DBeaconCore
import DBeaconStore
import Foundation
import Synchronization
import Testing

/// The functions a store calls after each commit stay the functions they were registered as.
/// Kept directly in a `Mutex` they were re-abstracted and written back on every read, two
/// thunks deeper each time: after 400 writes a call walked 800 thunks, and a server slowed
/// down (and grew) with every write it had taken.
@Suite struct ChangeObserverTests {
    /// Stack depth inside the observer, measured at its first call and after many writes.
    final class Depths: Sendable {
        private let seen = Mutex<[Int]>([])
        func record() { let d = Thread.callStackSymbols.count; seen.withLock { $0.append(d) } }
        var all: [Int] { seen.withLock { $0 } }
    }

    @Test(arguments: Backend.all) func committedWritesCallTheObserversAsRegistered(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend, engine: .sql)
        let (owner, _) = try await h.user("owner")
        let wakes = Depths(), changes = Depths()
        h.store.observeCommits { wakes.record() }
        h.store.observeChanges { _ in changes.record() }
        let t = h.clock.now()
        for i in 0..<400 {
            try await h.store.insertBeacon(Beacon(id: .generate(), name: "b\(i)", owner: owner, location: Position(lon: 9.18, lat: 48.78),
                                                  perimeter: .circle(radiusM: 50), createdAt: t, updatedAt: t))
        }
        for (name, depths) in [("waker", wakes.all), ("change observer", changes.all)] {
            #expect(depths.count >= 400, "\(name) called \(depths.count) times")
            // The same call path each time: the depth may differ by a frame or two between
            // threads, never grow with the number of calls.
            #expect((depths.max() ?? 0) - (depths.first ?? 0) <= 4, "\(name): depth \(depths.first ?? 0) at first, \(depths.max() ?? 0) later")
            #expect((depths.max() ?? 0) < 120, "\(name): \(depths.max() ?? 0) frames")
        }
    }
}
