import DBeaconAPI
import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// A simulated walk through an exhibition hall past registered beacons, through the HTTP API.
@Suite(.bounded) struct WalkSimulationTests {
    /// The hall: x east, y north in metres from its south-west corner near the Schlossplatz.
    static let origin = Position(lon: 9.1800, lat: 48.7784)
    static func at(_ x: Double, _ y: Double) -> Position { LocalFrame.offset(origin, east: x, north: y) }

    struct Physical {
        let name: String
        let minor: Int
        let x: Double
        let y: Double
        /// Registered with its installed position (usable for trilateration).
        let positioned: Bool
    }

    static let physical = [
        Physical(name: "entrance", minor: 1, x: 0, y: 10, positioned: true),
        Physical(name: "exhibit A", minor: 2, x: 20, y: 0, positioned: true),
        Physical(name: "exhibit B", minor: 3, x: 20, y: 20, positioned: true),
        Physical(name: "cafe", minor: 4, x: 40, y: 10, positioned: true),
        // Not registered on its own: resolves through the UUID-wide "venue" entry.
        Physical(name: "venue", minor: 9, x: 60, y: 10, positioned: false),
    ]
    static let rangeM = 25.0

    /// Walks along y = 10 from x = -40 to x = 80 at 1.4 m/s, one batch of noise-free sightings
    /// (RSSI rounded to whole dB, as radios report it) per second, the ticker running every second,
    /// then stands outside the hall for 40 s.
    @Test func walkPastTheBeacons() async throws {
        let h = try await TestHarness.make()
        let (owner, _) = try await h.user("curator")
        let (visitor, token) = try await h.user("visitor")
        var digital: [String: Beacon] = [:]
        for p in Self.physical {
            // Small perimeters: presence comes from the sightings, not from geofences.
            let location = Self.at(p.x, p.y)
            digital[p.name] = try await h.beacon(feature(name: p.name, lat: location.lat, lon: location.lon, perimeter: circle(3)),
                                                 owner: owner)
        }
        // A geofence over the cafe area without a physical beacon of its own: entered by the
        // indoor position.
        let corners = [Self.at(30, 0), Self.at(40, 0), Self.at(40, 20), Self.at(30, 20), Self.at(30, 0)].map { ($0.lon, $0.lat) }
        let cafeArea = try await h.beacon(feature(name: "cafe area", lat: Self.at(35, 10).lat, lon: Self.at(35, 10).lon,
                                                  perimeter: polygon([corners])), owner: owner)
        let registry = h.services.registry
        for p in Self.physical where p.positioned {
            let location = Self.at(p.x, p.y)
            _ = try await registry.register(try RegistryCodec.decodeDraft(registration(digital[p.name]!, major: 1, minor: p.minor, extra: [
                ("position", ["lat": .number(location.lat), "lon": .number(location.lon), "level": 0]), ("measured_power", -59),
            ])), by: .user(owner))
        }
        _ = try await registry.register(try RegistryCodec.decodeDraft(registration(digital["venue"]!)), by: .user(owner))

        let model = PathLoss(exponent: 2)
        let start = h.clock.now()
        let (lastSeen, errors, resolutions) = try await h.app().test(.router) { client in
            var lastSeen: [String: Timestamp] = [:]
            var positionErrors: [Double] = []
            var resolutions = 0
            for step in 0...120 {
                let t = start.adding(seconds: Double(step))
                h.clock.set(t)
                let x = -40 + 1.4 * Double(step)
                if x <= 80 {
                    let truth = Self.at(x, 10)
                    var items: [JSONValue] = []
                    var expected: [String] = []
                    for p in Self.physical {
                        let d = Geodesy.distance(truth, Self.at(p.x, p.y))
                        guard d <= Self.rangeM else { continue }
                        let rssi = Int(model.rssi(atDistance: max(d, 0.2), measuredPower: -59).rounded())
                        items.append(sighting(minor: p.minor, rssi: min(rssi, -1), at: t))
                        expected.append(p.name)
                        lastSeen[p.name] = t
                    }
                    if !items.isEmpty {
                        let r = try await client.call(.post, "/v1/sightings", token: token,
                                                      json: ["batch_id": .string("walk-\(step)"), "sightings": .array(items)])
                        #expect(r.status == .ok, "\(r.text)")
                        let results = r.json?["results"]?.arrayValue ?? []
                        let names = results.map { $0["beacon"]?["properties"]?["name"]?.stringValue ?? "?" }
                        #expect(names == expected, "step \(step)")
                        resolutions += names.count
                        if let position = r.json?["position"], !position.isNull {
                            let estimate = Position(lon: position["lon"]!.numberValue!, lat: position["lat"]!.numberValue!)
                            let error = Geodesy.distance(estimate, truth)
                            positionErrors.append(error)
                            #expect(error < 3, "step \(step) at x = \(x): \(error) m off (\(position))")
                            #expect(position["implausible"] == false && position["level"] == 0)
                            #expect(position["accuracy_m"]!.numberValue! > 0)
                        }
                    }
                }
                try await h.services.ticker.tickOnce()
            }
            return (lastSeen, positionErrors, resolutions)
        }

        // Every digital beacon was entered by sighting and exited 30 s after its last sighting;
        // the cafe area was entered by the indoor position.
        let events = try await h.events(visitor)
        for p in Self.physical {
            let id = digital[p.name]!.id
            let mine = events.filter { $0.beacon == id }
            #expect(mine.map(\.type) == [.entered, .exited], "\(p.name): \(mine.map(\.type))")
            #expect(mine.first?.data["reason"] == "sighting")
            #expect(mine.last?.data["reason"] == "sighting_timeout")
            #expect(mine.last?.data["at"] == .string(lastSeen[p.name]!.adding(seconds: 30).rfc3339), "\(p.name)")
        }
        let area = events.filter { $0.beacon == cafeArea.id }
        #expect(area.map(\.type) == [.entered])
        #expect(area.first?.data["reason"] == nil)
        #expect(await h.fences.insideBeacons(of: visitor) == [cafeArea.id])

        let positionErrors = errors.sorted()
        print("walk: \(resolutions) resolutions, \(positionErrors.count) indoor positions, median error "
              + "\(positionErrors[positionErrors.count / 2]) m, max \(positionErrors.last!) m, \(events.count) events")
        #expect(positionErrors.count >= 30)
    }

    /// A position estimate that would mean moving faster than physically possible since the
    /// last fix is flagged and changes nothing.
    @Test func flagsImpossibleJumps() async throws {
        let h = try await TestHarness.make()
        let (owner, _) = try await h.user("curator")
        let (visitor, token) = try await h.user("visitor")
        let hall = try await h.beacon(feature(name: "hall", lat: Self.at(10, 10).lat, lon: Self.at(10, 10).lon, perimeter: circle(30)),
                                      owner: owner)
        for (minor, x, y) in [(1, 0.0, 0.0), (2, 20.0, 0.0), (3, 10.0, 20.0)] {
            let p = Self.at(x, y)
            _ = try await h.services.registry.register(try RegistryCodec.decodeDraft(registration(hall, major: 1, minor: minor, extra: [
                ("position", ["lat": .number(p.lat), "lon": .number(p.lon)]),
            ])), by: .user(owner))
        }
        // A GPS fix 2 km north, then, 5 s later, sightings from inside the hall.
        try await h.fix(visitor, lat: Self.origin.lat + 0.018, lon: Self.origin.lon, accuracy: 10)
        h.clock.advance(seconds: 5)
        let truth = Self.at(10, 8)
        let items: [JSONValue] = [(1, 0.0, 0.0), (2, 20.0, 0.0), (3, 10.0, 20.0)].map { minor, x, y in
            let d = Geodesy.distance(truth, Self.at(x, y))
            return sighting(minor: minor, rssi: Int(PathLoss().rssi(atDistance: d, measuredPower: -59).rounded()), at: h.clock.now())
        }
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": .array(items)])
            let position = try #require(r.json?["position"])
            #expect(position["implausible"] == true && position["applied"] == false)
            #expect(position["reason"]?.stringValue?.contains("m/s") == true)
            // The sightings themselves still count: the user is inside the hall by sighting.
            #expect(r.json?["events"]?.arrayValue?.map { $0["data"]?["reason"] } == ["sighting"])
        }
        #expect(await h.fences.location(of: visitor)?.position.lat == Self.origin.lat + 0.018, "the jump did not move the user")
        // A minute later the same estimate is plausible and becomes the user's location.
        h.clock.advance(seconds: 200)
        let later = items.map { item -> JSONValue in
            var o = item.objectValue!
            o["timestamp"] = .string(h.clock.now().rfc3339)
            return .object(o)
        }
        try await h.app().test(.router) { client in
            let r = try await client.call(.post, "/v1/sightings", token: token, json: ["sightings": .array(later)])
            #expect(r.json?["position"]?["implausible"] == false && r.json?["position"]?["applied"] == true)
        }
        let location = try #require(await h.fences.location(of: visitor))
        #expect(Geodesy.distance(location.position, truth) < 3)
    }
}
