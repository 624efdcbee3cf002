import ArgumentParser
import DBeaconCore
import DBeaconKit

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
            let client = try await target.client(as: asUser)
            let fix = Components.Schemas.LocationFix(lat: lat, lon: lon, accuracyM: accuracy)
            let result = try await client.call { try await $0.postMyLocation(body: .json(.LocationFix(fix))).ok.body.json }
            if target.printedJSON(client) { return }
            print("inside: \(result.inside.isEmpty ? "—" : result.inside.joined(separator: ", "))")
            for e in result.events { print(Output.line(e)) }
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
            let client = try await target.client(as: asUser)
            let result = try await client.call { try await $0.listEvents(query: .init(after: after, limit: limit)).ok.body.json }
            if target.printedJSON(client) { return }
            let rows: [[String]] = result.events.map { e in
                [Output.time(e.createdAt), e._type.rawValue, e.recipient, Output.about(e), e.id]
            }
            print(Output.table(["TIME", "TYPE", "RECIPIENT", "ABOUT", "ID"], rows))
            if let next = result.nextCursor { print("more: --after \(next)") }
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
                let scope = scope ?? (asUser == nil && !target.isRemote ? "all" : nil)
                let body = Components.Schemas.WebhookCreate(
                    url: url, events: events.isEmpty ? nil : events,
                    scope: try scope.map { value in
                        guard let s = Components.Schemas.WebhookCreate.ScopePayload(rawValue: value) else {
                            throw DBeaconError.invalid("scope", "--scope must be user or all")
                        }
                        return s
                    })
                let client = try await target.client(as: asUser)
                let w = try await client.call { try await $0.createWebhook(body: .json(body)).created.body.json }
                if target.printedJSON(client) { return }
                print("id:     \(w.value1.id)")
                print("secret: \(w.value2.secret)  (shown only this once)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List webhooks.")
        @Option(name: .customLong("as"), help: "On the local database: only this user's webhooks.") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.listWebhooks().ok.body.json }
                if target.printedJSON(client) { return }
                let rows: [[String]] = result.webhooks.map { w in
                    [w.id, w.status.rawValue, w.scope.rawValue, w.events.joined(separator: ","), w.url]
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
                let client = try await target.client()
                let result = try await client.call {
                    try await $0.listWebhookDeliveries(path: .init(id: id), query: .init(limit: limit)).ok.body.json
                }
                if target.printedJSON(client) { return }
                let rows: [[String]] = result.deliveries.map { d in
                    [d.id, d.eventType.rawValue, d.status.rawValue, String(d.attempts), d.lastStatusCode.map(String.init) ?? "—",
                     Output.time(d.nextAttemptAt), d.lastError ?? ""]
                }
                print(Output.table(["ID", "EVENT", "STATUS", "ATTEMPTS", "LAST", "NEXT", "ERROR"], rows))
            }
        }
    }
}
