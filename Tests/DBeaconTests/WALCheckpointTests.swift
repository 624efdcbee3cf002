import DBeaconStore
import Foundation
import Testing

/// The embedded store checkpoints its write-ahead log on a thread of its own, so commits never
/// copy pages to the database file themselves. SpatiaLite only: PostgreSQL manages its own log.
@Suite(.bounded) struct WALCheckpointTests {
    @Test func theLogIsCheckpointedOffTheCommitPathAndNothingIsLost() async throws {
        let path = try Scratch.directory("dbeacon-wal").appendingPathComponent("wal.sqlite").path
        do {
            let store = try SpatiaLiteStore(path: path, checkpointFrames: 64)
            _ = try await store.write { db, _ in try await db.rows("CREATE TABLE scratch(n INTEGER PRIMARY KEY, payload BLOB)", []) }
            // 60 commits of 16 KiB each: several times 64 pages of log.
            for n in 0..<60 {
                _ = try await store.write { db, _ in
                    try await db.rows("INSERT INTO scratch(n, payload) VALUES ($1, zeroblob(16384))", [n])
                }
            }
            // The commits only asked; the checkpointer's thread copied the log to the database.
            var state = store.checkpoints
            for _ in 0..<200 where state.runs == 0 {
                try await Task.sleep(for: .milliseconds(50))
                state = store.checkpoints
            }
            #expect(state.runs > 0, "no checkpoint ran in the background")
            #expect(state.copiedFrames >= 64 && state.copiedFrames <= state.logFrames, "\(state)")
        }
        // A new store on the file reads every committed row.
        let reopened = try SpatiaLiteStore(path: path)
        let count = try await reopened.read { db in
            try await db.rows("SELECT count(*) AS n, sum(length(payload)) AS bytes FROM scratch", []).first.map {
                (try $0.int("n"), try $0.int("bytes"))
            }
        }
        #expect(count?.0 == 60 && count?.1 == 60 * 16384)
    }
}
