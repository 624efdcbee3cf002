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
        if db == nil && serverURL != nil && bearer == nil {
            throw ValidationError("""
                --server (or $DBEACON_SERVER) needs a token: pass --token T or export DBEACON_TOKEN=T \
                (the demo users' tokens are in samples/users.json, e.g. demo-token-anna)
                """)
        }
    }

    /// The backend these options select: `--db` given on the command line wins over a
    /// `$DBEACON_SERVER` in the environment (so a tour that exported it can still use the file).
    func backend() async throws -> any Backend {
        if db == nil, let url = serverURL, let token = bearer {
            return RemoteBackend(baseURL: url, token: token)
        }
        return try await LocalBackend.open(path: databasePath)
    }
}
