import DBeaconCore
import DBeaconStore
import Foundation
import Synchronization
import Testing

/// The functions a store calls after each commit stay the functions they were registered as.
/// Kept directly in a `Mutex` they were re-abstracted and written back on every read, two
/// thunks deeper each time: after 400 writes a call walked 800 thunks, and a server slowed
/// down (and grew) with every write it had taken.
@Suite(.bounded) struct ChangeObserverTests {
    /// Stack depth inside the observer in bytes (the calling thread's stack top less the stack
    /// pointer), measured at its first call and after many writes. No symbolication: it takes
    /// no loader lock and costs nothing, so it cannot stall the commit it is called from.
    final class Depths: Sendable {
        private let seen = Mutex<[Int]>([])
        func record() { let d = Self.stackDepth(); seen.withLock { $0.append(d) } }
        var all: [Int] { seen.withLock { $0 } }

        @inline(never) static func stackDepth() -> Int {
            // glibc's `pthread_getattr_np` (Swift's Glibc module does not declare it).
            typealias GetAttr = @convention(c) (pthread_t, UnsafeMutablePointer<pthread_attr_t>) -> Int32
            guard let symbol = dlsym(nil, "pthread_getattr_np") else { return -1 }
            var attributes = pthread_attr_t()
            guard unsafeBitCast(symbol, to: GetAttr.self)(pthread_self(), &attributes) == 0 else { return -1 }
            defer { pthread_attr_destroy(&attributes) }
            var base: UnsafeMutableRawPointer?
            var size = 0
            pthread_attr_getstack(&attributes, &base, &size)
            var marker = 0
            let here = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
            return Int(bitPattern: UInt(bitPattern: base) + UInt(size) - here)
        }
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
            print("\(name): stack depth \(depths.min() ?? 0)…\(depths.max() ?? 0) bytes, \(depths.first ?? 0) at first")
            #expect((depths.min() ?? -1) > 0, "\(name): the depth could not be measured")
            #expect((depths.max() ?? 0) - (depths.min() ?? 0) <= 8_192, "\(name): \(depths.min() ?? 0)…\(depths.max() ?? 0) bytes")
        }
    }
}
