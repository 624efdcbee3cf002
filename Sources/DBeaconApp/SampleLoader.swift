import DBeaconCore
import DBeaconAPI
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
package import Logging
import ServiceLifecycle

/// Loads `samples/` (users with fixed demo tokens, then beacons) into an empty database.
package struct SampleLoader {
    let services: AppServices

    package func loadIfEmpty(directory: String, logger: Logger) async throws {
        guard try await services.store.beaconCount() == 0 else {
            logger.info("samples not loaded: the database already has beacons", metadata: ["dir": "\(directory)"])
            return
        }
        let usersURL = URL(fileURLWithPath: directory).appendingPathComponent("users.json")
        let beaconsURL = URL(fileURLWithPath: directory).appendingPathComponent("beacons.geojson")
        let users = try ObjectReader(JSONParser.parse(Array(try Data(contentsOf: usersURL))))
        for (i, item) in (try users.optionalArray("users") ?? []).enumerated() {
            let u = try ObjectReader(item, path: "users[\(i)]")
            guard let id = UserID(try u.string("id")) else { throw DBeaconError.invalid(u.path("id"), "not a user id") }
            if try await services.store.user(id: id) != nil { continue }
            let token = try u.string("token")
            try await services.store.createUser(User(id: id, name: try u.string("name"), createdAt: services.clock.now()),
                                                tokenHash: AuthService.hash(token))
        }
        let document = try JSONParser.parse(Array(try Data(contentsOf: beaconsURL)))
        let items = try BeaconFeatureCodec.importItems(document, limits: services.beacons.limits)
        let imported = try await services.beacons.importBeacons(items, by: .admin, owner: nil)
        logger.notice("samples loaded", metadata: ["beacons": "\(imported.count)", "dir": "\(directory)"])
        try await loadRegistry(directory: directory, logger: logger)
    }
}
