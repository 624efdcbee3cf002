import ArgumentParser
import Foundation

/// Where a command acts: the local database file, or a server through its API.
struct TargetOptions: ParsableArguments {
    @Option(name: .long, help: "Database file (default: $DBEACON_DB, else ./data/dbeacon.sqlite).")
    var db: String?

    @Option(name: .long, help: "Go through the HTTP API of this server instead of opening the database (or $DBEACON_SERVER).")
    var server: String?

    @Option(name: .long, help: "Bearer token for --server (or $DBEACON_TOKEN).")
    var token: String?

    @Flag(name: .long, help: "Print JSON instead of a table.")
    var json = false

    var serverURL: String? { server ?? ProcessInfo.processInfo.environment["DBEACON_SERVER"] }
    var bearer: String? { token ?? ProcessInfo.processInfo.environment["DBEACON_TOKEN"] }

    var databasePath: String {
        db ?? ProcessInfo.processInfo.environment["DBEACON_DB"] ?? "./data/dbeacon.sqlite"
    }

    func validate() throws {
        if db != nil && server != nil {
            throw ValidationError("use either --db (local database) or --server (HTTP API), not both")
        }
        if serverURL != nil && bearer == nil {
            throw ValidationError("--server needs --token (or $DBEACON_TOKEN)")
        }
    }

    /// The backend these options select.
    func backend() async throws -> any Backend {
        if let url = serverURL, let token = bearer {
            return RemoteBackend(baseURL: url, token: token)
        }
        return try await LocalBackend.open(path: databasePath)
    }
}
