import DBeaconServices
import Foundation
import Testing

/// The services hold their store and the store holds its observers; an observer that held the
/// services strongly kept everything alive, with every database connection open (a test run
/// reached 2,000 open descriptors, one process per `dbeacon --db` call would too).
@Suite(.bounded) struct ServicesLifetimeTests {
    @Test(arguments: Backend.all) func droppedServicesCloseTheirDatabase(_ backend: Backend) async throws {
        weak var store: AnyObject?
        weak var fences: FenceEngine?
        var databaseFile = ""
        do {
            let harness = try await TestHarness.make(backend: backend)
            let user = try await harness.user()
            try await harness.beacon(feature(), owner: user.id)
            try await harness.fix(user.id, lat: 48.7784, lon: 9.18)
            #expect(try await harness.events(user.id).count == 1)
            store = harness.store as AnyObject
            fences = harness.fences
            databaseFile = harness.services.config.databasePath
            if backend == .spatialite { #expect(Self.openDescriptors(of: databaseFile) > 0) }
        }
        // The index warm-up runs detached and may hold the engine a moment longer.
        for _ in 0..<100 where store != nil || fences != nil { try await Task.sleep(for: .milliseconds(20)) }
        #expect(store == nil, "the store outlived its services")
        #expect(fences == nil, "the fence engine outlived its services")
        // The background checkpointer closes its own connection once it sees the stop: a moment
        // later under the parallel suite.
        for _ in 0..<100 where backend == .spatialite && Self.openDescriptors(of: databaseFile) > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        if backend == .spatialite { #expect(Self.openDescriptors(of: databaseFile) == 0) }
    }

    /// How many of this process's descriptors point at `path` (or its -wal/-shm files).
    static func openDescriptors(of path: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "").hasPrefix(path)
        }.count
    }
}
