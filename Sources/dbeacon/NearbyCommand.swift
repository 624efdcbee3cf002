import ArgumentParser
import DBeaconCore

struct NearbyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nearby",
        abstract: "List the beacons whose perimeter covers a point, nearest first.",
        discussion: """
            Prints name, distance, bearing, tags and time until the beacon's lifetime ends.
            On the local database the operator sees every beacon; --as USER shows what that user sees.
            Examples:
              dbeacon nearby --lat 48.7784 --lon 9.1800 --tag food
              dbeacon nearby --lat 48.7784 --lon 9.1800 --as usr_anna \\
                --db data/dbeacon.sqlite
            """
    )

    @Option(help: "Latitude in degrees (WGS84).") var lat: Double
    @Option(help: "Longitude in degrees (WGS84).") var lon: Double
    @Option(name: .long, parsing: .singleValue, help: "Only beacons with this tag (repeat for any of several).") var tag: [String] = []
    @Option(help: "Instant to evaluate lifetimes at (RFC 3339; default now).") var at: String?
    @Option(help: "At most this many beacons.") var limit = 50
    @Option(name: .customLong("as"), help: "On the local database: see what this user (id or name) sees.") var asUser: String?
    @OptionGroup var target: TargetOptions

    func validate() throws {
        try checkPosition(lat, lon)
        if let at, Timestamp(rfc3339: at) == nil { throw ValidationError("--at must be RFC 3339, e.g. 2026-11-21T12:00:00Z") }
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be between 1 and 500") }
    }

    func run() async throws {
        try await reportingErrors {
            let when = at.flatMap(Timestamp.init(rfc3339:))
            let result = try await target.client(as: asUser).nearby(lat: lat, lon: lon, tags: tag, at: when, limit: limit)
            if target.json {
                print(result.jsonString)
                return
            }
            let features = result["features"]?.arrayValue ?? []
            if features.isEmpty {
                print("No beacons cover \(lat), \(lon)\(tag.isEmpty ? "" : " with tag \(tag.joined(separator: " or "))").")
                return
            }
            let now = when ?? Timestamp.now()
            let rows: [[String]] = features.map { f in
                let p = f["properties"]
                let end = p?["lifetime"]?["end"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
                return [
                    p?["name"]?.stringValue ?? "",
                    Output.distance(p?["distance_m"]?.numberValue ?? 0),
                    Output.bearing(p?["bearing_deg"]?.numberValue ?? 0),
                    (p?["tags"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ","),
                    Output.endsIn(end, now: now),
                ]
            }
            print(Output.table(["NAME", "DISTANCE", "BEARING", "TAGS", "ENDS IN"], rows))
        }
    }
}
