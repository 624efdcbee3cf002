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
            let client = try await target.client(as: asUser)
            let result = try await client.call {
                try await $0.nearby(query: .init(lat: lat, lon: lon, tag: tag.isEmpty ? nil : tag, limit: limit, at: when?.date))
                    .ok.body.json
            }
            if target.printedJSON(client) { return }
            if result.features.isEmpty {
                print("No beacons cover \(lat), \(lon)\(tag.isEmpty ? "" : " with tag \(tag.joined(separator: " or "))").")
                return
            }
            let now = when ?? Timestamp.now()
            let rows: [[String]] = result.features.map { f in
                let p = f.properties
                return [
                    p.value1.name,
                    Output.distance(p.value2.distanceM),
                    Output.bearing(p.value2.bearingDeg),
                    p.value1.tags.joined(separator: ","),
                    Output.endsIn(p.value1.lifetime?.end.map(Timestamp.init(date:)), now: now),
                ]
            }
            print(Output.table(["NAME", "DISTANCE", "BEARING", "TAGS", "ENDS IN"], rows))
        }
    }
}
