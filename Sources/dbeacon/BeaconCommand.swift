import ArgumentParser
import DBeaconCore
import DBeaconGeo
import Foundation

struct BeaconCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacon",
        abstract: "Get, list, create and delete beacons.",
        subcommands: [Get.self, List.self, Create.self, Delete.self]
    )

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print one beacon as a GeoJSON Feature.")
        @Argument(help: "Beacon id (bcn_…).") var id: String
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors { Output.printJSON(try await target.client().beacon(id)) }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List beacons (one page).")
        @Option(name: .long, parsing: .singleValue, help: "Only beacons with this tag (repeatable: any of).") var tag: [String] = []
        @Option(help: "Only beacons of this owner (through the API: me or a user id).") var owner: String?
        @Option(help: "Only beacons located in west,south,east,north.") var bbox: String?
        @Option(help: "Page size.") var limit = 50
        @Option(help: "Cursor from a previous page.") var cursor: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client().beacons(tags: tag, owner: owner, bbox: bbox, limit: limit, cursor: cursor)
                if target.json {
                    print(result.jsonString)
                    return
                }
                let rows: [[String]] = (result["features"]?.arrayValue ?? []).map { f in
                    let p = f["properties"]
                    return [f["id"]?.stringValue ?? "", p?["name"]?.stringValue ?? "",
                            p?["perimeter"]?["type"]?.stringValue ?? "",
                            (p?["tags"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ","),
                            p?["visibility"]?.isNull == false ? "private" : "public"]
                }
                print(Output.table(["ID", "NAME", "PERIMETER", "TAGS", "VISIBILITY"], rows))
                if let next = result["next_cursor"]?.stringValue { print("next page: --cursor \(next)") }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a beacon from a Feature file or from options.",
            discussion: """
                Example (on the local database, for the user ann):
                  dbeacon beacon create --name Kiosk --lat 48.78 --lon 9.18 --tag food \\
                    --owner ann
                """
        )
        @Option(help: "A GeoJSON Feature file (instead of --name/--lat/--lon).") var file: String?
        @Option(help: "Name.") var name: String?
        @Option(help: "Latitude of the location.") var lat: Double?
        @Option(help: "Longitude of the location.") var lon: Double?
        @Option(help: "Circle perimeter radius in metres.") var radius = 50.0
        @Option(name: .long, parsing: .singleValue, help: "Tag (repeatable).") var tag: [String] = []
        @Option(help: "Owner (user id or name), on the local database.") var owner: String?
        @OptionGroup var target: TargetOptions

        func validate() throws {
            if file == nil && (name == nil || lat == nil || lon == nil) {
                throw ValidationError("give --file, or --name, --lat and --lon")
            }
        }

        func run() async throws {
            try await reportingErrors {
                let feature: JSONValue
                if let file {
                    guard let data = FileManager.default.contents(atPath: file) else { throw DBeaconError.notFound("file \(file)") }
                    feature = try JSONParser.parse(Array(data))
                } else {
                    feature = .object([
                        "type": "Feature",
                        "geometry": .object(["type": "Point", "coordinates": [.number(lon ?? 0), .number(lat ?? 0)]]),
                        "properties": .object([
                            "name": .string(name ?? ""), "tags": .array(tag.map(JSONValue.string)),
                            "perimeter": .object(["type": "Circle", "radius_m": .number(radius)]),
                        ]),
                    ])
                }
                if !target.isRemote && owner == nil {
                    throw DBeaconError.badRequest("--owner is required on the database file: who owns the beacon?", path: "owner")
                }
                let created = try await target.client(as: owner, flag: "--owner").createBeacon(feature)
                if target.json { print(created.jsonString) } else { print("created \(created["id"]?.stringValue ?? "")") }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a beacon.")
        @Argument(help: "Beacon id (bcn_…).") var id: String
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                try await target.client().deleteBeacon(id)
                print("deleted \(id)")
            }
        }
    }
}
