import ArgumentParser
import DBeaconCore
import DBeaconGeo
import DBeaconApp
import DBeaconHTTP
import DBeaconServices
import NIOHTTP1

/// Runs a service command through the API (the token's user) or on the local database (as
/// `--as USER`, else as the operator), returning the same JSON either way.
func checkPosition(_ lat: Double, _ lon: Double) throws {
    do { _ = try Position.checked(lat: lat, lon: lon, latPath: "--lat", lonPath: "--lon") } catch { throw ValidationError(error.message) }
}

struct MeetingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meeting",
        abstract: "Organize meetings and find the ones around you.",
        subcommands: [Create.self, List.self, Nearby.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a meeting: exact spot, discovery circle, start and end, optional invitees (private).",
            discussion: """
                Example (a private meeting of Anna's for Ben, through the API with Anna's token):
                  dbeacon meeting create --name Lunch --lat 48.7784 --lon 9.18 --radius 200 \\
                    --start 2026-01-01T12:00:00Z --end 2030-01-01T14:00:00Z \\
                    --invitee usr_ben --token demo-token-anna
                """
        )
        @Option(help: "Name of the meeting.") var name: String
        @Option(help: "Description.") var description: String?
        @Option(help: "Latitude of the exact spot.") var lat: Double
        @Option(help: "Longitude of the exact spot.") var lon: Double
        @Option(help: "Radius of the discovery circle in metres.") var radius = 200.0
        @Option(help: "Start (RFC 3339).") var start: String
        @Option(help: "End (RFC 3339).") var end: String
        @Option(name: .customLong("invitee"), parsing: .singleValue, help: "Invited user id (repeatable; makes the meeting private).")
        var invitees: [String] = []
        @Option(name: .customLong("as"), help: "On the local database: the organizer (id or name).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func validate() throws { try checkPosition(lat, lon) }

        func run() async throws {
            try await reportingErrors {
                var body: JSONObject = [
                    "name": .string(name), "location": ["lat": .number(lat), "lon": .number(lon)],
                    "perimeter": ["type": "Circle", "radius_m": .number(radius)], "start": .string(start), "end": .string(end),
                ]
                if let description { body["description"] = .string(description) }
                if !invitees.isEmpty { body["invitees"] = .array(invitees.map(JSONValue.string)) }
                let result = try await target.client(as: asUser).createMeeting(.object(body))
                if target.json { print(result.jsonString); return }
                print("created meeting \(result["id"]?.stringValue ?? "")")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the meetings you organize or attend, soonest first.")
        @Option(name: .customLong("as"), help: "On the local database: whose meetings (id or name).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client(as: asUser).meetings()
                if target.json { print(result.jsonString); return }
                print(Output.table(["ID", "NAME", "START", "END", "PRIVATE"], (result["features"]?.arrayValue ?? []).map { f in
                    let p = f["properties"]
                    return [f["id"]?.stringValue ?? "", p?["name"]?.stringValue ?? "", p?["lifetime"]?["start"]?.stringValue ?? "—",
                            p?["lifetime"]?["end"]?.stringValue ?? "—", p?["visibility"] == .null ? "no" : "yes"]
                }))
            }
        }
    }

    struct Nearby: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Meetings you can find at a point, nearest first.")
        @Option(help: "Latitude.") var lat: Double
        @Option(help: "Longitude.") var lon: Double
        @Option(name: .customLong("as"), help: "On the local database: see what this user sees.") var asUser: String?
        @OptionGroup var target: TargetOptions

        func validate() throws { try checkPosition(lat, lon) }

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client(as: asUser).nearbyMeetings(lat: lat, lon: lon, at: nil)
                if target.json { print(result.jsonString); return }
                print(Output.table(["ID", "NAME", "DISTANCE", "BEARING"], (result["features"]?.arrayValue ?? []).map { f in
                    let p = f["properties"]
                    return [f["id"]?.stringValue ?? "", p?["name"]?.stringValue ?? "", Output.distance(p?["distance_m"]?.numberValue ?? 0),
                            Output.bearing(p?["bearing_deg"]?.numberValue ?? 0)]
                }))
            }
        }
    }
}

struct GroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Tracked groups: who is where, how far from the guide, in range or not.",
        subcommands: [Status.self]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a group: each member's last shared position, its age, distance from the guide and range state.",
            discussion: """
                Without a group id: every group you guide or belong to.
                Examples:
                  dbeacon group status
                  dbeacon group status --as usr_lena --db data/dbeacon.sqlite
                """
        )
        @Argument(help: "Group id (grp_…); without it, each of your groups.") var id: String?
        @Option(name: .customLong("as"), help: "On the local database: view as this member (id or name).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client(as: asUser)
                var groups: [JSONValue] = []
                if let id {
                    groups = [try await client.group(id)]
                } else {
                    for g in try await client.groups()["groups"]?.arrayValue ?? [] {
                        if let gid = g["id"]?.stringValue { groups.append(try await client.group(gid)) }
                    }
                }
                if target.json { print((id == nil ? JSONValue.object(["groups": .array(groups)]) : groups.first ?? .null).jsonString); return }
                if groups.isEmpty { print("no groups: create one with POST /v1/groups, or join one"); return }
                for result in groups {
                    print("\(result["name"]?.stringValue ?? "")  \(result["id"]?.stringValue ?? "")  range "
                          + Output.distance(result["range_m"]?.numberValue ?? 0))
                    print(Output.table(["MEMBER", "ROLE", "DISTANCE", "IN RANGE", "FIX AGE", "STALE"], (result["members"]?.arrayValue ?? []).map { m in
                        [m["name"]?.stringValue ?? "", m["role"]?.stringValue ?? "",
                         m["distance_m"]?.numberValue.map(Output.distance) ?? "—",
                         m["in_range"]?.boolValue.map { $0 ? "yes" : "NO" } ?? "?",
                         m["age_s"]?.numberValue.map { "\(Int($0)) s" } ?? "—", m["stale"]?.boolValue == true ? "stale" : ""]
                    }))
                }
            }
        }
    }
}

struct TourCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tour",
        abstract: "City tours: their places in order and your progress.",
        subcommands: [Show.self]
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a tour's places in order (and your progress if you follow it).",
            discussion: "Example: dbeacon tour show bcn_tour_old_town_walk"
        )
        @Argument(help: "Tour beacon id (bcn_…).") var id: String
        @Option(name: .customLong("as"), help: "On the local database: view as this user (id or name).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client(as: asUser).tour(id)
                if target.json { print(result.jsonString); return }
                let visited = Set((result["progress"]?["visited"]?.arrayValue ?? []).compactMap { $0["beacon"]?.stringValue })
                print(result["tour"]?["properties"]?["name"]?.stringValue ?? "")
                print(Output.table(["ORDER", "PLACE", "ID", "VISITED"], (result["stops"]?.arrayValue ?? []).map { s in
                    let bid = s["beacon"]?["id"]?.stringValue ?? ""
                    return [String(Int(s["order"]?.numberValue ?? 0)), s["beacon"]?["properties"]?["name"]?.stringValue ?? "", bid,
                            visited.contains(bid) ? "yes" : ""]
                }))
            }
        }
    }
}

struct PromoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promo",
        abstract: "Location-based promotions.",
        subcommands: [Pick.self]
    )

    struct Pick: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pick the one promotion to notify you of at a point (Noticon scoring; counts as shown).",
            discussion: """
                Example (as Anna, on the local database):
                  dbeacon promo pick --lat 48.7753 --lon 9.1783 --as usr_anna \\
                    --db data/dbeacon.sqlite
                """
        )
        @Option(help: "Latitude.") var lat: Double
        @Option(help: "Longitude.") var lon: Double
        @Option(name: .customLong("as"), help: "On the local database: the consumer (id or name).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func validate() throws { try checkPosition(lat, lon) }

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client(as: asUser).pickPromotion(lat: lat, lon: lon)
                if target.json { print(result.jsonString); return }
                if result["capped"] == true {
                    print("frequency cap reached; next pick in \(Int(result["retry_after_s"]?.numberValue ?? 0)) s")
                } else if let p = result["promotion"], p != .null {
                    print("\(p["properties"]?["name"]?.stringValue ?? "")  (\(p["id"]?.stringValue ?? ""), score "
                          + "\(Int(result["score"]?.numberValue ?? 0)), \(Int(result["tied"]?.numberValue ?? 0)) tied, "
                          + "\(Output.distance(p["properties"]?["distance_m"]?.numberValue ?? 0)))")
                } else {
                    print("no promotion here")
                }
            }
        }
    }
}
