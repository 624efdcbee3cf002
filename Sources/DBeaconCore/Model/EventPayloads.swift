/// The data of the group tracking events (`group.member_joined`, `group.member_left`,
/// `group.member_out_of_range`, `group.member_back_in_range`): the group, its beacon and name,
/// and the member, then what the type adds (`guide`, `distance_m`, `range_m`, `at`, `stale`,
/// `reason`). Written and read through this type, never by string keys.
package struct GroupMemberEventData: Sendable, Equatable {
    package var group: GroupID
    package var beacon: BeaconID
    /// The group's name.
    package var name: String
    /// The member; nil when an erased account left (the notice does not name them).
    package var member: UserID?
    package var memberName: String?
    /// The members the type adds, in order.
    package var extra: JSONObject

    package init(group: GroupID, beacon: BeaconID, name: String, member: UserID?, memberName: String?, extra: JSONObject = JSONObject()) {
        self.group = group
        self.beacon = beacon
        self.name = name
        self.member = member
        self.memberName = memberName
        self.extra = extra
    }

    /// Reads an event's data; nil when it is not a group member event's.
    package init?(_ data: JSONObject) {
        guard let group = data["group"]?.stringValue, let beacon = data["beacon"]?.stringValue,
              let name = data["name"]?.stringValue else { return nil }
        self.group = GroupID(uncheckedRawValue: group)
        self.beacon = BeaconID(uncheckedRawValue: beacon)
        self.name = name
        member = data["member"]?.stringValue.map(UserID.init(uncheckedRawValue:))
        memberName = data["member_name"]?.stringValue
        var rest = data
        for key in Self.ownKeys { rest[key] = nil }
        extra = rest
    }

    static let ownKeys = ["group", "beacon", "name", "member", "member_name"]

    /// The event's `data`: `group`, `beacon`, `name`, `member`, `member_name` (null for an
    /// erased member), then the extra members.
    package var json: JSONObject {
        var o = JSONObject([
            ("group", .string(group.rawValue)), ("beacon", .string(beacon.rawValue)), ("name", .string(name)),
            ("member", member.map { .string($0.rawValue) } ?? .null), ("member_name", memberName.map(JSONValue.string) ?? .null),
        ])
        for (k, v) in extra.members { o[k] = v }
        return o
    }
}

extension Event {
    /// The data of a group member event, typed; nil for other types.
    package var groupMember: GroupMemberEventData? {
        switch type {
        case .memberJoined, .memberLeft, .memberOutOfRange, .memberBackInRange: return GroupMemberEventData(data)
        default: return nil
        }
    }

    /// When what the event reports happened (`data.at`: a fix's time for fence events), if it says.
    package var occurredAt: Timestamp? {
        data["at"]?.stringValue.flatMap(Timestamp.init(rfc3339:))
    }

    /// Why a `beacon.exited` happened (`data.reason`: `left`, `ended`, `unavailable`, …).
    package var reason: String? {
        data["reason"]?.stringValue
    }
}
