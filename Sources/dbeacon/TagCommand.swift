import ArgumentParser
import DBeaconCore
import DBeaconKit

struct TagCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tags",
        abstract: "Categories: the tags in use with their counts, and the categories you follow.",
        discussion: """
            Following a category sends you beacon.created (in dbeacon events and to your webhooks) for each new
            beacon with that tag, visible to you, within the radius of your last reported location.
            """,
        subcommands: [List.self, Follow.self, Unfollow.self, Following.self],
        defaultSubcommand: List.self
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tags of the beacons you may see, most used first.",
            discussion: """
                Example:
                  dbeacon tags list --bbox 9.1,48.7,9.3,48.8
                """
        )
        @Option(help: "Only beacons located in west,south,east,north.") var bbox: String?
        @Option(help: "At most this many tags.") var limit = 100
        @Option(name: .customLong("as"), help: "On the local database: count what this user may see.") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.listTags(query: .init(bbox: bbox, limit: limit)).ok.body.json }
                if target.printedJSON(client) { return }
                let rows: [[String]] = result.tags.map { [$0.tag, String($0.count)] }
                print(Output.table(["TAG", "BEACONS"], rows))
            }
        }
    }

    struct Follow: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Follow a category: hear of new beacons with this tag near you.",
            discussion: """
                Example:
                  dbeacon tags follow food --radius 1500
                """
        )
        @Argument(help: "The tag.") var tag: String
        @Option(help: "Metres around your last location (default 2000, at most 50000).") var radius: Double?
        @Option(name: .customLong("as"), help: "On the local database: the user who follows.") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client(as: asUser)
                let output = try await client.call {
                    try await $0.followTag(path: .init(tag: tag), body: .json(.init(radiusM: radius)))
                }
                switch output {
                case .ok, .created: if !target.printedJSON(client) { Output.printJSON(client.answerJSON) }
                default: throw DBeaconError(.internal, code: "unexpected_answer", message: "unexpected answer to PUT /v1/me/tags/\(tag)")
                }
            }
        }
    }

    struct Unfollow: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop following a category.",
            discussion: """
                Example:
                  dbeacon tags unfollow food
                """
        )
        @Argument(help: "The tag.") var tag: String
        @Option(name: .customLong("as"), help: "On the local database: the user who follows.") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                _ = try await target.client(as: asUser).call { try await $0.unfollowTag(path: .init(tag: tag)).noContent }
                print("no longer following \(tag)")
            }
        }
    }

    struct Following: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The categories you follow.",
            discussion: """
                Example:
                  dbeacon tags following
                """
        )
        @Option(name: .customLong("as"), help: "On the local database: whose follows.") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.listFollowedTags().ok.body.json }
                if target.printedJSON(client) { return }
                let rows: [[String]] = result.follows.map { f in [f.tag, Output.number(f.radiusM), Output.time(f.createdAt)] }
                print(Output.table(["TAG", "RADIUS (m)", "SINCE"], rows))
            }
        }
    }
}

struct RegionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "regions",
        abstract: "The regions a phone at a point should monitor (nearest beacons, their iBeacons, a refresh circle).",
        discussion: """
            Example:
              dbeacon regions --lat 48.7784 --lon 9.18 --max 5
            """
    )
    @Option(help: "Latitude in degrees.") var lat: Double
    @Option(help: "Longitude in degrees.") var lon: Double
    @Option(help: "At most this many regions, the refresh circle included (2–100).") var max = 20
    @Option(name: .long, parsing: .singleValue, help: "Only beacons with this tag (repeatable: any of).") var tag: [String] = []
    @Option(name: .customLong("as"), help: "On the local database: for this user.") var asUser: String?
    @OptionGroup var target: TargetOptions

    func validate() throws {
        try checkPosition(lat, lon)
        guard (2...100).contains(max) else { throw ValidationError("--max must be between 2 and 100") }
    }

    func run() async throws {
        try await reportingErrors {
            let client = try await target.client(as: asUser)
            let result = try await client.call {
                try await $0.listMonitoredRegions(query: .init(lat: lat, lon: lon, tag: tag.isEmpty ? nil : tag, max: max)).ok.body.json
            }
            if target.printedJSON(client) { return }
            let rows: [[String]] = result.regions.map { r in
                let what: String
                if r._type == .ibeacon {
                    what = [r.uuid, r.major.map(String.init) ?? "any", r.minor.map(String.init) ?? "any"].compactMap { $0 }.joined(separator: " ")
                } else {
                    what = "r=\(r.radiusM.map(Output.number) ?? "") m" + (r.approximate == true ? " (approx.)" : "")
                }
                return [r._type.rawValue, r.id, r.name ?? "", what, r.distanceM.map(Output.number) ?? ""]
            }
            print(Output.table(["TYPE", "ID", "NAME", "REGION", "DISTANCE (m)"], rows))
        }
    }
}
