import ArgumentParser
import DBeaconCore
import DBeaconGeo
import DBeaconKit
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
            try await reportingErrors {
                let client = try await target.client()
                _ = try await client.call { try await $0.getBeacon(path: .init(id: id)).ok }
                if !target.printedJSON(client) { Output.printJSON(client.answerJSON) }
            }
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
                let client = try await target.client()
                let page = try await client.call {
                    try await $0.listBeacons(query: .init(tag: tag.isEmpty ? nil : tag, owner: owner.map { $0 == "me" ? .case1(.me) : .UserId($0) }, bbox: bbox, limit: limit, cursor: cursor))
                        .ok.body.json
                }
                if target.printedJSON(client) { return }
                let rows: [[String]] = page.value1.features.map { f in
                    let p = f.properties
                    return [f.id, p.value1.name, Output.perimeterType(p.value2.perimeter), p.value1.tags.joined(separator: ","),
                            p.value1.visibility == nil ? "public" : "private"]
                }
                print(Output.table(["ID", "NAME", "PERIMETER", "TAGS", "VISIBILITY"], rows))
                if let next = page.value2.nextCursor { print("next page: --cursor \(next)") }
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
                let feature: Components.Schemas.BeaconInput
                if let file {
                    feature = try Output.read(Components.Schemas.BeaconInput.self, file: file, as: "a GeoJSON Feature of a beacon")
                } else {
                    feature = .init(
                        _type: .feature,
                        geometry: .Point(.init(_type: .point, coordinates: [lon ?? 0, lat ?? 0])),
                        properties: .init(name: name ?? "", perimeter: .circle(.init(_type: .circle, radiusM: radius)), tags: tag))
                }
                if !target.isRemote && owner == nil {
                    throw DBeaconError.badRequest("--owner is required on the database file: who owns the beacon?", path: "owner")
                }
                let client = try await target.client(as: owner, flag: "--owner")
                let created = try await client.call { try await $0.createBeacon(body: .json(feature)).created.body.json }
                if !target.printedJSON(client) { print("created \(created.id)") }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a beacon.")
        @Argument(help: "Beacon id (bcn_…).") var id: String
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                _ = try await target.client().call { try await $0.deleteBeacon(path: .init(id: id)).noContent }
                print("deleted \(id)")
            }
        }
    }
}
