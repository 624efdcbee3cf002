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

    /// A new beacon with a category (tag) the recipient follows, near their last location.
    package static let created = EventType(rawValue: "beacon.created")
    package static let entered = EventType(rawValue: "beacon.entered")
    package static let exited = EventType(rawValue: "beacon.exited")
    package static let dwelled = EventType(rawValue: "beacon.dwelled")
    package static let updated = EventType(rawValue: "beacon.updated")
    package static let deleted = EventType(rawValue: "beacon.deleted")
    package static let started = EventType(rawValue: "beacon.started")
    package static let ended = EventType(rawValue: "beacon.ended")
    package static let meetingUpdated = EventType(rawValue: "meeting.updated")
    package static let meetingCancelled = EventType(rawValue: "meeting.cancelled")
    /// The recipient was added to a private meeting's invitees.
    package static let meetingInvited = EventType(rawValue: "meeting.invited")
    /// The recipient was taken off a private meeting's invitees (and no longer attends it).
    package static let meetingUninvited = EventType(rawValue: "meeting.uninvited")
    /// A meeting the recipient is invited to or attends starts soon (the reminder lead time).
    package static let meetingStarting = EventType(rawValue: "meeting.starting")
    package static let memberJoined = EventType(rawValue: "group.member_joined")
    package static let memberLeft = EventType(rawValue: "group.member_left")
    package static let memberOutOfRange = EventType(rawValue: "group.member_out_of_range")
    package static let memberBackInRange = EventType(rawValue: "group.member_back_in_range")

    package static let all: [EventType] = [
        .created, .entered, .exited, .dwelled, .updated, .deleted, .started, .ended, .meetingUpdated, .meetingCancelled,
        .meetingInvited, .meetingUninvited, .meetingStarting, .memberJoined, .memberLeft, .memberOutOfRange, .memberBackInRange,
    ]

    /// Whether a subscription filter (`*`, `beacon.*`, or an exact type) selects this type.
    package func matches(filter: String) -> Bool {
        if filter == "*" || filter == rawValue { return true }
        if filter.hasSuffix(".*") { return rawValue.hasPrefix(String(filter.dropLast())) }
        return false
    }
}

extension Event {
    /// Whether this event tells its recipient that they lost sight of its beacon (the beacon
    /// was deleted or cancelled, they were un-invited or removed from its group, or they were
    /// exited because it became unavailable to them). Such notices stay readable and
    /// deliverable after the access is gone; every other event about a beacon needs the
    /// recipient to still be its owner or in its visibility group.
    package var isAccessLossNotice: Bool {
        switch type {
        case .deleted, .meetingCancelled, .meetingUninvited:
            return true
        case .memberLeft:
            return groupMember?.member == recipient
        case .exited:
            return reason == "unavailable"
        default:
            return false
        }
    }

    /// The rule for reading and delivering events, applied as of now: events about no beacon
    /// are always readable; otherwise `beacon` (its current state, nil when it no longer exists)
    /// must still be the recipient's or shared with them, unless the event is the notice of
    /// losing it. Lifetimes do not matter: a follower may read what happened while it was alive.
    package func isReadable(givenBeacon beacon: Beacon?) -> Bool {
        guard self.beacon != nil else { return true }
        if isAccessLossNotice { return true }
        guard let beacon else { return false }
        return beacon.allows(.lossNotice, to: .user(recipient), at: createdAt)
    }
}
