import AsyncHTTPClient
import DBeaconKit
import DBeaconServices
import Foundation
import Hummingbird
import HummingbirdTesting
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Testing

/// An app developer's tour with the generated client (`DBeaconKit`) against a live server, on
/// both stores: create a beacon, patch it with `If-Match`, find it nearby, get the regions to
/// monitor, walk in and read the event from the log, then resume the event stream after it
/// (`Last-Event-ID`, as an app does with the id it saved) and receive the exit on it.
@Suite(.bounded) struct DBeaconKitTourTests {
    @Test(arguments: Backend.all) func tour(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await h.app().test(.live) { live in
                let url = URL(string: "http://127.0.0.1:\(try #require(live.port))")!
                let transport = AsyncHTTPClientTransport(configuration: .init(client: http, timeout: .seconds(30)))
                try await Self.walk(url: url, transport: transport, clock: h.clock)
            }
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    static func walk(url: URL, transport: any ClientTransport, clock: ManualClock) async throws {
        let admin = Client.dbeacon(serverURL: url, token: TestHarness.adminToken, transport: transport)
        // Users, as an operator's back office creates them.
        let ownerCreated = try await admin.createUser(body: .json(.init(name: "kit-owner"))).created.body.json
        let walkerCreated = try await admin.createUser(body: .json(.init(name: "kit-walker"))).created.body.json
        let owner = Client.dbeacon(serverURL: url, token: ownerCreated.value2.token, transport: transport)
        let walker = Client.dbeacon(serverURL: url, token: walkerCreated.value2.token, transport: transport)
        #expect(try await walker.getMe().ok.body.json.id == walkerCreated.value1.id)

        // Create: a public beacon with a 100 m circle and a lifetime (timestamps both ways).
        let start = try DBeaconDateTranscoder().decode("2026-11-21T11:00:00.250Z")
        let input = Components.Schemas.BeaconInput(
            _type: .feature,
            geometry: .Point(.init(_type: .point, coordinates: [9.18, 48.7784])),
            properties: .init(name: "Kit café", perimeter: .circle(.init(_type: .circle, radiusM: 100)),
                              lifetime: .init(start: start, end: nil), tags: ["food"]))
        let created = try await owner.createBeacon(body: .json(input)).created
        let beacon = try created.body.json
        let etag = try #require(created.headers.eTag)
        #expect(beacon.properties.value1.name == "Kit café")
        #expect(beacon.properties.value1.lifetime?.start == start, "milliseconds survive both ways")
        #expect(beacon.properties.value1.createdAt != nil)

        // Patch with If-Match: the current version applies, the old one is 412.
        let patched = try await owner.updateBeacon(path: .init(id: beacon.id), headers: .init(ifMatch: etag),
                                                   body: .applicationMergePatchJson(.init(properties: .init(unvalidatedValue: ["description": "Maultaschen"]))))
        let newTag = try #require(try patched.ok.headers.eTag)
        #expect(newTag != etag)
        #expect(try patched.ok.body.json.properties.value1.description == "Maultaschen")
        let stale = try await owner.updateBeacon(path: .init(id: beacon.id), headers: .init(ifMatch: etag),
                                                 body: .applicationMergePatchJson(.init(properties: .init(unvalidatedValue: ["description": "x"]))))
        guard case .preconditionFailed(let failed) = stale else { Issue.record("stale If-Match: \(stale)"); return }
        #expect(try failed.body.json.error.code == "version_mismatch")

        // Nearby with a tag, as the walker sees it.
        let nearby = try await walker.nearby(query: .init(lat: 48.779, lon: 9.18, tag: ["food"])).ok.body.json
        #expect(nearby.features.map(\.id) == [beacon.id])
        #expect((nearby.features.first?.properties.value2.distanceM ?? 0) > 60)

        // Regions to monitor: the beacon's circle and a refresh circle; the helper plans the change.
        let regions = RegionSet(try await walker.listMonitoredRegions(query: .init(lat: 48.779, lon: 9.18, max: 5)).ok.body.json)
        #expect(regions.complete)
        #expect(regions.circles.map(\.id) == [beacon.id])
        let refresh = try #require(regions.refresh)
        #expect((refresh.radiusM ?? 0) > 0)
        #expect(regions.changes(from: RegionSet()).added.count == regions.regions.count)
        #expect(regions.changes(from: regions).added.isEmpty)
        #expect(!regions.shouldRefresh(lat: 48.779, lon: 9.18))
        #expect(regions.shouldRefresh(lat: 49.1, lon: 9.18), "35 km away, outside the 30 km refresh circle")

        // Walk in: the event is in the log, paged.
        let at = clock.now()
        let fix = try await walker.postMyLocation(body: .json(.LocationFix(.init(lat: 48.7784, lon: 9.18, accuracyM: 5,
                                                                            timestamp: Date(timeIntervalSince1970: Double(at.millis) / 1000)))))
        #expect(try fix.ok.body.json.inside == [beacon.id])
        let entered = try #require(try await walker.listEvents().ok.body.json.events.first)
        #expect(entered._type == .beacon_entered && entered.recipient == walkerCreated.value1.id)

        // Live events: a stream resumed after the entry (as an app does with the id it saved, or
        // EventSource with Last-Event-ID) receives what follows, decoded, whether it was committed
        // before the stream was up or after. (Without `after` a stream starts with the next
        // event, so a test could not tell when it may walk.)
        var stream = walker.events(after: entered.id, retryDelay: .milliseconds(200)).makeAsyncIterator()
        clock.advance(seconds: 30)
        let out = try await walker.postMyLocation(body: .json(.LocationFix(.init(lat: 48.8, lon: 9.18, accuracyM: 5))))
        #expect(try out.ok.body.json.inside.isEmpty)
        let exited = try #require(try await stream.next())
        #expect(exited._type == .beacon_exited && exited.id != entered.id)

        // The stream and the log agree, in order.
        let log = try await walker.listEvents().ok.body.json
        #expect(log.events.map(\.id) == [entered.id, exited.id])
        #expect(log.events.last?.createdAt == exited.createdAt)
    }
}
