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
    func reportLocation(lat: Double, lon: Double, accuracy: Double?, asUser: String?) async throws -> JSONValue
    func events(after: String?, limit: Int, asUser: String?) async throws -> JSONValue
    func addWebhook(url: String, events: [String], scope: String?, asUser: String?) async throws -> JSONValue
    func listWebhooks(asUser: String?) async throws -> JSONValue
    func deliveries(webhook: String, limit: Int) async throws -> JSONValue
}

/// Acts directly on the database file, as the operator (who sees every beacon).
struct LocalBackend: Backend {
    let services: AppServices

    static func open(path: String) async throws -> LocalBackend {
        var config = AppConfig()
        config.databasePath = path
        config.followRemoteChanges = false
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

    /// `--as USER` as a principal; the operator when absent.
    func principal(_ asUser: String?) async throws -> Principal {
        guard let asUser else { return .admin }
        return .user(try await resolveUser(asUser))
    }

    func reportLocation(lat: Double, lon: Double, accuracy: Double?, asUser: String?) async throws -> JSONValue {
        guard let asUser else { throw DBeaconError.badRequest("--as USER is required on the local database", path: "as") }
        let user = try await resolveUser(asUser)
        let report = try await services.fences.report(user: user, fixes: [
            LocationFix(position: Position(lon: lon, lat: lat), accuracyM: accuracy ?? 0, timestamp: services.clock.now()),
        ])
        return .object([
            "inside": .array(report.inside.map { .string($0.rawValue) }), "events": .array(report.events.map(\.json)),
            "accepted": .int(report.accepted), "ignored": .int(report.ignored),
        ])
    }

    func events(after: String?, limit: Int, asUser: String?) async throws -> JSONValue {
        let principal = try await principal(asUser)
        var position: Int64?
        if let after {
            if let id = EventID(after) {
                position = try await services.feed.position(after: id, by: principal)
            } else {
                position = Cursor.decode(after)
            }
            guard position != nil else { throw DBeaconError.badRequest("--after must be an event id or a cursor", path: "after") }
        }
        let page = try await services.feed.events(by: principal, after: position, limit: limit)
        return .object(["events": .array(page.items.map(\.json)), "next_cursor": .optional(Cursor.encode(page.next))])
    }

    func addWebhook(url: String, events: [String], scope: String?, asUser: String?) async throws -> JSONValue {
        let w = try await services.webhooks.create(url: url, events: events.isEmpty ? nil : events, scope: scope, description: nil,
                                                   by: try await principal(asUser))
        return .object(["id": .string(w.id), "url": .string(w.url), "scope": .string(w.scope.rawValue),
                        "events": .array(w.events.map(JSONValue.string)), "secret": .string(w.secret)])
    }

    func listWebhooks(asUser: String?) async throws -> JSONValue {
        let list = try await services.webhooks.list(by: try await principal(asUser))
        return .object(["webhooks": .array(list.map { w in
            .object(["id": .string(w.id), "url": .string(w.url), "scope": .string(w.scope.rawValue), "status": .string(w.status.rawValue),
                     "owner": .optional(w.owner?.rawValue), "events": .array(w.events.map(JSONValue.string))])
        })])
    }

    func deliveries(webhook: String, limit: Int) async throws -> JSONValue {
        let page = try await services.webhooks.deliveries(webhook, after: nil, limit: limit, by: .admin)
        return .object(["deliveries": .array(page.items.map { d, attempts in
            .object(["id": .string("dlv_\(d.seq)"), "event_id": .string(d.event.id.rawValue), "event_type": .string(d.event.type.rawValue),
                     "status": .string(d.status.rawValue), "attempts": .int(d.attempts), "last_status_code": .int(d.lastStatusCode),
                     "last_error": .optional(d.lastError),
                     "next_attempt_at": d.status == .pending ? .string(d.nextAttemptAt.rfc3339) : .null])
        })])
    }
}

/// Goes through the HTTP API with a bearer token.
struct RemoteBackend: Backend {
    let baseURL: String
    let token: String

    /// What went wrong reaching the server, and what to try: not the HTTP client's own words.
    static func unreachable(_ baseURL: String, _ error: any Error) -> DBeaconError {
        let text = "\(error)"
        let reason: String
        if text.contains("refused") || text.contains("errno: 111") {
            reason = "connection refused: nothing listens there"
        } else if text.contains("imeout") || text.contains("deadlineExceeded") {
            reason = "no answer in time"
        } else if text.contains("resolve") || text.contains("NXDOMAIN") || text.contains("lookup") {
            reason = "the host name does not resolve"
        } else {
            reason = String(text.prefix(200))
        }
        return DBeaconError(.unavailable, code: "server_unreachable", message: """
            cannot reach the DBeacon server at \(baseURL) (\(reason)). Start one with ./scripts/run.sh (or \
            dbeacon serve), check --server / $DBEACON_SERVER, or work on the database file with --db PATH
            """)
    }

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
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        } catch {
            throw Self.unreachable(baseURL, error)
        }
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

    func noAs(_ asUser: String?) throws {
        if asUser != nil { throw DBeaconError.badRequest("--as only applies to --db; through the API the token decides") }
    }

    func reportLocation(lat: Double, lon: Double, accuracy: Double?, asUser: String?) async throws -> JSONValue {
        try noAs(asUser)
        var fix: JSONObject = ["lat": .number(lat), "lon": .number(lon), "timestamp": .string(Timestamp.now().rfc3339)]
        if let accuracy { fix["accuracy_m"] = .number(accuracy) }
        return try await call(.POST, "/v1/me/location", body: .object(fix)) ?? .null
    }

    func events(after: String?, limit: Int, asUser: String?) async throws -> JSONValue {
        try noAs(asUser)
        var query = [("limit", String(limit))]
        if let after { query.append(("after", after)) }
        return try await call(.GET, "/v1/events", query: query) ?? .null
    }

    func addWebhook(url: String, events: [String], scope: String?, asUser: String?) async throws -> JSONValue {
        try noAs(asUser)
        var body: JSONObject = ["url": .string(url)]
        if !events.isEmpty { body["events"] = .array(events.map(JSONValue.string)) }
        if let scope { body["scope"] = .string(scope) }
        return try await call(.POST, "/v1/webhooks", body: .object(body)) ?? .null
    }

    func listWebhooks(asUser: String?) async throws -> JSONValue {
        try noAs(asUser)
        return try await call(.GET, "/v1/webhooks") ?? .null
    }

    func deliveries(webhook: String, limit: Int) async throws -> JSONValue {
        try await call(.GET, "/v1/webhooks/\(webhook)/deliveries", query: [("limit", String(limit))]) ?? .null
    }
}
