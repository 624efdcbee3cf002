import ArgumentParser
import DBeaconCore
import DBeaconKit
import Foundation

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import beacons from a GeoJSON FeatureCollection.",
        discussion: """
            Each Feature is a beacon as GET /v1/beacons/{id} returns it (README "The data model"; the Feature \
            schema in schema/openapi.yaml): a Point geometry plus properties such as name, perimeter,
            lifetime, tags. A Polygon geometry without a perimeter becomes the perimeter. On the local database
            the import is one transaction (all or nothing) and --owner says who owns the beacons (without it each
            feature's properties.owner must name an existing user). Through the API the token's user owns them.
            Example (the user ann must exist: dbeacon user add ann):
              dbeacon import samples/parks.geojson --owner ann --db data/dbeacon.sqlite
            """
    )

    @Argument(help: "A .geojson file.") var file: String
    @Option(help: "Owner (user id or name) of the imported beacons, on the local database.") var owner: String?
    @OptionGroup var target: TargetOptions

    func run() async throws {
        try await reportingErrors {
            let document = try Output.read(Operations.ImportBeacons.Input.Body.JsonPayload.self, file: file,
                                           as: "a GeoJSON FeatureCollection of beacons")
            // Through the API the token's user owns them; on the file, --owner (or each feature's
            // properties.owner, as the operator).
            let client = try await target.client(as: owner, flag: "--owner")
            let result = try await client.call { try await $0.importBeacons(body: .json(document)).created.body.json }
            if !target.printedJSON(client) { print("imported \(result.imported) beacons") }
        }
    }
}
