import ArgumentParser
import DBeaconCore
import DBeaconKit
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
                let client = try await target.client()
                let user = try await client.call { try await $0.createUser(body: .json(.init(name: name))).created.body.json }
                if target.printedJSON(client) { return }
                print("id:    \(user.value1.id)")
                print("name:  \(user.value1.name)")
                print("token: \(user.value2.token)  (shown only this once)")
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
                let client = try await target.client()
                let page = try await client.call {
                    try await $0.listUsers(query: .init(namePrefix: namePrefix, limit: limit, cursor: cursor)).ok.body.json
                }
                if target.printedJSON(client) { return }
                let rows = page.users.map { u in [u.id, u.name, Output.time(u.createdAt), u.disabled ? "disabled" : "active"] }
                print(Output.table(["id", "name", "created", "status"], rows))
                if let next = page.nextCursor { print("more: --cursor \(next)") }
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
                let id = try await UserCommand.resolve(user, client)
                let shown = try await client.call { try await $0.getUser(path: .init(user: id)).ok.body.json }
                if !target.printedJSON(client) { UserCommand.printUser(shown) }
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
                let rotated = try await client.call { kit in
                    if let id { try await kit.rotateUserToken(path: .init(user: id)).ok.body.json } else { try await kit.rotateOwnToken().ok.body.json }
                }
                if target.printedJSON(client) { return }
                print("id:    \(rotated.id)")
                print("token: \(rotated.token)  (shown only this once; the old one no longer works)")
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
                if user == "me" {
                    guard let id = try await client.call({ try await $0.getMe().ok.body.json }).id else {
                        throw DBeaconError.badRequest("`me` needs a user's token (the admin token belongs to no user)")
                    }
                    let erased = try await client.call { try await $0.deleteMe(query: .init(confirm: id)).ok.body.json }
                    if !target.printedJSON(client) { print("erased \(erased.id)") }
                    return
                }
                let id = try await UserCommand.resolve(user, client)
                let report = try await client.call { try await $0.deleteUser(path: .init(user: id)).ok.body.json }
                if target.printedJSON(client) { return }
                print("erased \(report.id): \(report.beacons) beacons, \(report.notices) notices to others")
                let rows = report.rows.additionalProperties.sorted { $0.key < $1.key }.map { [$0.key, String($0.value)] }
                if !rows.isEmpty { print(Output.table(["table", "rows"], rows)) }
            }
        }
    }

    // MARK: Helpers

    /// A user id, or the id of the one user with this name.
    static func resolve(_ user: String, _ client: APIClient) async throws -> String {
        if UserID(user) != nil { return user }
        let page = try await client.call { try await $0.listUsers(query: .init(namePrefix: user, limit: 500)).ok.body.json }
        let matches = page.users.filter { $0.name == user }
        guard matches.count == 1, let id = matches.first?.id else {
            throw DBeaconError.badRequest(matches.isEmpty ? "no user named \(user)" : "\(matches.count) users are named \(user): give the id")
        }
        return id
    }

    static func setDisabled(_ user: String, _ disabled: Bool, _ target: TargetOptions) async throws {
        try await reportingErrors {
            let client = try await target.client()
            let id = try await resolve(user, client)
            let updated = try await client.call { try await $0.updateUser(path: .init(user: id), body: .json(.init(disabled: disabled))).ok.body.json }
            if !target.printedJSON(client) { printUser(updated) }
        }
    }

    static func printUser(_ u: Components.Schemas.UserSummary) {
        let a = u.value1
        let lines: [(String, String)] = [
            ("id", a.id), ("name", a.name), ("created_at", Output.time(a.createdAt)), ("disabled", a.disabled ? "yes" : "no"),
            ("disabled_at", Output.time(a.disabledAt)), ("token_rotated_at", Output.time(a.tokenRotatedAt)),
            ("beacons", String(u.value2.beacons)), ("devices", String(u.value2.devices)),
        ]
        for (key, text) in lines { print("\(key.padding(toLength: 17, withPad: " ", startingAt: 0)) \(text)") }
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
            let document = try await client.call { kit in
                if let id { try await kit.exportUser(path: .init(user: id)).ok.body.json } else { try await kit.exportMe().ok.body.json }
            }
            // The document as the server wrote it, not as this client would re-encode it.
            var bytes = client.answers.last
            if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
            if let output {
                try Data(bytes).write(to: URL(fileURLWithPath: output))
                print("wrote \(output): \(document.beacons.features.count) beacons, \(document.events.count) events")
            } else {
                FileHandle.standardOutput.write(Data(bytes))
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
