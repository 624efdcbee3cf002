import ArgumentParser
import DBeaconCore

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
                let result = try await target.client(as: asUser).tags(bbox: bbox, limit: limit)
                if target.json { print(result.jsonString); return }
                let rows: [[String]] = (result["tags"]?.arrayValue ?? []).map { t in
                    [t["tag"]?.stringValue ?? "", t["count"].map { JSONWriter.string($0) } ?? ""]
                }
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
            try await reportingErrors { Output.printJSON(try await target.client(as: asUser).followTag(tag, radius: radius)) }
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
                try await target.client(as: asUser).unfollowTag(tag)
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
                let result = try await target.client(as: asUser).followedTags()
                if target.json { print(result.jsonString); return }
                let rows: [[String]] = (result["follows"]?.arrayValue ?? []).map { f in
                    [f["tag"]?.stringValue ?? "", f["radius_m"].map { JSONWriter.string($0) } ?? "", f["created_at"]?.stringValue ?? ""]
                }
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
            let result = try await target.client(as: asUser).regions(lat: lat, lon: lon, max: max, tags: tag)
            if target.json { print(result.jsonString); return }
            let rows: [[String]] = (result["regions"]?.arrayValue ?? []).map { r in
                let type = r["type"]?.stringValue ?? ""
                let what: String
                if type == "ibeacon" {
                    what = [r["uuid"]?.stringValue, r["major"].map { JSONWriter.string($0) }, r["minor"].map { JSONWriter.string($0) }]
                        .compactMap { $0 }.joined(separator: " ")
                } else {
                    what = "r=\(r["radius_m"].map { JSONWriter.string($0) } ?? "") m" + (r["approximate"]?.boolValue == true ? " (approx.)" : "")
                }
                return [type, r["id"]?.stringValue ?? "", r["name"]?.stringValue ?? "", what,
                        r["distance_m"].map { JSONWriter.string($0) } ?? ""]
            }
            print(Output.table(["TYPE", "ID", "NAME", "REGION", "DISTANCE (m)"], rows))
        }
    }
}
