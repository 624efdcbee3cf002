package import DBeaconCore
import Foundation

/// A phone's report that it entered or left one of the regions it monitors (OwnTracks
/// `transition`). The region is named by `rid` (iOS), else by the `wtst` of a waypoint DBeacon
/// gave, else by its `desc`; `position` is where the phone was, if it said.
package struct PhoneTransition: Sendable, Hashable {
    package var entered: Bool
    package var rid: String?
    package var wtst: Int?
    package var desc: String?
    package var position: Position?
    package var accuracyM: Double
    package var at: Timestamp

    package init(entered: Bool, rid: String?, wtst: Int?, desc: String?, position: Position?, accuracyM: Double, at: Timestamp) {
        self.entered = entered
        self.rid = rid
        self.wtst = wtst
        self.desc = desc
        self.position = position
        self.accuracyM = accuracyM
        self.at = at
    }
}

/// What one phone (a user's client) was last told, kept per (user, client) in `phone_states`
/// as JSON: the regions it was given (to read its transitions back and to notice when they
/// change), the refresh circle it must leave to be given new ones, and how far into the event
/// log its group alerts reach. The account export shows it reshaped (`AccountService`).
package struct PhoneState: Codable, Sendable, Equatable {
    /// A region the phone was given: its waypoint `tst`, the region id, the description.
    /// Stored as the triple `[wtst, rid, desc]`.
    package struct Waypoint: Codable, Sendable, Equatable {
        package var wtst: Int
        package var rid: String
        package var desc: String

        package init(wtst: Int, rid: String, desc: String) {
            self.wtst = wtst
            self.rid = rid
            self.desc = desc
        }

        package init(from decoder: any Decoder) throws {
            var c = try decoder.unkeyedContainer()
            wtst = Int(try c.decode(Double.self))
            rid = try c.decode(String.self)
            desc = try c.decode(String.self)
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.unkeyedContainer()
            try c.encode(wtst)
            try c.encode(rid)
            try c.encode(desc)
        }
    }

    /// The regions given, as one string (ids, centres, radii): a change means new waypoints.
    package var signature: String
    package var refreshCenter: Position
    /// Metres; -1 before the phone was given any regions (no circle to be inside).
    package var refreshRadius: Double
    package var waypoints: [Waypoint]
    /// The log position up to which the phone was told of group alerts (nil: not yet started).
    package var events: Int64?
    /// When the regions were last worked out (milliseconds), the newest change under the
    /// refresh circle then (`RegionChanges.stamp`; 0: unknown), and the version of each beacon
    /// given as a region: while the phone stays in its circle, nothing near it changed and these
    /// beacons are as they were, its regions hold without being worked out again. (Keyed by id,
    /// not by the id's string: a post looks each covering beacon up in them, and the strings of
    /// a state shared between threads were a contended reference count each.)
    package var checkedAt: Int64?
    package var stamp: UInt64?
    package var versions: [BeaconID: Int]?

    enum CodingKeys: String, CodingKey {
        case signature, lat, lon, radiusM = "radius_m", waypoints, events, checkedAt = "checked_at", stamp, versions
    }

    package init(signature: String, refreshCenter: Position, refreshRadius: Double, waypoints: [Waypoint], events: Int64? = nil) {
        self.signature = signature
        self.refreshCenter = refreshCenter
        self.refreshRadius = refreshRadius
        self.waypoints = waypoints
        self.events = events
    }

    /// A phone's first post: nothing given yet.
    package static let initial = PhoneState(signature: "", refreshCenter: Position(lon: 0, lat: 0), refreshRadius: -1, waypoints: [])

    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        signature = try c.decode(String.self, forKey: .signature)
        refreshCenter = Position(lon: try c.decode(Double.self, forKey: .lon), lat: try c.decode(Double.self, forKey: .lat))
        refreshRadius = try c.decode(Double.self, forKey: .radiusM)
        waypoints = try c.decodeIfPresent([Waypoint].self, forKey: .waypoints) ?? []
        // Written as a JSON number by earlier versions (possibly with a fraction part).
        events = try c.decodeIfPresent(Double.self, forKey: .events).map { Int64($0) }
        checkedAt = try c.decodeIfPresent(Int64.self, forKey: .checkedAt)
        stamp = try c.decodeIfPresent(UInt64.self, forKey: .stamp)
        // (A key that is no beacon id is kept as one that matches no beacon: the regions are
        // then worked out again.)
        versions = try c.decodeIfPresent([String: Int].self, forKey: .versions).map { stored in
            Dictionary(stored.map { (BeaconID(uncheckedRawValue: $0.key), $0.value) }, uniquingKeysWith: { a, _ in a })
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(signature, forKey: .signature)
        try c.encode(refreshCenter.lat, forKey: .lat)
        try c.encode(refreshCenter.lon, forKey: .lon)
        try c.encode(refreshRadius, forKey: .radiusM)
        try c.encode(waypoints, forKey: .waypoints)
        try c.encode(events, forKey: .events)
        try c.encodeIfPresent(checkedAt, forKey: .checkedAt)
        try c.encodeIfPresent(stamp, forKey: .stamp)
        try c.encodeIfPresent(versions.map { v in Dictionary(uniqueKeysWithValues: v.map { ($0.key.rawValue, $0.value) }) },
                              forKey: .versions)
    }

    /// The region id of the waypoint given with `wtst`, if any.
    package func region(wtst: Int) -> String? { waypoints.first { $0.wtst == wtst }?.rid }

    /// The region id of the waypoint given with description `desc`, if any.
    package func region(desc: String) -> String? { waypoints.first { $0.desc == desc }?.rid }

    /// The stored form: the bytes `JSONEncoder` writes for `encode(to:)` with sorted keys and
    /// unescaped slashes (`WireModelTests` holds them equal), written with the house writer
    /// (Foundation's encoder was 4 % of an OwnTracks post).
    package func encoded() -> String {
        var w = JSONWriter(capacity: 256 + signature.utf8.count + 48 * waypoints.count)
        w.appendASCII("{")
        if let checkedAt {
            w.writeKey("checked_at")
            w.writeInteger(checkedAt)
            w.appendASCII(",")
        }
        w.writeKey("events")
        if let events { w.writeInteger(events) } else { w.appendASCII("null") }
        w.appendASCII(",")
        w.writeKey("lat")
        w.writeNumber(refreshCenter.lat)
        w.appendASCII(",")
        w.writeKey("lon")
        w.writeNumber(refreshCenter.lon)
        w.appendASCII(",")
        w.writeKey("radius_m")
        w.writeNumber(refreshRadius)
        w.appendASCII(",")
        w.writeKey("signature")
        w.writeString(signature)
        if let stamp {
            w.appendASCII(",")
            w.writeKey("stamp")
            w.writeInteger(stamp)
        }
        if let versions {
            w.appendASCII(",")
            w.writeKey("versions")
            w.appendASCII("{")
            // (Ids order as their strings do.)
            for (i, key) in versions.keys.sorted().enumerated() {
                if i > 0 { w.appendASCII(",") }
                key.withUTF8 { w.writeString(utf8: $0) }
                w.appendASCII(":")
                w.writeInteger(versions[key]!)
            }
            w.appendASCII("}")
        }
        w.appendASCII(",")
        w.writeKey("waypoints")
        w.appendASCII("[")
        for (i, p) in waypoints.enumerated() {
            if i > 0 { w.appendASCII(",") }
            w.appendASCII("[")
            w.writeInteger(p.wtst)
            w.appendASCII(",")
            w.writeString(p.rid)
            w.appendASCII(",")
            w.writeString(p.desc)
            w.appendASCII("]")
        }
        w.appendASCII("]}")
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The state as stored; throws when the text is not a phone state. (Read with the house
    /// parser: Foundation's decoder was 9 % of an OwnTracks post.)
    package init(decoding text: String) throws {
        self = try JSONValueDecoder.decode(PhoneState.self, from: text)
    }
}
