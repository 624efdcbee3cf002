import ArgumentParser
import DBeaconCore

struct LocationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "location",
        abstract: "Report a location fix and print the beacons you are inside and the events it produced.",
        discussion: """
            Example (through the API, with $DBEACON_SERVER and $DBEACON_TOKEN set):
              dbeacon location --lat 48.7764 --lon 9.1793
            """
    )
    @Option(help: "Latitude in degrees.") var lat: Double
    @Option(help: "Longitude in degrees.") var lon: Double
    @Option(help: "Horizontal accuracy in metres.") var accuracy: Double?
    @Option(name: .customLong("as"), help: "On the local database: the user (id or name) who reports.") var asUser: String?
    @OptionGroup var target: TargetOptions

    func validate() throws {
        try checkPosition(lat, lon)
    }

    func run() async throws {
        try await reportingErrors {
            if !target.isRemote && asUser == nil {
                throw DBeaconError.badRequest("--as USER is required on the database file: whose fix is it?", path: "as")
            }
            let result = try await target.client(as: asUser).reportLocation(lat: lat, lon: lon, accuracy: accuracy)
            if target.json { print(result.jsonString); return }
            let inside = (result["inside"]?.arrayValue ?? []).compactMap(\.stringValue)
            print("inside: \(inside.isEmpty ? "—" : inside.joined(separator: ", "))")
            for e in result["events"]?.arrayValue ?? [] {
                print("\(e["type"]?.stringValue ?? "")  \(e["data"]?["name"]?.stringValue ?? "")  \(e["data"]?["beacon"]?.stringValue ?? "")")
            }
        }
    }
}

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "List events, oldest first (yours through the API; everyone's, or --as USER's, on the local database).",
        discussion: """
            Example:
              dbeacon events --limit 20
            """
    )
    @Option(help: "Only events after this event id or cursor.") var after: String?
    @Option(help: "At most this many events.") var limit = 50
    @Option(name: .customLong("as"), help: "On the local database: only this user's events.") var asUser: String?
    @OptionGroup var target: TargetOptions

    func run() async throws {
        try await reportingErrors {
            let result = try await target.client(as: asUser).events(after: after, limit: limit)
            if target.json { print(result.jsonString); return }
            let rows: [[String]] = (result["events"]?.arrayValue ?? []).map { e in
                [e["created_at"]?.stringValue ?? "", e["type"]?.stringValue ?? "", e["recipient"]?.stringValue ?? "",
                 e["data"]?["name"]?.stringValue ?? e["data"]?["beacon"]?.stringValue ?? "", e["id"]?.stringValue ?? ""]
            }
            print(Output.table(["TIME", "TYPE", "RECIPIENT", "ABOUT", "ID"], rows))
            if let next = result["next_cursor"]?.stringValue { print("more: --after \(next)") }
        }
    }
}

struct WebhookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook",
        abstract: "Register webhooks and inspect their deliveries.",
        subcommands: [Add.self, List.self, Deliveries.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a webhook; prints its signing secret once.",
            discussion: """
                Example (the server must allow loopback: ./scripts/run.sh does):
                  dbeacon webhook add http://127.0.0.1:9999/hooks --event 'beacon.*'
                """
        )
        @Argument(help: "The http(s) URL to POST events to.") var url: String
        @Option(name: .customLong("event"), parsing: .singleValue, help: "Event type or pattern (repeatable; default *).")
        var events: [String] = []
        @Option(help: "user (your events) or all (every event; admin token).") var scope: String?
        @Option(name: .customLong("as"), help: "On the local database: the owning user (else scope all).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let w = try await target.client(as: asUser).addWebhook(url: url, events: events,
                                                                       scope: scope ?? (asUser == nil && !target.isRemote ? "all" : nil))
                if target.json { print(w.jsonString); return }
                print("id:     \(w["id"]?.stringValue ?? "")")
                print("secret: \(w["secret"]?.stringValue ?? "")  (shown only this once)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List webhooks.")
        @Option(name: .customLong("as"), help: "On the local database: only this user's webhooks.") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client(as: asUser).webhooks()
                if target.json { print(result.jsonString); return }
                let rows: [[String]] = (result["webhooks"]?.arrayValue ?? []).map { w in
                    [w["id"]?.stringValue ?? "", w["status"]?.stringValue ?? "", w["scope"]?.stringValue ?? "",
                     (w["events"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ","), w["url"]?.stringValue ?? ""]
                }
                print(Output.table(["ID", "STATUS", "SCOPE", "EVENTS", "URL"], rows))
            }
        }
    }

    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a webhook's recent deliveries, newest first.")
        @Argument(help: "Webhook id (whk_…).") var id: String
        @Option(help: "At most this many.") var limit = 20
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client().deliveries(webhook: id, limit: limit)
                if target.json { print(result.jsonString); return }
                let rows: [[String]] = (result["deliveries"]?.arrayValue ?? []).map { d in
                    [d["id"]?.stringValue ?? "", d["event_type"]?.stringValue ?? "", d["status"]?.stringValue ?? "",
                     String(Int(d["attempts"]?.numberValue ?? 0)), d["last_status_code"]?.numberValue.map { String(Int($0)) } ?? "—",
                     d["next_attempt_at"]?.stringValue ?? "—", d["last_error"]?.stringValue ?? ""]
                }
                print(Output.table(["ID", "EVENT", "STATUS", "ATTEMPTS", "LAST", "NEXT", "ERROR"], rows))
            }
        }
    }
}
