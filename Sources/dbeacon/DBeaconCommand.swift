import ArgumentParser
import Foundation

/// `dbeacon`: the DBeacon server and its operator tool.
@main
struct DBeaconCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dbeacon",
        abstract: "DBeacon: digital beacons with perimeters, lifetimes and visibility, on SpatiaLite.",
        discussion: """
            Run the server with `dbeacon serve`, then use the other commands either on the local database
            (--db PATH, default $DBEACON_DB or ./data/dbeacon.sqlite) or through the HTTP API
            (--server http://127.0.0.1:8080 --token TOKEN, or $DBEACON_SERVER and $DBEACON_TOKEN).
            """,
        subcommands: [ServeCommand.self, UserCommand.self, ImportCommand.self, NearbyCommand.self, BeaconCommand.self,
                      LocationCommand.self, EventsCommand.self, WebhookCommand.self, MeetingCommand.self, GroupCommand.self,
                      TourCommand.self, PromoCommand.self, RegistryCommand.self, SightingCommand.self, BenchForwarder.self,
                      MigrateCommand.self, TagCommand.self, RegionsCommand.self, ExportCommand.self]
    )

    /// Runs the command line; with `$DBEACON_PARSE_ONLY` set it only checks that the line parses
    /// and validates (exit 0, or the usage error), so tests can check the examples of `--help`.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if ProcessInfo.processInfo.environment["DBEACON_PARSE_ONLY"] != nil { return }
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
