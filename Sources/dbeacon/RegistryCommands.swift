import ArgumentParser
import DBeaconCore
import DBeaconGeo
import DBeaconApp
import DBeaconHTTP
import DBeaconServices
import DBeaconKit
import DBeaconStore
import Foundation
import OpenAPIRuntime

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

    /// The frame type: `--type`, else inferred from which id is given.
    var frameType: String { type ?? (namespace != nil ? "eddystone-uid" : id1 != nil ? "altbeacon" : "ibeacon") }

    /// The identity members as a sighting item carries them.
    var members: [String: (any Sendable)?] {
        var o: [String: (any Sendable)?] = ["type": frameType]
        if let uuid { o["uuid"] = uuid }
        if let major { o["major"] = major }
        if let minor { o["minor"] = minor }
        if let namespace { o["namespace"] = namespace }
        if let instance { o["instance"] = instance }
        if let id1 { o["id1"] = id1 }
        if let id2 { o["id2"] = id2 }
        if let id3 { o["id3"] = id3 }
        return o
    }

    /// A registry entry of this identity (a member the type needs and was not given is sent
    /// empty, so the server names it).
    func entry(_ common: Components.Schemas.RegistryCommon) throws -> Components.Schemas.RegistryEntryCreate {
        switch frameType {
        case "ibeacon":
            return .ibeacon(.init(value1: common, value2: .init(_type: .ibeacon, uuid: uuid ?? "", major: major, minor: minor)))
        case "eddystone-uid":
            return .eddystoneUid(.init(value1: common, value2: .init(_type: .eddystoneUid, namespace: namespace ?? "", instance: instance ?? "")))
        case "altbeacon":
            return .altbeacon(.init(value1: common, value2: .init(_type: .altbeacon, id1: id1 ?? "", id2: id2, id3: id3)))
        default:
            throw DBeaconError.invalid("type", "--type must be ibeacon, eddystone-uid or altbeacon")
        }
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
                let common = Components.Schemas.RegistryCommon(
                    beacon: beacon,
                    position: lat.flatMap { lat in lon.map { .init(lat: lat, lon: $0, level: level) } },
                    measuredPower: measuredPower,
                    status: try status.map { value in
                        guard let s = Components.Schemas.RegistryCommon.StatusPayload(rawValue: value) else {
                            throw DBeaconError.invalid("status", "--status must be active, inactive or decommissioned")
                        }
                        return s
                    })
                let body = try identity.entry(common)
                let client = try await target.client()
                let entry = try await client.call { try await $0.registerPhysicalBeacon(body: .json(body)).created.body.json }
                if target.printedJSON(client) { return }
                print("\(entry.id)  →  \(entry.beacon)")
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
                let statusFilter = try status.map { value in
                    guard let s = Operations.ListRegistryEntries.Input.Query.StatusPayload(rawValue: value) else {
                        throw DBeaconError.invalid("status", "--status must be active, inactive or decommissioned")
                    }
                    return s
                }
                let client = try await target.client()
                let result = try await client.call {
                    try await $0.listRegistryEntries(query: .init(beacon: beacon, uuid: uuid, status: statusFilter, limit: limit, cursor: cursor))
                        .ok.body.json
                }
                if target.printedJSON(client) { return }
                let rows: [[String]] = result.entries.map { e in
                    let id: String
                    switch e._type {
                    case .eddystoneUid: id = "\(e.namespace ?? "")/\(e.instance ?? "")"
                    case .altbeacon: id = [e.id1 ?? "*", Self.part(e.id2), Self.part(e.id3)].joined(separator: "/")
                    case .ibeacon: id = [e.uuid ?? "*", Self.part(e.major), Self.part(e.minor)].joined(separator: "/")
                    }
                    return [e.id, e._type.rawValue, id, e.beacon, e.status.rawValue]
                }
                print(Output.table(["ID", "TYPE", "IDENTITY", "BEACON", "STATUS"], rows))
                if let next = result.nextCursor { print("next page: --cursor \(next)") }
            }
        }

        /// A number of an identity, `*` for any.
        static func part(_ value: Int?) -> String { value.map(String.init) ?? "*" }
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
                var query = Operations.ResolvePhysicalBeacon.Input.Query(adv: adv)
                if adv == nil {
                    guard let type = Operations.ResolvePhysicalBeacon.Input.Query._TypePayload(rawValue: identity.frameType) else {
                        throw DBeaconError.invalid("type", "--type must be ibeacon, eddystone-uid or altbeacon")
                    }
                    query = .init(uuid: identity.uuid, major: identity.major, minor: identity.minor, _type: type,
                                  namespace: identity.namespace, instance: identity.instance,
                                  id1: identity.id1, id2: identity.id2, id3: identity.id3)
                }
                let client = try await target.client(as: asUser)
                let feature = try await client.call { try await $0.resolvePhysicalBeacon(query: query).ok.body.json }
                if target.printedJSON(client) { return }
                print("\(feature.id)  \(feature.properties.value1.name)")
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
            // An item is an identity or a raw advertisement (the document leaves its schema open).
            var item: [String: (any Sendable)?] = adv.map { ["adv": $0] } ?? identity.members
            item["rssi"] = rssi
            if let txPower { item["tx_power"] = txPower }
            // No timestamp: the server stamps the sighting with its own clock.
            let body = Components.Schemas.SightingBatch(batchId: batchId, sightings: [try OpenAPIValueContainer(unvalidatedValue: item)])
            if !target.isRemote && asUser == nil {
                throw DBeaconError.badRequest("--as USER is required on the database file: who saw it?", path: "as")
            }
            let client = try await target.client(as: asUser)
            let result = try await client.call { try await $0.postSightings(body: .json(body)).ok.body.json }
            if target.printedJSON(client) { return }
            for r in result.results {
                if let error = r.error, r.beacon == nil { print("\(error.code): \(error.message)") }
                if let b = r.beacon { print("\(b.id)  \(b.properties.value1.name)") }
                let distance = r.distanceM.map { String(format: "%.1f m", $0) } ?? "—"
                print("distance: \(distance)  proximity: \(r.proximity?.rawValue ?? "—")")
            }
            for e in result.events { print(Output.line(e)) }
        }
    }
}
