import ArgumentParser
import DBeaconCore
import DBeaconGeo
import DBeaconApp
import DBeaconHTTP
import DBeaconKit
import DBeaconServices
import Foundation

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
                func instant(_ text: String, _ field: String) throws -> Date {
                    guard let t = Timestamp(rfc3339: text) else {
                        throw DBeaconError.invalid(field, "--\(field) must be an RFC 3339 timestamp, e.g. 2026-11-21T12:00:00Z",
                                                   code: "invalid_timestamp")
                    }
                    return t.date
                }
                let body = Components.Schemas.MeetingCreate(
                    name: name, description: description, location: .init(lat: lat, lon: lon),
                    perimeter: .circle(.init(_type: .circle, radiusM: radius)),
                    start: try instant(start, "start"), end: try instant(end, "end"),
                    invitees: invitees.isEmpty ? nil : invitees)
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.createMeeting(body: .json(body)).created.body.json }
                if target.printedJSON(client) { return }
                print("created meeting \(result.id)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the meetings you organize or attend, soonest first.")
        @Option(name: .customLong("as"), help: "On the local database: whose meetings (id or name).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.listMyMeetings().ok.body.json }
                if target.printedJSON(client) { return }
                print(Output.table(["ID", "NAME", "START", "END", "PRIVATE"], result.features.map { f in
                    let p = f.properties.value1
                    return [f.id, p.name, Output.time(p.lifetime?.start), Output.time(p.lifetime?.end), p.visibility == nil ? "no" : "yes"]
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
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.nearbyMeetings(query: .init(lat: lat, lon: lon)).ok.body.json }
                if target.printedJSON(client) { return }
                print(Output.table(["ID", "NAME", "DISTANCE", "BEARING"], result.features.map { f in
                    let p = f.properties
                    return [f.id, p.value1.name, Output.distance(p.value2.distanceM), Output.bearing(p.value2.bearingDeg)]
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
                // Each group as the API answered it (for --json) and as its schema reads it.
                var groups: [(answer: JSONValue, group: Components.Schemas.Group)] = []
                func fetch(_ gid: String) async throws {
                    let group = try await client.call { try await $0.getGroup(path: .init(id: gid)).ok.body.json }
                    groups.append((client.answerJSON, group))
                }
                if let id {
                    try await fetch(id)
                } else {
                    for g in try await client.call({ try await $0.listMyGroups().ok.body.json }).groups { try await fetch(g.id) }
                }
                if target.json {
                    print((id == nil ? JSONValue.object(["groups": .array(groups.map(\.answer))]) : groups.first?.answer ?? .null).jsonString)
                    return
                }
                if groups.isEmpty { print("no groups: create one with POST /v1/groups, or join one"); return }
                for (_, group) in groups {
                    print("\(group.name)  \(group.id)  range " + Output.distance(group.rangeM))
                    print(Output.table(["MEMBER", "ROLE", "DISTANCE", "IN RANGE", "FIX AGE", "STALE"], group.members.map { m in
                        [m.name, m.role.rawValue, m.distanceM.map(Output.distance) ?? "—", m.inRange.map { $0 ? "yes" : "NO" } ?? "?",
                         m.ageS.map { "\(Int($0)) s" } ?? "—", m.stale ? "stale" : ""]
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
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.getTour(path: .init(id: id)).ok.body.json }
                if target.printedJSON(client) { return }
                let visited = Set((result.progress?.visited ?? []).map(\.beacon))
                print(result.tour.properties.value1.name)
                print(Output.table(["ORDER", "PLACE", "ID", "VISITED"], result.stops.map { s in
                    [String(s.order), s.beacon.properties.value1.name, s.beacon.id, visited.contains(s.beacon.id) ? "yes" : ""]
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
                let client = try await target.client(as: asUser)
                let result = try await client.call { try await $0.pickPromotion(query: .init(lat: lat, lon: lon)).ok.body.json }
                if target.printedJSON(client) { return }
                if result.capped {
                    print("frequency cap reached; next pick in \(result.retryAfterS ?? 0) s")
                } else if let p = result.promotion?.value1 {
                    print("\(p.properties.value1.name)  (\(p.id), score \(result.score ?? 0), \(result.tied) tied, "
                          + "\(Output.distance(p.properties.value2.distanceM)))")
                } else {
                    print("no promotion here")
                }
            }
        }
    }
}
