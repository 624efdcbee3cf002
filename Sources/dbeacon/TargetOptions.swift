import ArgumentParser
import DBeaconCore
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
        if db?.isEmpty == true { throw ValidationError("--db must name a database file or a postgres:// URL, not be empty") }
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

    /// Whether these options go through a server's API (else the database file, in process).
    var isRemote: Bool { db == nil && serverURL != nil && bearer != nil }

    /// The API client these options select: a server over HTTP with the token, or the API
    /// built in this process on the database file, acting as the operator or, with `asUser`
    /// (`--as`, `--owner`), as that user (id or name). Either way DBeaconKit's typed client.
    func client(as asUser: String? = nil, flag: String = "--as") async throws -> APIClient {
        if isRemote, let url = serverURL, let token = bearer {
            if asUser != nil {
                throw DBeaconError.badRequest("\(flag) only applies to the database file (--db); through the API the token decides")
            }
            return APIClient(transport: HTTPTransport.make(), token: token, server: url)
        }
        let services = try await InProcessTransport.open(path: databasePath)
        var principal = Principal.admin
        if let asUser { principal = .user(try await InProcessTransport.user(asUser, in: services)) }
        return APIClient(transport: InProcessTransport(services: services, principal: principal), token: nil, server: nil)
    }

    /// Prints the last answer of `client` as the API wrote it, when `--json` asks for it.
    /// Returns whether it did (the command then prints nothing else).
    func printedJSON(_ client: APIClient) -> Bool {
        if json { print(client.answer) }
        return json
    }
}
