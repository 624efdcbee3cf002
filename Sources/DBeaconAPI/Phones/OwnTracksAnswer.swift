import DBeaconCore
package import DBeaconServices
import Foundation

/// The answer to an OwnTracks post: the JSON array of messages the app takes as input (the
/// OwnTracks booklet, `tech/json`), typed. `cmd`s `clearWaypoints` + `setWaypoints` when its
/// regions changed or it left its refresh circle; a `card` and a `location` for each friend;
/// group alerts as that friend's `transition`.
package enum OwnTracksAnswer {
    /// One JSON object written member by member (the caller gives the keys in sorted order):
    /// the brace before the first, commas between, the closing brace at `end`.
    struct ObjectWriter {
        private var started = false
        mutating func key(_ k: StaticString, _ w: inout JSONWriter) {
            w.appendASCII(started ? "," : "{")
            started = true
            w.writeKey(k)
        }
        mutating func string(_ k: StaticString, _ v: String, _ w: inout JSONWriter) { key(k, &w); w.writeString(v) }
        mutating func number(_ k: StaticString, _ v: Double, _ w: inout JSONWriter) { key(k, &w); w.writeNumber(v) }
        mutating func integer(_ k: StaticString, _ v: Int, _ w: inout JSONWriter) { key(k, &w); w.writeInteger(v) }
        func end(_ w: inout JSONWriter) { w.appendASCII(started ? "}" : "{}") }
    }

    /// One message of the answer; each encodes as its own object with its `_type`.
    package enum Message: Encodable, Sendable, Equatable {
        case command(Command)
        case card(Card)
        case location(Location)
        case transition(Transition)

        /// Encodes the message's own struct, so the answer is an array of plain objects, each with
        /// its `_type`.
        package func encode(to encoder: any Encoder) throws {
            switch self {
            case .command(let m): try m.encode(to: encoder)
            case .card(let m): try m.encode(to: encoder)
            case .location(let m): try m.encode(to: encoder)
            case .transition(let m): try m.encode(to: encoder)
            }
        }

        /// The message as `encode(to:)` writes it with sorted keys.
        func write(to w: inout JSONWriter) {
            var o = ObjectWriter()
            switch self {
            case .command(let m):
                o.string("_type", m._type, &w)
                o.string("action", m.action, &w)
                if let list = m.waypoints {
                    o.key("waypoints", &w)
                    var inner = ObjectWriter()
                    inner.string("_type", list._type, &w)
                    inner.key("waypoints", &w)
                    w.appendASCII("[")
                    for (i, p) in list.waypoints.enumerated() {
                        if i > 0 { w.appendASCII(",") }
                        var wp = ObjectWriter()
                        wp.string("_type", p._type, &w)
                        wp.string("desc", p.desc, &w)
                        wp.number("lat", p.lat, &w)
                        wp.number("lon", p.lon, &w)
                        if let major = p.major { wp.integer("major", major, &w) }
                        if let minor = p.minor { wp.integer("minor", minor, &w) }
                        wp.integer("rad", p.rad, &w)
                        wp.string("rid", p.rid, &w)
                        wp.integer("tst", p.tst, &w)
                        if let uuid = p.uuid { wp.string("uuid", uuid, &w) }
                        wp.end(&w)
                    }
                    w.appendASCII("]")
                    inner.end(&w)
                }
            case .card(let m):
                o.string("_type", m._type, &w)
                o.string("name", m.name, &w)
                o.string("tid", m.tid, &w)
            case .location(let m):
                o.string("_type", m._type, &w)
                o.integer("acc", m.acc, &w)
                o.number("lat", m.lat, &w)
                o.number("lon", m.lon, &w)
                o.string("t", m.t, &w)
                o.string("tid", m.tid, &w)
                o.string("topic", m.topic, &w)
                o.integer("tst", m.tst, &w)
            case .transition(let m):
                o.string("_type", m._type, &w)
                o.integer("acc", m.acc, &w)
                o.string("desc", m.desc, &w)
                o.string("event", m.event, &w)
                o.number("lat", m.lat, &w)
                o.number("lon", m.lon, &w)
                o.string("rid", m.rid, &w)
                o.string("t", m.t, &w)
                o.string("tid", m.tid, &w)
                o.string("topic", m.topic, &w)
                o.integer("tst", m.tst, &w)
                o.integer("wtst", m.wtst, &w)
            }
            o.end(&w)
        }
    }

    /// `_type: cmd`: `clearWaypoints`, or `setWaypoints` with the regions to monitor.
    package struct Command: Encodable, Sendable, Equatable {
        var _type = "cmd"
        /// `clearWaypoints` or `setWaypoints`.
        package var action: String
        package var waypoints: Waypoints?
    }

    /// `_type: waypoints`: the list a `setWaypoints` carries.
    package struct Waypoints: Encodable, Sendable, Equatable {
        var _type = "waypoints"
        package var waypoints: [Waypoint]
    }

    /// `_type: waypoint`: a circular region, or an iBeacon region (iOS reads it from `desc`,
    /// `Name:UUID[:major[:minor]]`; `uuid`, `major`, `minor` say it again for Android).
    package struct Waypoint: Encodable, Sendable, Equatable {
        var _type = "waypoint"
        package var desc: String
        package var lat: Double
        package var lon: Double
        /// The circle's radius in whole metres.
        package var rad: Int
        package var tst: Int
        /// The region id DBeacon gave it (`bcn_…`, `reg_…` or `refresh`), which the phone's
        /// transitions name.
        package var rid: String
        package var uuid: String?
        package var major: Int?
        package var minor: Int?
    }

    /// `_type: card`: a friend's name for their tracker id.
    package struct Card: Encodable, Sendable, Equatable {
        var _type = "card"
        package var tid: String
        package var name: String
    }

    /// `_type: location`: a friend's latest position (`t: u`, user-requested, so apps show it).
    package struct Location: Encodable, Sendable, Equatable {
        var _type = "location"
        package var tid: String
        package var lat: Double
        package var lon: Double
        /// The fix's accuracy in whole metres.
        package var acc: Int
        package var tst: Int
        var t = "u"
        package var topic: String
    }

    /// `_type: transition`: a friend entering or leaving a region (`t: c`, a circular region);
    /// here a group alert, the group being the region.
    package struct Transition: Encodable, Sendable, Equatable {
        var _type = "transition"
        package var tid: String
        /// `enter` or `leave`.
        package var event: String
        package var desc: String
        var t = "c"
        package var tst: Int
        package var wtst: Int
        package var rid: String
        package var lat: Double
        package var lon: Double
        package var acc: Int
        package var topic: String
    }

    /// The messages for `answer`.
    package static func messages(_ answer: PhoneAnswer) -> [Message] {
        var out: [Message] = []
        if let waypoints = answer.waypoints {
            out.append(.command(Command(action: "clearWaypoints")))
            out.append(.command(Command(action: "setWaypoints", waypoints: Waypoints(waypoints: waypoints.map(waypoint)))))
        }
        var used = Set<String>()
        var tids: [UserID: (tid: String, friend: PhoneFriend)] = [:]
        for f in answer.friends {
            let tid = trackerID(user: f.user, name: f.name, taken: &used)
            tids[f.user] = (tid, f)
            out.append(.card(Card(tid: tid, name: f.name)))
            out.append(.location(Location(tid: tid, lat: f.location.position.lat, lon: f.location.position.lon,
                                          acc: Int(f.location.accuracyM.rounded()), tst: Int(f.location.fixAt.millis / 1000),
                                          topic: "owntracks/\(f.user.rawValue)/dbeacon")))
        }
        // Group alerts as the friend's transition (the apps show "<friend> leaves <region>"): for
        // members the caller sees on the map (their card and tid were just given) at their
        // position; for a member who left the group (no longer shared), with the tid they had and
        // at the group's place.
        for n in answer.notices {
            let tid: String, position: Position, accuracy: Double
            if let (known, friend) = tids[n.member] {
                (tid, position, accuracy) = (known, friend.location.position, friend.location.accuracyM)
            } else if !n.entered, let place = n.groupLocation {
                (tid, position, accuracy) = (trackerID(user: n.member, name: n.memberName ?? n.member.rawValue, taken: &used), place, 0)
            } else {
                continue
            }
            out.append(.transition(Transition(tid: tid, event: n.entered ? "enter" : "leave", desc: n.group,
                                              tst: Int(n.at.millis / 1000), wtst: PhoneWaypoint.wtst(n.groupID), rid: n.groupID,
                                              lat: position.lat, lon: position.lon, acc: Int(accuracy.rounded()),
                                              topic: "owntracks/\(n.member.rawValue)/dbeacon/event")))
        }
        return out
    }

    /// The answer's bytes: a JSON array of the messages, each object's keys in sorted order
    /// (`_type` sorts first), so the same answer is the same bytes. They are the bytes
    /// `JSONEncoder` writes for the messages' `Encodable` forms with sorted keys and unescaped
    /// slashes (`WireModelTests` holds them equal), written with the house writer: Foundation's
    /// encoder was 6 % of an OwnTracks post.
    package static func encode(_ answer: PhoneAnswer) -> [UInt8] {
        let list = messages(answer)
        var w = JSONWriter(capacity: 64 + 200 * list.count + 220 * (answer.waypoints?.count ?? 0))
        w.appendASCII("[")
        for (i, m) in list.enumerated() {
            if i > 0 { w.appendASCII(",") }
            m.write(to: &w)
        }
        w.appendASCII("]")
        return w.bytes
    }

    /// A region as an OwnTracks waypoint; an iBeacon region's `desc` becomes
    /// `Name:UUID[:major[:minor]]` (colons in the name turned into spaces), the form iOS reads.
    static func waypoint(_ w: PhoneWaypoint) -> Waypoint {
        var out = Waypoint(desc: w.desc, lat: w.center.lat, lon: w.center.lon, rad: w.radiusM, tst: w.wtst, rid: w.rid)
        if let b = w.iBeacon {
            var desc = "\(w.desc.replacingOccurrences(of: ":", with: " ")):\(b.uuid)"
            if let major = b.major {
                desc += ":\(major)"
                if let minor = b.minor { desc += ":\(minor)" }
            }
            out.desc = desc
            out.uuid = b.uuid
            out.major = b.major
            out.minor = b.minor
        }
        return out
    }

    /// Two characters the apps key a friend by (`tid`): the name's first letter and one derived
    /// from the user id, another when taken in this answer.
    static func trackerID(user: UserID, name: String, taken: inout Set<String>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let first = name.uppercased().first(where: { $0.isLetter && $0.isASCII }) ?? "X"
        var h = 0
        for b in user.rawValue.utf8 { h = (h &* 31 &+ Int(b)) & 0x7fff_ffff }
        for k in 0..<alphabet.count * alphabet.count {
            let a = k < alphabet.count ? first : alphabet[(k / alphabet.count) % alphabet.count]
            let tid = String([a, alphabet[(h + k) % alphabet.count]])
            if taken.insert(tid).inserted { return tid }
        }
        return "??"
    }
}
