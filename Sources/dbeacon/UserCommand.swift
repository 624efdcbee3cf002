import ArgumentParser
import DBeaconCore
import Foundation

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage users: create, list, show, disable and enable, rotate tokens, delete.",
        discussion: """
            With --db the command acts on the database file as the operator; through the API
            (--server) it needs the admin token, except `rotate-token` and `delete me` with a
            user's own token.
            """,
        subcommands: [Add.self, List.self, Show.self, Disable.self, Enable.self, RotateToken.self, Delete.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a user and print its id and bearer token (shown only once).",
            discussion: """
                Through the API (--server) this needs the admin token.
                Examples:
                  dbeacon user add ann --db data/dbeacon.sqlite
                  dbeacon user add ben --token dev-admin-token
                """
        )

        @Argument(help: "The user's display name.") var name: String
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let user = try await target.client().addUser(name: name)
                if target.json {
                    print(user.jsonString)
                } else {
                    print("id:    \(user["id"]?.stringValue ?? "")")
                    print("name:  \(user["name"]?.stringValue ?? "")")
                    print("token: \(user["token"]?.stringValue ?? "")  (shown only this once)")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List users in creation order (the admin's).",
            discussion: """
                Examples:
                  dbeacon user list --db data/dbeacon.sqlite
                  dbeacon user list --name-prefix an --token dev-admin-token
                """
        )

        @Option(help: "Only users whose name starts with this.") var namePrefix: String?
        @Option(help: "Users per page (at most 500).") var limit = 100
        @Option(help: "The next_cursor of a previous page.") var cursor: String?
        @OptionGroup var target: TargetOptions

        func validate() throws {
            guard (1...500).contains(limit) else { throw ValidationError("--limit must be 1–500") }
        }

        func run() async throws {
            try await reportingErrors {
                let page = try await target.client().users(namePrefix: namePrefix, limit: limit, cursor: cursor)
                if target.json { return print(page.jsonString) }
                let rows = (page["users"]?.arrayValue ?? []).map { u in
                    [u["id"]?.stringValue ?? "", u["name"]?.stringValue ?? "", u["created_at"]?.stringValue ?? "",
                     u["disabled"]?.boolValue == true ? "disabled" : "active"]
                }
                print(Output.table(["id", "name", "created", "status"], rows))
                if let next = page["next_cursor"]?.stringValue { print("more: --cursor \(next)") }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a user: status, token rotation, beacons and devices.",
            discussion: "Example: dbeacon user show ann --db data/dbeacon.sqlite"
        )

        @Argument(help: "The user's id (usr_…) or unique name.") var user: String
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client()
                let shown = try await client.user(try await UserCommand.resolve(user, client))
                target.json ? print(shown.jsonString) : UserCommand.printUser(shown)
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a user: their tokens and devices get 401, their event streams end, their webhooks wait.",
            discussion: "Enable them again with `dbeacon user enable`; nothing is lost meanwhile."
        )

        @Argument(help: "The user's id (usr_…) or unique name.") var user: String
        @OptionGroup var target: TargetOptions

        func run() async throws { try await UserCommand.setDisabled(user, true, target) }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled user again.")

        @Argument(help: "The user's id (usr_…) or unique name.") var user: String
        @OptionGroup var target: TargetOptions

        func run() async throws { try await UserCommand.setDisabled(user, false, target) }
    }

    struct RotateToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-token",
            abstract: "Give a user a new token (printed once); the old one stops working at once.",
            discussion: """
                Without a user, rotates the token given with --token (a user's own; the server from
                --server or $DBEACON_SERVER). Device tokens are not affected (revoke them with
                DELETE /v1/me/devices/{id}).
                Examples:
                  dbeacon user rotate-token ann --db data/dbeacon.sqlite
                  dbeacon user rotate-token --token demo-token-anna
                """
        )

        @Argument(help: "The user's id (usr_…) or unique name; leave out for your own token.") var user: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client()
                if user == nil && !target.isRemote {
                    throw DBeaconError.badRequest("name the user whose token to rotate (on the database file you act as the operator)")
                }
                let id = try await user.asyncMap { try await UserCommand.resolve($0, client) }
                let rotated = try await client.rotateToken(id)
                if target.json { return print(rotated.jsonString) }
                print("id:    \(rotated["id"]?.stringValue ?? "")")
                print("token: \(rotated["token"]?.stringValue ?? "")  (shown only this once; the old one no longer works)")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a user and everything that is theirs (beacons, locations, events, …). Cannot be undone.",
            discussion: """
                `me` erases the account of the token given with --token. Prints what was removed.
                Examples:
                  dbeacon user delete ann --yes --db data/dbeacon.sqlite
                  dbeacon user delete me --yes --token demo-token-ben
                """
        )

        @Argument(help: "The user's id (usr_…) or unique name, or `me`.") var user: String
        @Flag(help: "Confirm: the user and their data are erased for good.") var yes = false
        @OptionGroup var target: TargetOptions

        func validate() throws {
            guard yes else { throw ValidationError("erasing a user cannot be undone: add --yes to confirm") }
        }

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client()
                let report: JSONValue
                if user == "me" {
                    guard let id = try await client.me()["id"]?.stringValue else {
                        throw DBeaconError.badRequest("`me` needs a user's token (the admin token belongs to no user)")
                    }
                    report = try await client.eraseOwnAccount(confirm: id)
                } else {
                    report = try await client.eraseUser(try await UserCommand.resolve(user, client))
                }
                if target.json { return print(report.jsonString) }
                print("erased \(report["id"]?.stringValue ?? user): \(report["beacons"]?.numberValue.map { Int($0) } ?? 0) beacons, "
                      + "\(report["notices"]?.numberValue.map { Int($0) } ?? 0) notices to others")
                let rows = (report["rows"]?.objectValue?.members ?? []).map { [$0.key, "\(Int($0.value.numberValue ?? 0))"] }
                if !rows.isEmpty { print(Output.table(["table", "rows"], rows)) }
            }
        }
    }

    // MARK: Helpers

    /// A user id, or the id of the one user with this name.
    static func resolve(_ user: String, _ client: DBeaconClient) async throws -> String {
        if UserID(user) != nil { return user }
        let page = try await client.users(namePrefix: user, limit: 500, cursor: nil)
        let matches = (page["users"]?.arrayValue ?? []).filter { $0["name"]?.stringValue == user }
        guard matches.count == 1, let id = matches[0]["id"]?.stringValue else {
            throw DBeaconError.badRequest(matches.isEmpty ? "no user named \(user)" : "\(matches.count) users are named \(user): give the id")
        }
        return id
    }

    static func setDisabled(_ user: String, _ disabled: Bool, _ target: TargetOptions) async throws {
        try await reportingErrors {
            let client = try await target.client()
            let updated = try await client.updateUser(try await resolve(user, client), disabled: disabled)
            target.json ? print(updated.jsonString) : printUser(updated)
        }
    }

    static func printUser(_ u: JSONValue) {
        for key in ["id", "name", "created_at", "disabled", "disabled_at", "token_rotated_at", "beacons", "devices"] {
            guard let v = u[key] else { continue }
            let text: String = switch v {
            case .string(let s): s
            case .number(let n): String(Int(n))
            case .bool(let b): b ? "yes" : "no"
            default: "—"
            }
            print("\(key.padding(toLength: 17, withPad: " ", startingAt: 0)) \(text)")
        }
    }
}

/// `dbeacon export`: everything the service holds about a user, as one JSON document.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export everything the service holds about a user (GDPR Art. 20) as one JSON document.",
        discussion: """
            Without --user, exports the account of the token given with --token.
            Examples:
              dbeacon export --token demo-token-anna --output anna.json
              dbeacon export --user ann --db data/dbeacon.sqlite
            """
    )

    @Option(help: "The user's id (usr_…) or unique name (the operator's: --db, or the admin token).") var user: String?
    @Option(help: "Write to this file instead of standard output.") var output: String?
    @OptionGroup var target: TargetOptions

    func run() async throws {
        try await reportingErrors {
            let client = try await target.client()
            if user == nil && !target.isRemote {
                throw DBeaconError.badRequest("name the user with --user (on the database file you act as the operator)")
            }
            let id = try await user.asyncMap { try await UserCommand.resolve($0, client) }
            let document = try await client.export(id)
            let text = document.jsonString + "\n"
            if let output {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output))
                let events = document["events"]?.arrayValue?.count ?? 0
                let beacons = document["beacons"]?["features"]?.arrayValue?.count ?? 0
                print("wrote \(output): \(beacons) beacons, \(events) events")
            } else {
                print(text, terminator: "")
            }
        }
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
