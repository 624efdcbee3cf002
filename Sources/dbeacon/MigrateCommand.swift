import ArgumentParser
import DBeaconStore
import Foundation
import Logging

/// `dbeacon migrate`: moves a deployment from the embedded SpatiaLite file to PostGIS.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy a SpatiaLite database into an empty PostgreSQL + PostGIS database.",
        discussion: """
            Copies every table (users with their token hashes, beacons, followers, events, webhooks with their \
            outbox and attempts, live state and the services' state) in one PostgreSQL transaction, then prints \
            per table the row counts and a checksum of both sides. Stop the server first; start it again with \
            --db pointing at the PostgreSQL URL. The target must be empty (a new database, or a new ?schema=).
            Example:
              dbeacon migrate --from data/dbeacon.sqlite \\
                --to postgres://dbeacon@db.internal/dbeacon
            """
    )

    @Option(help: "The SpatiaLite database file to copy.") var from: String
    @Option(help: "The PostgreSQL URL: postgres://user[:password]@host[:port]/dbname[?schema=NAME].") var to: String
    @Flag(help: "Print JSON instead of a table.") var json = false

    func validate() throws {
        guard StoreLocation.isPostgres(to) else { throw ValidationError("--to must be a postgres:// URL") }
        guard !StoreLocation.isPostgres(from) else { throw ValidationError("--from must be a SpatiaLite file") }
    }

    func run() async throws {
        var logger = Logger(label: "dbeacon")
        logger.logLevel = .warning
        let reports = try await StoreCopier.copy(from: from, to: to, logger: logger)
        let ok = reports.allSatisfy(\.matches)
        if json {
            let items = reports.map { r in
                "{\"table\":\"\(r.table)\",\"source_rows\":\(r.sourceRows),\"target_rows\":\(r.targetRows),"
                    + "\"source_checksum\":\"\(r.sourceChecksum)\",\"target_checksum\":\"\(r.targetChecksum)\",\"matches\":\(r.matches)}"
            }
            print("{\"tables\":[\(items.joined(separator: ","))],\"ok\":\(ok)}")
        } else {
            print("table".padding(toLength: 24, withPad: " ", startingAt: 0) + "   rows (from → to)   checksum (from → to)")
            for r in reports {
                print(r.table.padding(toLength: 24, withPad: " ", startingAt: 0)
                      + String(format: " %8d → %-8d", r.sourceRows, r.targetRows)
                      + "   \(r.sourceChecksum) → \(r.targetChecksum)" + (r.matches ? "" : "   MISMATCH"))
            }
            print(ok ? "migrated without loss: every table has the same rows on both sides"
                     : "MISMATCH: the copy differs from the source (see above)")
        }
        if !ok { throw ExitCode(2) }
    }
}
