import AsyncHTTPClient
import DBeaconCore
import DBeaconGeo
import DBeaconHTTP
import DBeaconServices
import DBeaconStore
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// What the CLI can do, answered with the same JSON the HTTP API returns, either on the
/// local database or through a server.
protocol Backend: Sendable {
    func addUser(name: String) async throws -> JSONValue
    func importFeatures(_ document: JSONValue, owner: String?) async throws -> JSONValue
    func nearby(lat: Double, lon: Double, tags: [String], at: Timestamp?, limit: Int, asUser: String?) async throws -> JSONValue
    func getBeacon(_ id: String) async throws -> JSONValue
    func listBeacons(tags: [String], owner: String?, bbox: String?, limit: Int, cursor: String?) async throws -> JSONValue
    func createBeacon(_ feature: JSONValue, owner: String?) async throws -> JSONValue
    func deleteBeacon(_ id: String) async throws
}

/// Acts directly on the database file, as the operator (who sees every beacon).
struct LocalBackend: Backend {
    let services: AppServices

    static func open(path: String) async throws -> LocalBackend {
        var config = AppConfig()
        config.databasePath = path
        var logger = Logger(label: "dbeacon")
        logger.logLevel = .warning
        return LocalBackend(services: try await AppServices.make(config, logger: logger))
    }

    /// A user given by id or by (unique) name.
    func resolveUser(_ nameOrID: String) async throws -> UserID {
        if let id = UserID(nameOrID), try await services.store.user(id: id) != nil { return id }
        let users = try await services.store.users(named: nameOrID)
        guard let user = users.first else { throw DBeaconError.notFound("user \(nameOrID)") }
        guard users.count == 1 else {
            throw DBeaconError.conflict("several users are named \(nameOrID); use the id")
        }
        return user.id
    }

    func addUser(name: String) async throws -> JSONValue {
        let (user, token) = try await services.auth.createUser(name: name)
        return .object(["id": .string(user.id.rawValue), "name": .string(user.name), "token": .string(token)])
    }

    func importFeatures(_ document: JSONValue, owner: String?) async throws -> JSONValue {
        let beacons: [Beacon]
        if let owner {
            beacons = try await services.beacons.importFeatures(document, owner: try await resolveUser(owner))
        } else {
            beacons = try await services.beacons.importFeatures(document, owner: nil, ownersFromFeatures: true)
        }
        return .object(["imported": .int(beacons.count), "ids": .array(beacons.map { .string($0.id.rawValue) })])
    }

    func nearby(lat: Double, lon: Double, tags: [String], at: Timestamp?, limit: Int, asUser: String?) async throws -> JSONValue {
        var principal = Principal.admin
        if let asUser { principal = .user(try await resolveUser(asUser)) }
        let point = Position(lon: lon, lat: lat)
        guard point.isValid else { throw DBeaconError.invalid("lat", "lat/lon out of range") }
        let results = try await services.beacons.nearby(point: point, tags: tags, at: at, limit: limit, by: principal)
        return try JSONParser.parse(NearbyEncoding.collection(results))
    }

    func getBeacon(_ id: String) async throws -> JSONValue {
        guard let bid = BeaconID(id) else { throw DBeaconError.notFound("beacon \(id)") }
        return BeaconFeatureCodec.encode(try await services.beacons.get(bid, by: .admin))
    }

    func listBeacons(tags: [String], owner: String?, bbox: String?, limit: Int, cursor: String?) async throws -> JSONValue {
        var query = BeaconListQuery(tags: tags, limit: limit, after: try cursor.map {
            guard let c = Cursor.decode($0) else { throw DBeaconError.badRequest("invalid cursor", path: "cursor") }
            return c
        })
        if let owner { query.owner = try await resolveUser(owner) }
        if let bbox {
            let p = bbox.split(separator: ",").compactMap { Double($0) }
            guard p.count == 4 else { throw DBeaconError.badRequest("bbox must be west,south,east,north", path: "bbox") }
            query.bbox = BoundingBox(west: p[0], south: p[1], east: p[2], north: p[3])
        }
        let page = try await services.beacons.list(query, by: .admin)
        return BeaconFeatureCodec.collection(page.items.map(BeaconFeatureCodec.encode), nextCursor: Cursor.encode(page.next),
                                             includeCursor: true)
    }

    func createBeacon(_ feature: JSONValue, owner: String?) async throws -> JSONValue {
        guard let owner else { throw DBeaconError.badRequest("--owner is required on the local database", path: "owner") }
        let draft = try BeaconFeatureCodec.decodeDraft(feature, limits: services.config.limits)
        return BeaconFeatureCodec.encode(try await services.beacons.create(draft, owner: try await resolveUser(owner)))
    }

    func deleteBeacon(_ id: String) async throws {
        guard let bid = BeaconID(id) else { throw DBeaconError.notFound("beacon \(id)") }
        _ = try await services.beacons.delete(bid, ifMatch: nil, by: .admin)
    }
}

/// Goes through the HTTP API with a bearer token.
struct RemoteBackend: Backend {
    let baseURL: String
    let token: String

    func call(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: JSONValue? = nil) async throws -> JSONValue? {
        var components = URLComponents(string: baseURL.hasSuffix("/") ? String(baseURL.dropLast()) + path : baseURL + path)
        if !query.isEmpty { components?.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let url = components?.string else { throw DBeaconError.badRequest("invalid server URL \(baseURL)") }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: JSONWriter.serialize(body)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 256 << 20)
        let json = bytes.readableBytes > 0 ? try? JSONParser.parse(bytes.readableBytesView) : nil
        guard (200..<300).contains(response.status.code) else {
            let error = json?["error"]
            throw DBeaconError(.badRequest, code: error?["code"]?.stringValue ?? "http_\(response.status.code)",
                               message: "HTTP \(response.status.code): \(error?["message"]?.stringValue ?? response.status.reasonPhrase)",
                               path: error?["path"]?.stringValue)
        }
        return json
    }

    func addUser(name: String) async throws -> JSONValue {
        try await call(.POST, "/v1/users", body: .object(["name": .string(name)])) ?? .null
    }

    func importFeatures(_ document: JSONValue, owner: String?) async throws -> JSONValue {
        if owner != nil { throw DBeaconError.badRequest("--owner only applies to --db; through the API the token's user owns the beacons") }
        let features: [JSONValue] = document["type"]?.stringValue == "FeatureCollection" ? (document["features"]?.arrayValue ?? []) : [document]
        var ids: [JSONValue] = []
        for (i, f) in features.enumerated() {
            do {
                let created = try await call(.POST, "/v1/beacons", body: f)
                ids.append(created?["id"] ?? .null)
            } catch var error as DBeaconError {
                error.message = "feature \(i) (after \(ids.count) imported): \(error.message)"
                throw error
            }
        }
        return .object(["imported": .int(ids.count), "ids": .array(ids)])
    }

    func nearby(lat: Double, lon: Double, tags: [String], at: Timestamp?, limit: Int, asUser: String?) async throws -> JSONValue {
        if asUser != nil { throw DBeaconError.badRequest("--as only applies to --db; through the API the token decides") }
        var query = [("lat", String(lat)), ("lon", String(lon)), ("limit", String(limit))]
        query += tags.map { ("tag", $0) }
        if let at { query.append(("at", at.rfc3339)) }
        return try await call(.GET, "/v1/nearby", query: query) ?? .null
    }

    func getBeacon(_ id: String) async throws -> JSONValue {
        try await call(.GET, "/v1/beacons/\(id)") ?? .null
    }

    func listBeacons(tags: [String], owner: String?, bbox: String?, limit: Int, cursor: String?) async throws -> JSONValue {
        var query = [("limit", String(limit))] + tags.map { ("tag", $0) }
        if let owner { query.append(("owner", owner)) }
        if let bbox { query.append(("bbox", bbox)) }
        if let cursor { query.append(("cursor", cursor)) }
        return try await call(.GET, "/v1/beacons", query: query) ?? .null
    }

    func createBeacon(_ feature: JSONValue, owner: String?) async throws -> JSONValue {
        if owner != nil { throw DBeaconError.badRequest("--owner only applies to --db; through the API the token's user owns the beacon") }
        return try await call(.POST, "/v1/beacons", body: feature) ?? .null
    }

    func deleteBeacon(_ id: String) async throws {
        _ = try await call(.DELETE, "/v1/beacons/\(id)")
    }
}
