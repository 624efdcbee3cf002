import DBeaconCore
import DBeaconStore
import Foundation
import Logging
import Synchronization
import Testing

/// Where `dbeacon serve` runs its work: Swift tasks on the connections' event loops
/// (`--executor`), long synchronous work handed to other threads (`offEventLoops`), and a
/// PostgreSQL pool that is running before its first lease.
@Suite(.bounded) struct ExecutorTests {
    @Test func serveRefusesAnUnknownExecutor() async throws {
        let db = try Backend.spatialite.freshDatabase(in: try Scratch.directory("dbeacon-executor"))
        let refused = try await CLI.run(["serve", "--executor", "threads", "--db", db, "--port", "18996"])
        #expect(refused.status != 0)
        #expect(refused.err.contains("--executor must be event-loops or cooperative"), "\(refused.err)")
        #expect(!FileManager.default.fileExists(atPath: db), "a refused start must not create the database")
        let help = try await CLI.run(["serve", "--help"])
        #expect(help.out.contains("--executor") && help.out.contains("event-loops"))
    }

    struct Failure: Error, Equatable { let code: Int }

    @Test func workHandedOffReturnsItsResultOrItsError() async throws {
        let value = await offEventLoops { (1...100).reduce(0, +) }
        #expect(value == 5050)
        await #expect(throws: Failure(code: 7)) { try await offEventLoops { () throws -> Int in throw Failure(code: 7) } }
    }

    /// PostgresNIO warns when a connection is leased before the pool's `run()` has begun; the
    /// store's migrations lease one right after starting it.
    @Test(.enabled(if: Backend.postgresURL != nil, "needs DBEACON_POSTGRES_URL"))
    func aPostgreSQLStoreStartsWithoutWarnings() async throws {
        let url = try Backend.postgis.freshDatabase(in: try Scratch.directory("dbeacon-executor"))
        let records = CapturedLogs()
        var logger = Logger(label: "test") { _ in CapturedLogs.Handler(records: records) }
        logger.logLevel = .trace
        let store = try await PostgresStore.connect(url: url, listen: true, logger: logger, deadline: Backend.testDeadline)
        _ = try await store.beaconCount()
        await store.shutdown()
        let warnings = records.all.filter { $0.level >= .warning }
        #expect(warnings.isEmpty, "\(warnings.map(\.message))")
    }
}

/// Log records kept for a test to read.
final class CapturedLogs: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
    }

    private let records = Mutex<[Record]>([])
    var all: [Record] { records.withLock { $0 } }
    func append(_ record: Record) { records.withLock { $0.append(record) } }

    struct Handler: LogHandler {
        let records: CapturedLogs
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            records.append(CapturedLogs.Record(level: event.level, message: event.message.description))
        }
    }
}
