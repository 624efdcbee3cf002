import ArgumentParser
import DBeaconCore

struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage users.",
        subcommands: [Add.self]
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
}
