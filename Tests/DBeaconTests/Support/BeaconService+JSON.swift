import DBeaconAPI
import DBeaconCore
import DBeaconServices

/// The API's JSON in front of the typed service calls, as the controllers do it.
extension BeaconService {
    /// `PATCH /v1/beacons/{id}`: an RFC 7396 merge patch of the Feature.
    func update(_ id: BeaconID, patch: JSONValue, ifMatch: Set<Int>?, by principal: Principal) async throws -> (Beacon, [String]) {
        let limits = self.limits
        return try await update(id, ifMatch: ifMatch, by: principal) { current in
            try BeaconFeatureCodec.patched(current, with: patch, limits: limits)
        }
    }

    /// An operator import of a FeatureCollection for `owner`.
    func importFeatures(_ document: JSONValue, owner: UserID) async throws -> [Beacon] {
        try await importBeacons(try BeaconFeatureCodec.importItems(document, limits: limits), by: .admin, owner: owner)
    }
}
