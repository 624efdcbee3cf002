import ArgumentParser
import DBeaconCore
import DBeaconGeo
import DBeaconApp
import DBeaconHTTP
import DBeaconServices
import DBeaconStore
import Foundation

/// The identity options shared by `registry add`, `registry resolve` and `sighting`.
struct IdentityOptions: ParsableArguments {
    @Option(help: "ibeacon (default), eddystone-uid or altbeacon.") var type: String?
    @Option(help: "iBeacon proximity UUID.") var uuid: String?
    @Option(help: "iBeacon major (0–65535).") var major: Int?
    @Option(help: "iBeacon minor (0–65535).") var minor: Int?
    @Option(help: "Eddystone-UID namespace (20 hex digits).") var namespace: String?
    @Option(help: "Eddystone-UID instance (12 hex digits).") var instance: String?
    @Option(help: "AltBeacon id1 (a UUID).") var id1: String?
    @Option(help: "AltBeacon id2 (0–65535).") var id2: Int?
    @Option(help: "AltBeacon id3 (0–65535).") var id3: Int?

    var isEmpty: Bool { uuid == nil && namespace == nil && id1 == nil }

    /// The identity members as JSON (the type is inferred from which id is given).
    var members: JSONObject {
        var o = JSONObject()
        o["type"] = .string(type ?? (namespace != nil ? "eddystone-uid" : id1 != nil ? "altbeacon" : "ibeacon"))
        if let uuid { o["uuid"] = .string(uuid) }
        if let major { o["major"] = .int(major) }
        if let minor { o["minor"] = .int(minor) }
        if let namespace { o["namespace"] = .string(namespace) }
        if let instance { o["instance"] = .string(instance) }
        if let id1 { o["id1"] = .string(id1) }
        if let id2 { o["id2"] = .int(id2) }
        if let id3 { o["id3"] = .int(id3) }
        return o
    }
}

struct RegistryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registry",
        abstract: "The shared registry of physical BLE beacons (iBeacon, Eddystone-UID, AltBeacon) and their digital beacons.",
        subcommands: [Add.self, List.self, Resolve.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a physical beacon for a digital beacon (through the API: one you own).",
            discussion: """
                Leave out --minor (or --major and --minor) to match every beacon of that major (or UUID).
                Example (as the Markthalle, which owns bcn_markthalle in the sample data):
                  dbeacon registry add --beacon bcn_markthalle \\
                    --uuid f7826da6-4fa2-4e98-8024-bc5b71e0893e --major 100 --minor 9 \\
                    --lat 48.7764 --lon 9.1793 --level 0 --measured-power -59 \\
                    --token demo-token-markthalle
                """
        )
        @Option(help: "The digital beacon (bcn_…) it stands for.") var beacon: String
        @OptionGroup var identity: IdentityOptions
        @Option(parsing: .unconditional, help: "Installed latitude.") var lat: Double?
        @Option(parsing: .unconditional, help: "Installed longitude.") var lon: Double?
        @Option(parsing: .unconditional, help: "Building level (0 = ground).") var level: Int?
        @Option(parsing: .unconditional, help: "RSSI at 1 m in dBm.") var measuredPower: Int?
        @Option(help: "active (default), inactive or decommissioned.") var status: String?
        @OptionGroup var target: TargetOptions

        func validate() throws {
            if identity.isEmpty { throw ValidationError("give --uuid (iBeacon), --namespace and --instance, or --id1") }
            if (lat == nil) != (lon == nil) { throw ValidationError("--lat and --lon go together") }
        }

        func run() async throws {
            try await reportingErrors {
                var body = identity.members
                body["beacon"] = .string(beacon)
                if let lat, let lon {
                    body["position"] = .object(JSONObject([("lat", .number(lat)), ("lon", .number(lon)), ("level", .int(level))]))
                }
                if let measuredPower { body["measured_power"] = .int(measuredPower) }
                if let status { body["status"] = .string(status) }
                let entry = try await target.client().register(.object(body))
                if target.json { print(entry.jsonString); return }
                print("\(entry["id"]?.stringValue ?? "")  →  \(entry["beacon"]?.stringValue ?? "")")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List registry entries (one page).")
        @Option(help: "Only entries of this digital beacon.") var beacon: String?
        @Option(help: "Only entries with this UUID (or AltBeacon id1).") var uuid: String?
        @Option(help: "Only entries with this status.") var status: String?
        @Option(help: "Page size.") var limit = 50
        @Option(help: "Cursor from a previous page.") var cursor: String?
        @OptionGroup var target: TargetOptions

        func run() async throws {
            try await reportingErrors {
                let result = try await target.client().registry(beacon: beacon, uuid: uuid, status: status, limit: limit,
                                                                             cursor: cursor)
                if target.json { print(result.jsonString); return }
                let rows: [[String]] = (result["entries"]?.arrayValue ?? []).map { e in
                    let id: String
                    switch e["type"]?.stringValue {
                    case "eddystone-uid": id = "\(e["namespace"]?.stringValue ?? "")/\(e["instance"]?.stringValue ?? "")"
                    case "altbeacon": id = [e["id1"], e["id2"], e["id3"]].map(Self.part).joined(separator: "/")
                    default: id = [e["uuid"], e["major"], e["minor"]].map(Self.part).joined(separator: "/")
                    }
                    return [e["id"]?.stringValue ?? "", e["type"]?.stringValue ?? "", id, e["beacon"]?.stringValue ?? "",
                            e["status"]?.stringValue ?? ""]
                }
                print(Output.table(["ID", "TYPE", "IDENTITY", "BEACON", "STATUS"], rows))
                if let next = result["next_cursor"]?.stringValue { print("next page: --cursor \(next)") }
            }
        }

        static func part(_ v: JSONValue?) -> String {
            if let s = v?.stringValue { return s }
            if let n = v?.numberValue { return String(Int(n)) }
            return "*"
        }
    }

    struct Resolve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Which digital beacon a physical beacon stands for (the most specific active entry).",
            discussion: """
                Example:
                  dbeacon registry resolve --uuid f7826da6-4fa2-4e98-8024-bc5b71e0893e \\
                    --major 100 --minor 2
                """
        )
        @OptionGroup var identity: IdentityOptions
        @Option(help: "A raw advertisement in hex instead of the identity options.") var adv: String?
        @Option(name: .customLong("as"), help: "On the local database: resolve as this user (default: the operator).") var asUser: String?
        @OptionGroup var target: TargetOptions

        func validate() throws {
            if identity.isEmpty == (adv == nil) { throw ValidationError("give either --adv or the identity (--uuid …)") }
        }

        func run() async throws {
            try await reportingErrors {
                let query: JSONObject = adv.map { ["adv": .string($0)] } ?? identity.members
                let feature = try await target.client(as: asUser).resolve(query)
                if target.json { print(feature.jsonString); return }
                print("\(feature["id"]?.stringValue ?? "")  \(feature["properties"]?["name"]?.stringValue ?? "")")
            }
        }
    }
}

struct SightingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sighting",
        abstract: "Report one sighting of a physical beacon: its digital beacon, distance, proximity and events.",
        discussion: """
            Examples:
              dbeacon sighting --uuid f7826da6-4fa2-4e98-8024-bc5b71e0893e \\
                --major 100 --minor 1 --rssi -70
              dbeacon sighting --rssi -70 \\
                --adv 0201061aff4c000215f7826da64fa24e988024bc5b71e0893e00640001c5
            """
    )
    @OptionGroup var identity: IdentityOptions
    @Option(help: "A raw advertisement in hex instead of the identity options.") var adv: String?
    @Option(parsing: .unconditional, help: "Received signal strength in dBm (-127…0).") var rssi: Int
    @Option(parsing: .unconditional, help: "Calibrated RSSI at 1 m in dBm (default: the registry's).") var txPower: Int?
    @Option(help: "An idempotency key: sending it again returns the first answer.") var batchId: String?
    @Option(name: .customLong("as"), help: "On the local database: the user who sighted the beacon.") var asUser: String?
    @OptionGroup var target: TargetOptions

    func validate() throws {
        if identity.isEmpty == (adv == nil) { throw ValidationError("give either --adv or the identity (--uuid --major --minor)") }
    }

    func run() async throws {
        try await reportingErrors {
            var item: JSONObject = adv.map { ["adv": .string($0)] } ?? identity.members
            item["rssi"] = .int(rssi)
            if let txPower { item["tx_power"] = .int(txPower) }
            // No timestamp: the server stamps the sighting with its own clock.
            var body: JSONObject = ["sightings": [.object(item)]]
            if let batchId { body["batch_id"] = .string(batchId) }
            if !target.isRemote && asUser == nil {
                throw DBeaconError.badRequest("--as USER is required on the database file: who saw it?", path: "as")
            }
            let result = try await target.client(as: asUser).reportSightings(.object(body))
            if target.json { print(result.jsonString); return }
            for r in result["results"]?.arrayValue ?? [] {
                if let error = r["error"], !error.isNull, r["beacon"]?.isNull != false {
                    print("\(error["code"]?.stringValue ?? "error"): \(error["message"]?.stringValue ?? "")")
                }
                if let b = r["beacon"], !b.isNull {
                    print("\(b["id"]?.stringValue ?? "")  \(b["properties"]?["name"]?.stringValue ?? "")")
                }
                let distance = r["distance_m"]?.numberValue.map { String(format: "%.1f m", $0) } ?? "—"
                print("distance: \(distance)  proximity: \(r["proximity"]?.stringValue ?? "—")")
            }
            for e in result["events"]?.arrayValue ?? [] {
                print("\(e["type"]?.stringValue ?? "")  \(e["data"]?["name"]?.stringValue ?? "")  \(e["data"]?["beacon"]?.stringValue ?? "")")
            }
        }
    }
}
