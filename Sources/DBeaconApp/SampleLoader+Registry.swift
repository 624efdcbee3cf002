import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import Foundation
package import Logging

extension SampleLoader {
    /// Registers the physical beacons of `registry.json` (`{"entries": [registry entry, …]}`),
    /// if the sample folder has one, as the operator.
    package func loadRegistry(directory: String, logger: Logger) async throws {
        let url = URL(fileURLWithPath: directory).appendingPathComponent("registry.json")
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        let root = try ObjectReader(JSONParser.parse(Array(try Data(contentsOf: url))))
        let entries = try root.optionalArray("entries") ?? []
        for (i, item) in entries.enumerated() {
            do {
                _ = try await services.registry.register(try RegistryCodec.decodeDraft(item), by: .admin)
            } catch var error as DBeaconError {
                error.path = "registry.json: entries[\(i)]" + (error.path.map { ".\($0)" } ?? "")
                throw error
            }
        }
        logger.notice("sample registry loaded", metadata: ["entries": "\(entries.count)"])
    }
}
