/// Id of an event (`evt_…`); also the `webhook-id` of its deliveries.
package struct EventID: PrefixedID {
    package static let prefix = "evt_"
    package let rawValue: String
    package init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }
}

/// Something that happened, addressed to one user (CONTRACT.md, "Events and webhooks").
package struct Event: Sendable, Equatable {
    package var id: EventID
    package var type: EventType
    package var createdAt: Timestamp
    package var recipient: UserID
    /// The beacon the event is about, used to check visibility again at delivery.
    package var beacon: BeaconID?
    package var data: JSONObject

    package init(id: EventID = .generate(), type: EventType, createdAt: Timestamp, recipient: UserID, beacon: BeaconID?,
                 data: JSONObject) {
        self.id = id
        self.type = type
        self.createdAt = createdAt
        self.recipient = recipient
        self.beacon = beacon
        self.data = data
    }

    /// `{"id","type","created_at","recipient","data"}`: the event log entry and webhook body.
    package var json: JSONValue {
        .object(JSONObject([
            ("id", .string(id.rawValue)), ("type", .string(type.rawValue)), ("created_at", .string(createdAt.rfc3339)),
            ("recipient", .string(recipient.rawValue)), ("data", .object(data)),
        ]))
    }
}

/// The event types of the contract.
package struct EventType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }
    package var description: String { rawValue }

    package static let entered = EventType(rawValue: "beacon.entered")
    package static let exited = EventType(rawValue: "beacon.exited")
    package static let dwelled = EventType(rawValue: "beacon.dwelled")
    package static let updated = EventType(rawValue: "beacon.updated")
    package static let deleted = EventType(rawValue: "beacon.deleted")
    package static let started = EventType(rawValue: "beacon.started")
    package static let ended = EventType(rawValue: "beacon.ended")
    package static let meetingUpdated = EventType(rawValue: "meeting.updated")
    package static let meetingCancelled = EventType(rawValue: "meeting.cancelled")
    package static let memberJoined = EventType(rawValue: "group.member_joined")
    package static let memberLeft = EventType(rawValue: "group.member_left")
    package static let memberOutOfRange = EventType(rawValue: "group.member_out_of_range")
    package static let memberBackInRange = EventType(rawValue: "group.member_back_in_range")

    package static let all: [EventType] = [
        .entered, .exited, .dwelled, .updated, .deleted, .started, .ended, .meetingUpdated, .meetingCancelled,
        .memberJoined, .memberLeft, .memberOutOfRange, .memberBackInRange,
    ]

    /// Whether a subscription filter (`*`, `beacon.*`, or an exact type) selects this type.
    package func matches(filter: String) -> Bool {
        if filter == "*" || filter == rawValue { return true }
        if filter.hasSuffix(".*") { return rawValue.hasPrefix(String(filter.dropLast())) }
        return false
    }
}
