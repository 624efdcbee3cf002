import ArgumentParser
import DBeaconCore
import DBeaconGeo
import DBeaconHTTP
import DBeaconServices
import DBeaconStore
import Foundation

/// What the registry and sighting commands need, on the local database or through the API.
protocol RegistryBackend: Sendable {
    func registerPhysical(_ body: JSONValue) async throws -> JSONValue
    func listRegistry(beacon: String?, uuid: String?, status: String?, limit: Int, cursor: String?) async throws -> JSONValue
    /// `identity`: the members of an identity (`type`, `uuid`, `major`, …) or `{"adv": hex}`.
    func resolvePhysical(_ identity: JSONObject, asUser: String?) async throws -> JSONValue
    func reportSightings(_ body: JSONValue, asUser: String?) async throws -> JSONValue
}

extension TargetOptions {
    /// The registry backend these options select.
    func registryBackend() async throws -> any RegistryBackend {
        if db == nil, let url = serverURL, let token = bearer { return RemoteBackend(baseURL: url, token: token) }
        return try await LocalBackend.open(path: databasePath)
    }
}

extension LocalBackend: RegistryBackend {
    func registerPhysical(_ body: JSONValue) async throws -> JSONValue {
        RegistryCodec.encode(try await services.registry.register(try RegistryCodec.decodeDraft(body), by: .admin))
    }

    func listRegistry(beacon: String?, uuid: String?, status: String?, limit: Int, cursor: String?) async throws -> JSONValue {
        var query = RegistryListQuery(limit: limit)
        if let cursor {
            guard let c = Cursor.decode(cursor) else { throw DBeaconError.badRequest("invalid cursor", path: "cursor") }
            query.after = c
        }
        if let beacon {
            guard let id = BeaconID(beacon) else { throw DBeaconError.badRequest("--beacon must be a beacon id", path: "beacon") }
            query.beacon = id
        }
        if let uuid {
            guard let u = PhysicalBeaconIdentity.normalizedUUID(uuid) else { throw DBeaconError.badRequest("--uuid is not a UUID", path: "uuid") }
            query.id1 = u
        }
        if let status {
            guard let s = RegistryEntry.Status(rawValue: status) else {
                throw DBeaconError.badRequest("--status must be active, inactive or decommissioned", path: "status")
            }
            query.status = s
        }
        let page = try await services.registry.list(query, by: .admin)
        return .object(["entries": .array(page.items.map(RegistryCodec.encode)), "next_cursor": .optional(Cursor.encode(page.next))])
    }

    func resolvePhysical(_ identity: JSONObject, asUser: String?) async throws -> JSONValue {
        let parsed: PhysicalBeaconIdentity
        if let adv = identity["adv"]?.stringValue {
            switch BeaconFrameParser.parse(hex: adv) {
            case .success(let frame): parsed = frame.identity
            case .failure(let e): throw DBeaconError.invalid("adv", e.message, code: e.code)
            }
        } else {
            parsed = try RegistryCodec.decodeIdentity(try ObjectReader(.object(identity)), concrete: false)
        }
        let r = try await services.registry.resolve(parsed, by: try await principal(asUser))
        return BeaconFeatureCodec.encode(r.beacon)
    }

    func reportSightings(_ body: JSONValue, asUser: String?) async throws -> JSONValue {
        guard let asUser else { throw DBeaconError.badRequest("--as USER is required on the local database", path: "as") }
        return try await services.sightings.process(body, user: try await resolveUser(asUser))
    }
}

extension RemoteBackend: RegistryBackend {
    func registerPhysical(_ body: JSONValue) async throws -> JSONValue {
        try await call(.POST, "/v1/registry", body: body) ?? .null
    }

    func listRegistry(beacon: String?, uuid: String?, status: String?, limit: Int, cursor: String?) async throws -> JSONValue {
        var query = [("limit", String(limit))]
        if let beacon { query.append(("beacon", beacon)) }
        if let uuid { query.append(("uuid", uuid)) }
        if let status { query.append(("status", status)) }
        if let cursor { query.append(("cursor", cursor)) }
        return try await call(.GET, "/v1/registry", query: query) ?? .null
    }

    func resolvePhysical(_ identity: JSONObject, asUser: String?) async throws -> JSONValue {
        try noAs(asUser)
        let query: [(String, String)] = identity.members.compactMap { m in
            if let s = m.value.stringValue { return (m.key, s) }
            if let n = m.value.numberValue { return (m.key, String(Int(n))) }
            return nil
        }
        return try await call(.GET, "/v1/registry/resolve", query: query) ?? .null
    }

    func reportSightings(_ body: JSONValue, asUser: String?) async throws -> JSONValue {
        try noAs(asUser)
        return try await call(.POST, "/v1/sightings", body: body) ?? .null
    }
}

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
                let entry = try await target.registryBackend().registerPhysical(.object(body))
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
                let result = try await target.registryBackend().listRegistry(beacon: beacon, uuid: uuid, status: status, limit: limit,
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
                let feature = try await target.registryBackend().resolvePhysical(query, asUser: asUser)
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
            let result = try await target.registryBackend().reportSightings(.object(body), asUser: asUser)
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
