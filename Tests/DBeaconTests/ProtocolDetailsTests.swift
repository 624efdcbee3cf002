import DBeaconCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Protocol details a user meets (issue 45), each on both stores.
@Suite(.bounded) struct ProtocolDetailsTests {
    /// A body that is both one fix and a batch (the document's `oneOf` allows one) is refused,
    /// not half applied.
    @Test(arguments: Backend.all) func aLocationBodyIsOneFixOrABatchNotBoth(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, token) = try await h.user("ann")
        try await h.app().test(.router) { client in
            let both = try await client.call(.post, "/v1/me/location", token: token,
                                             json: ["lat": 48.7784, "lon": 9.18, "fixes": [["lat": 48.7, "lon": 9.1]]])
            #expect(both.status == .unprocessableContent && both.errorPath == "fixes" && both.errorCode == "ambiguous_body")
            #expect(try await h.store.userLocations([h.services.auth.authenticate(token: token)?.userID].compactMap { $0 }).isEmpty)
            #expect(try await client.call(.post, "/v1/me/location", token: token, json: ["fixes": [["lat": 48.7, "lon": 9.1]]]).status == .ok)
        }
    }
}
