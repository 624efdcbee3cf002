import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

let kontaktUUID = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"

/// A registry entry body for `POST /v1/registry`.
func registration(_ beacon: Beacon, uuid: String = kontaktUUID, major: Int? = nil, minor: Int? = nil,
                  extra: [(String, JSONValue)] = []) -> JSONValue {
    var o: JSONObject = ["type": "ibeacon", "uuid": .string(uuid), "beacon": .string(beacon.id.rawValue)]
    if let major { o["major"] = .int(major) }
    if let minor { o["minor"] = .int(minor) }
    for (k, v) in extra { o[k] = v }
    return .object(o)
}

@Suite(.bounded) struct RegistryTests {
    @Test(arguments: Backend.all) func registersAndRefusesExactDuplicates(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, token) = try await h.user("owner")
        let b = try await h.beacon(feature(name: "shop"), owner: owner)
        try await h.app().test(.router) { client in
            let created = try await client.call(.post, "/v1/registry", token: token, json: registration(b, major: 100, minor: 7, extra: [
                ("position", ["lat": 48.7784, "lon": 9.18, "level": 1]), ("measured_power", -61),
            ]))
            #expect(created.status == .created, "\(created.text)")
            let id = try #require(created.json?["id"]?.stringValue)
            #expect(id.hasPrefix("reg_"))
            #expect(created.json?["uuid"] == .string(kontaktUUID) && created.json?["major"] == 100 && created.json?["minor"] == 7)
            #expect(created.json?["position"]?["level"] == 1 && created.json?["measured_power"] == -61)
            #expect(created.json?["status"] == "active" && created.json?["owner"] == .string(owner.rawValue))
            #expect(created.headers[.location] == "/v1/registry/\(id)")

            // The same identity, spelled differently (upper case, no dashes), is a duplicate.
            let dup = try await client.call(.post, "/v1/registry", token: token,
                                            json: registration(b, uuid: "F7826DA64FA24E988024BC5B71E0893E", major: 100, minor: 7))
            #expect(dup.status == .conflict && dup.errorCode == "duplicate_identity")
            // Other levels of the same UUID are different identities.
            #expect(try await client.call(.post, "/v1/registry", token: token, json: registration(b, major: 100)).status == .created)
            #expect(try await client.call(.post, "/v1/registry", token: token, json: registration(b)).status == .created)
            // A decommissioned entry frees its identity for a replacement beacon.
            let patched = try await client.call(.patch, "/v1/registry/\(id)", token: token, json: ["status": "decommissioned"])
            #expect(patched.status == .ok && patched.json?["status"] == "decommissioned" && patched.json?["version"] == 2)
            #expect(try await client.call(.post, "/v1/registry", token: token, json: registration(b, major: 100, minor: 7)).status == .created)
            // …and cannot come back while the replacement is live.
            let back = try await client.call(.patch, "/v1/registry/\(id)", token: token, json: ["status": "active"])
            #expect(back.status == .conflict && back.errorCode == "duplicate_identity")

            let eddystone = try await client.call(.post, "/v1/registry", token: token, json: [
                "type": "eddystone-uid", "namespace": "EDD1EBEAC04E5DEFA017", "instance": "0bdb87539b67", "beacon": .string(b.id.rawValue),
            ])
            #expect(eddystone.status == .created && eddystone.json?["namespace"] == "edd1ebeac04e5defa017")
            let alt = try await client.call(.post, "/v1/registry", token: token, json: [
                "type": "altbeacon", "id1": "2f234454-cf6d-4a0f-adf2-f4911ba9ffa6", "id2": 1, "beacon": .string(b.id.rawValue),
            ])
            #expect(alt.status == .created && alt.json?["id3"] == .null)
        }
    }

    @Test(arguments: Backend.all) func registeringNeedsOwnershipOfTheDigitalBeacon(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let (_, bobToken) = try await h.user("bob")
        let publicBeacon = try await h.beacon(feature(name: "shop"), owner: owner)
        let hidden = try await h.beacon(feature(name: "staff room", members: [ann]), owner: owner)
        try await h.app().test(.router) { client in
            #expect(try await client.call(.post, "/v1/registry", token: annToken, json: registration(publicBeacon)).status == .forbidden)
            // Ann may see the private beacon (member) but not edit it; Bob may not know it exists.
            #expect(try await client.call(.post, "/v1/registry", token: annToken, json: registration(hidden)).status == .forbidden)
            let unknown = try await client.call(.post, "/v1/registry", token: bobToken, json: registration(hidden))
            #expect(unknown.status == .notFound && unknown.errorPath == "beacon")
            // The operator registers for anyone; the entry belongs to the beacon's owner.
            let admin = try await client.call(.post, "/v1/registry", token: TestHarness.adminToken, json: registration(hidden, major: 1))
            #expect(admin.status == .created && admin.json?["owner"] == .string(owner.rawValue))
            let id = try #require(admin.json?["id"]?.stringValue)
            // Entries are visible exactly when their digital beacon is.
            #expect(try await client.call(.get, "/v1/registry/\(id)", token: annToken).status == .ok)
            #expect(try await client.call(.get, "/v1/registry/\(id)", token: bobToken).status == .notFound)
            #expect(try await client.call(.patch, "/v1/registry/\(id)", token: bobToken, json: ["status": "inactive"]).status == .notFound)
            #expect(try await client.call(.patch, "/v1/registry/\(id)", token: annToken, json: ["status": "inactive"]).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/registry/\(id)", token: annToken).status == .forbidden)
            let bobsList = try await client.call(.get, "/v1/registry", token: bobToken)
            #expect(bobsList.json?["entries"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test(arguments: Backend.all, [
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893","beacon":"BID"}"#, "uuid", "invalid_uuid"),
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","major":70000,"beacon":"BID"}"#, "major", "invalid_major"),
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","major":1.5,"beacon":"BID"}"#, "major", "invalid_major"),
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","minor":3,"beacon":"BID"}"#, "minor", "missing_field"),
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","beacon":"BID","measured_power":-200}"#,
         "measured_power", "out_of_range"),
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","beacon":"BID","status":"broken"}"#, "status", "invalid_value"),
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","beacon":"BID","position":{"lat":91,"lon":9}}"#,
         "position.lat", "out_of_range"),
        (#"{"type":"eddystone-uid","namespace":"edd1ebeac04e5defa0","instance":"0bdb87539b67","beacon":"BID"}"#,
         "namespace", "invalid_namespace"),
        (#"{"type":"quuppa","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","beacon":"BID"}"#, "type", "invalid_type"),
        (#"{"type":"ibeacon","uuid":"f7826da6-4fa2-4e98-8024-bc5b71e0893e","beacon":"shop"}"#, "beacon", "invalid_id"),
    ])
    func rejectsInvalidEntries(_ backend: Backend, _ input: (body: String, path: String, code: String)) async throws {
        let (body, path, code) = input
        let h = try await TestHarness.make(backend: backend)
        let (owner, token) = try await h.user("owner")
        let b = try await h.beacon(feature(name: "shop"), owner: owner)
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/registry", token: token, raw: body.replacingOccurrences(of: "BID", with: b.id.rawValue))
            #expect(r.status == .unprocessableContent, "\(r.text)")
            #expect(r.errorPath == path && r.errorCode == code, "\(r.text)")
        }
        #expect(try await h.store.listRegistryEntries(RegistryListQuery(), viewer: .admin, now: h.clock.now()).items.isEmpty)
    }

    /// UUID+major+minor over UUID+major over UUID; inactive entries do not resolve; a caller
    /// who cannot see the most specific entry's beacon gets the next one they can see.
    @Test(arguments: Backend.all) func resolvesTheMostSpecificActiveVisibleEntry(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, token) = try await h.user("owner")
        let (ann, annToken) = try await h.user("ann")
        let (_, bobToken) = try await h.user("bob")
        let venue = try await h.beacon(feature(name: "venue"), owner: owner)
        let hall = try await h.beacon(feature(name: "hall"), owner: owner)
        let desk = try await h.beacon(feature(name: "desk", members: [ann]), owner: owner)
        try await h.app().test(.router) { client in
            for (b, major, minor) in [(venue, nil, nil), (hall, 1, nil), (desk, 1, 2)] as [(Beacon, Int?, Int?)] {
                let r = try await client.call(.post, "/v1/registry", token: token, json: registration(b, major: major, minor: minor))
                #expect(r.status == .created)
            }
            func resolve(_ query: String, _ token: String) async throws -> String? {
                let r = try await client.call(.get, "/v1/registry/resolve?\(query)", token: token)
                return r.status == .ok ? r.json?["properties"]?["name"]?.stringValue : r.status == .notFound ? nil : "HTTP \(r.status.code)"
            }
            let u = "uuid=\(kontaktUUID)"
            #expect(try await resolve("\(u)&major=1&minor=2", annToken) == "desk")
            #expect(try await resolve("\(u)&major=1&minor=3", annToken) == "hall")
            #expect(try await resolve("\(u)&major=5&minor=5", annToken) == "venue")
            #expect(try await resolve("\(u)&major=1", annToken) == "hall")
            #expect(try await resolve(u, annToken) == "venue")
            #expect(try await resolve("uuid=00000000-0000-0000-0000-000000000000&major=1&minor=2", annToken) == nil)
            // Bob may not see the desk: he gets what he would get if it did not exist.
            #expect(try await resolve("\(u)&major=1&minor=2", bobToken) == "hall")
            // The same answer from the raw advertisement.
            #expect(try await resolve("adv=0201061aff4c000215f7826da64fa24e988024bc5b71e0893e00010002c5", annToken) == "desk")

            let list = try await client.call(.get, "/v1/registry?beacon=\(hall.id)", token: token)
            let hallEntry = try #require(list.json?["entries"]?.arrayValue?.first?["id"]?.stringValue)
            let stale = try await client.call(.patch, "/v1/registry/\(hallEntry)", token: token, json: ["status": "inactive"],
                                              headers: [.ifMatch: "\"7\""])
            #expect(stale.status == .preconditionFailed)
            // An invalid patch is 422 whatever the version (If-Match only meets valid edits).
            let invalid = try await client.call(.patch, "/v1/registry/\(hallEntry)", token: token, json: [.null, .null],
                                                headers: [.ifMatch: "\"7\""])
            #expect(invalid.status == .unprocessableContent)
            #expect(invalid.errorPath == "$")
            #expect(try await client.call(.patch, "/v1/registry/\(hallEntry)", token: token, json: ["status": "inactive"],
                                          headers: [.ifMatch: "\"1\""]).status == .ok)
            #expect(try await resolve("\(u)&major=1&minor=3", annToken) == "venue")
            #expect(try await resolve("\(u)&major=1&minor=2", bobToken) == "venue")
            // Bad parameters.
            #expect(try await client.call(.get, "/v1/registry/resolve?uuid=nope", token: annToken).status == .unprocessableContent)
            #expect(try await client.call(.get, "/v1/registry/resolve?\(u)&major=x", token: annToken).status == .badRequest)
            #expect(try await client.call(.get, "/v1/registry/resolve?\(u)&minor=2", token: annToken).status == .unprocessableContent)
            #expect(try await client.call(.get, "/v1/registry/resolve?adv=4c0002", token: annToken).errorCode == "malformed_frame")
            #expect(try await client.call(.get, "/v1/registry/resolve", token: annToken).status == .unprocessableContent)
        }
    }

    @Test(arguments: Backend.all) func resolvesEddystoneAndAltBeaconIdentities(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, token) = try await h.user("owner")
        let e = try await h.beacon(feature(name: "eddy"), owner: owner)
        let a = try await h.beacon(feature(name: "alt"), owner: owner)
        try await h.app().test(.router) { client in
            _ = try await client.call(.post, "/v1/registry", token: token, json: [
                "type": "eddystone-uid", "namespace": "edd1ebeac04e5defa017", "instance": "0bdb87539b67", "beacon": .string(e.id.rawValue),
            ])
            _ = try await client.call(.post, "/v1/registry", token: token, json: [
                "type": "altbeacon", "id1": "2f234454cf6d4a0fadf2f4911ba9ffa6", "id2": 1, "beacon": .string(a.id.rawValue),
            ])
            let byQuery = try await client.call(.get, "/v1/registry/resolve?namespace=edd1ebeac04e5defa017&instance=0bdb87539b67", token: token)
            #expect(byQuery.json?["id"] == .string(e.id.rawValue))
            let byAdv = try await client.call(.get, "/v1/registry/resolve?adv=aafe00e7edd1ebeac04e5defa0170bdb87539b670000", token: token)
            #expect(byAdv.json?["id"] == .string(e.id.rawValue))
            let alt = try await client.call(.get, "/v1/registry/resolve?type=altbeacon&id1=2f234454-cf6d-4a0f-adf2-f4911ba9ffa6&id2=1&id3=9",
                                            token: token)
            #expect(alt.json?["id"] == .string(a.id.rawValue))
            let altAdv = try await client.call(.get, "/v1/registry/resolve?adv=1bff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c500",
                                               token: token)
            #expect(altAdv.json?["id"] == .string(a.id.rawValue))
            // The AltBeacon entry is not an iBeacon entry with the same 16 bytes.
            #expect(try await client.call(.get, "/v1/registry/resolve?uuid=2f234454cf6d4a0fadf2f4911ba9ffa6&major=1&minor=9",
                                          token: token).status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func listsWithFiltersAndPagesAndCascadesWithTheBeacon(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, token) = try await h.user("owner")
        let (_, otherToken) = try await h.user("other")
        let a = try await h.beacon(feature(name: "a"), owner: owner)
        let b = try await h.beacon(feature(name: "b"), owner: owner)
        try await h.app().test(.router) { client in
            for minor in 0..<5 {
                _ = try await client.call(.post, "/v1/registry", token: token, json: registration(minor < 3 ? a : b, major: 1, minor: minor))
            }
            _ = try await client.call(.post, "/v1/registry", token: token,
                                      json: registration(a, uuid: "11111111-2222-3333-4444-555555555555", extra: [("status", "inactive")]))
            var ids: [String] = []
            var cursor: String?
            repeat {
                let page = try await client.call(.get, "/v1/registry?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), token: otherToken)
                ids += page.json?["entries"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                cursor = page.json?["next_cursor"]?.stringValue
            } while cursor != nil
            #expect(ids.count == 6 && Set(ids).count == 6)
            #expect(try await client.call(.get, "/v1/registry?beacon=\(b.id)", token: token).json?["entries"]?.arrayValue?.count == 2)
            #expect(try await client.call(.get, "/v1/registry?status=inactive", token: token).json?["entries"]?.arrayValue?.count == 1)
            #expect(try await client.call(.get, "/v1/registry?uuid=\(kontaktUUID.uppercased())", token: token)
                .json?["entries"]?.arrayValue?.count == 5)
            #expect(try await client.call(.get, "/v1/registry?owner=me", token: otherToken).json?["entries"]?.arrayValue?.isEmpty == true)
            #expect(try await client.call(.get, "/v1/registry?status=nope", token: token).status == .badRequest)

            #expect(try await client.call(.delete, "/v1/beacons/\(a.id)", token: token).status == .noContent)
            let left = try await client.call(.get, "/v1/registry", token: token)
            #expect(left.json?["entries"]?.arrayValue?.count == 2)
            let one = try #require(left.json?["entries"]?.arrayValue?.first?["id"]?.stringValue)
            #expect(try await client.call(.delete, "/v1/registry/\(one)", token: token).status == .noContent)
            #expect(try await client.call(.get, "/v1/registry/\(one)", token: token).status == .notFound)
        }
    }

    @Test(arguments: Backend.all) func theSampleDataRegistersTheMarkthalleBeacons(_ backend: Backend) async throws {
        let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("samples").path
        let h = try await TestHarness.make(backend: backend) { $0.samplesDirectory = samples }
        let all = try await h.services.registry.list(RegistryListQuery(limit: 100), by: .admin)
        #expect(all.items.count == 6)
        try await h.app().test(.router) { client in
            for minor in [1, 4, 9] {
                let r = try await client.call(.get, "/v1/registry/resolve?uuid=\(kontaktUUID)&major=100&minor=\(minor)", token: "demo-token-anna")
                #expect(r.json?["id"] == "bcn_markthalle", "minor \(minor): \(r.text)")
            }
            let eddystone = try await client.call(.get, "/v1/registry/resolve?namespace=edd1ebeac04e5defa017&instance=0000000000a1",
                                                  token: "demo-token-anna")
            #expect(eddystone.json?["id"] == "bcn_markthalle")
        }
    }
}
