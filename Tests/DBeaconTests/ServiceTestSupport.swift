import DBeaconCore
import DBeaconGeo
import DBeaconServices
import Foundation
import HummingbirdTesting
import Testing

/// Helpers shared by the service scenario tests.
enum Walk {
    static let schlossplatz = Position(lon: 9.1800, lat: 48.7784)

    /// The point `north` metres north and `east` metres east of `p` (local tangent plane).
    static func offset(_ p: Position, north: Double = 0, east: Double = 0) -> Position {
        LocalFrame(origin: p).unproject(east, north)
    }

    /// A fix body at `p` stamped `at`.
    static func fix(_ p: Position, at: Timestamp, accuracy: Double = 5) -> JSONValue {
        ["lat": .number(p.lat), "lon": .number(p.lon), "accuracy_m": .number(accuracy), "timestamp": .string(at.rfc3339)]
    }

    static func latLon(_ p: Position) -> JSONValue { ["lat": .number(p.lat), "lon": .number(p.lon)] }
}

extension ManualClock {
    /// Moves the clock on by `seconds` and returns the new time.
    func tick(_ seconds: Double = 10) -> Timestamp {
        advance(seconds: seconds)
        return now()
    }
}

extension TestClientProtocol {
    /// Reports a fix through the API and returns the event types in the answer.
    @discardableResult
    func report(_ token: String, _ p: Position, at: Timestamp) async throws -> [String] {
        let r = try await call(.post, "/v1/me/location", token: token, json: Walk.fix(p, at: at))
        #expect(r.status == .ok, "\(r.text)")
        return (r.json?["events"]?.arrayValue ?? []).compactMap { $0["type"]?.stringValue }
    }

    /// The caller's events (types and data), oldest first.
    func eventList(_ token: String) async throws -> [JSONValue] {
        try await call(.get, "/v1/events?limit=1000", token: token).json?["events"]?.arrayValue ?? []
    }

    func eventTypes(_ token: String, prefix: String = "") async throws -> [String] {
        try await eventList(token).compactMap { $0["type"]?.stringValue }.filter { $0.hasPrefix(prefix) }
    }
}
