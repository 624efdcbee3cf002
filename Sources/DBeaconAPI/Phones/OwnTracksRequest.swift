package import DBeaconCore
package import DBeaconServices

/// One message an OwnTracks app posts in HTTP mode (the OwnTracks booklet, `tech/json`).
package enum OwnTracksMessage: Sendable {
    /// `_type: location`: a fix (`lat`, `lon`, `acc`, `tst`).
    case location(LocationFix)
    /// `_type: transition`: the phone entered or left one of its monitored regions.
    case transition(PhoneTransition)
    /// `_type: beacon` (iOS ranging): an iBeacon heard (`uuid`, `major`, `minor`, `rssi`).
    case beacon(SightingInput)
    /// A message the service does not act on (`lwt`, `status`, `card`, `waypoint(s)`, `steps`,
    /// `cmd`, …, or any unknown `_type`), or one too old or too far in the future to act on:
    /// accepted and left alone.
    case ignored(String)
}

/// The body of `POST /v1/owntracks`: one message, an array of messages, or nothing.
package enum OwnTracksRequest {
    /// Messages one post may carry; a longer array is 422 `too_many_items`.
    package static let maxMessages = 1_000

    /// The messages of a post in order: one message, an array of them, or none for an empty body.
    package static func decode(_ body: JSONValue?, now: Timestamp, config: FenceConfig) throws(DBeaconError) -> [OwnTracksMessage] {
        guard let body else { return [] }
        if let list = body.arrayValue {
            guard list.count <= maxMessages else {
                throw DBeaconError.invalid("", "at most \(maxMessages) messages per request", code: "too_many_items")
            }
            var messages: [OwnTracksMessage] = []
            for (i, item) in list.enumerated() { messages.append(try message(item, path: "[\(i)]", now: now, config: config)) }
            return messages
        }
        return [try message(body, path: "", now: now, config: config)]
    }

    /// One message by its `_type`: `location`, `transition` and `beacon` are read and checked (422
    /// for a malformed one); any other type, one with nothing to act on (a location with a negative
    /// `acc`, a beacon without a negative `rssi`), or one whose time the fence engine would not
    /// take, is `.ignored`.
    static func message(_ value: JSONValue, path: String, now: Timestamp, config: FenceConfig) throws(DBeaconError) -> OwnTracksMessage {
        let m = try ObjectReader(value, path: path)
        let type = try m.string("_type", maxLength: 40)
        switch type {
        case "location":
            // A negative `acc` is how iOS marks a position that is not a fix: left alone.
            if let acc = try m.optionalNumber("acc"), acc < 0 { return .ignored("location (not a fix: negative acc)") }
            let (position, accuracy) = try where_(m, required: true)
            guard let at = try time(m, "tst", now: now, config: config) else { return .ignored("location (timestamp out of range)") }
            return .location(LocationFix(position: position!, accuracyM: accuracy, timestamp: at))
        case "transition":
            let event = try m.string("event", maxLength: 10)
            guard event == "enter" || event == "leave" else {
                throw DBeaconError.invalid(m.path("event"), "event is enter or leave", code: "invalid_value")
            }
            let (position, accuracy) = try where_(m, required: false)
            guard let at = try time(m, "tst", now: now, config: config) else { return .ignored("transition (timestamp out of range)") }
            return .transition(PhoneTransition(entered: event == "enter", rid: try m.optionalString("rid", maxLength: 100),
                                               wtst: try m.optionalInt("wtst"), desc: try m.optionalString("desc", maxLength: 200),
                                               position: position, accuracyM: accuracy, at: at))
        case "beacon":
            let uuid = try m.string("uuid", maxLength: 40)
            let hex = uuid.lowercased().filter { $0 != "-" }
            guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else {
                throw DBeaconError.invalid(m.path("uuid"), "uuid is an iBeacon proximity UUID", code: "invalid_value")
            }
            let major = try m.int("major", range: 0...65_535), minor = try m.int("minor", range: 0...65_535)
            let rssi = try m.optionalInt("rssi", range: -150...20) ?? 0
            // iOS reports 0 for a beacon it could not range: no distance, nothing to resolve.
            guard rssi < 0 else { return .ignored("beacon (no rssi)") }
            guard let at = try time(m, "tst", now: now, config: config) else { return .ignored("beacon (timestamp out of range)") }
            return .beacon(SightingInput(identity: PhysicalBeaconIdentity(kind: .iBeacon, id1: hex, id2: major, id3: minor),
                                         rssi: rssi, txPower: nil, frameMeasuredPower: nil, timestamp: at))
        default:
            return .ignored(type)
        }
    }

    /// `lat`/`lon` (checked) and `acc` (metres, negative meaning unknown: 0).
    private static func where_(_ m: ObjectReader, required: Bool) throws(DBeaconError) -> (Position?, Double) {
        var position: Position?
        if required || m.has("lat") || m.has("lon") {
            position = try Position.checked(lat: try m.number("lat"), lon: try m.number("lon"), latPath: m.path("lat"), lonPath: m.path("lon"))
        }
        let accuracy = try FenceConfig.accuracy(try m.optionalNumber("acc"), path: m.path("acc"), strict: false)
        return (position, accuracy)
    }

    /// `tst` (UNIX seconds) as a timestamp, now when absent; nil when it is older than the
    /// fence engine accepts (a phone sending what it queued offline) or too far ahead.
    private static func time(_ m: ObjectReader, _ key: String, now: Timestamp, config: FenceConfig) throws(DBeaconError) -> Timestamp? {
        guard let seconds = try m.optionalNumber(key) else { return now }
        guard seconds.isFinite, seconds >= 0, seconds < 32_503_680_000 else {
            throw DBeaconError.invalid(m.path(key), "\(key) is UNIX seconds", code: "invalid_value")
        }
        let at = Timestamp(millis: Int64((seconds * 1000).rounded()))
        guard config.accepts(time: at, now: now) else { return nil }
        return at
    }
}
