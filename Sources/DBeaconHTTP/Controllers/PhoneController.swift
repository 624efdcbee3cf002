import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Foundation
import Hummingbird

/// Phone apps that speak their own protocols: OwnTracks in HTTP mode (`POST /v1/owntracks`,
/// HTTP Basic with the user's id or name and a device or user token) and Traccar Client /
/// OsmAnd (`GET|POST /v1/osmand`, the device token as the device identifier).
struct PhoneController {
    /// Runs OwnTracks and OsmAnd reports through the fence engine and the registry, and builds
    /// OwnTracks answers.
    let phones: PhoneService
    /// Authenticates the OsmAnd device identifier, which arrives as a query or body field, not as a
    /// header.
    let auth: AuthService
    /// Counts fixes per user (`fixes`) and bad OsmAnd identifiers per client address
    /// (`authFailures`).
    let limiter: RateLimiter
    /// The `now` that fixes are judged against (the fence engine's accepted window).
    let clock: any WallClock
    /// Bodies of OwnTracks and OsmAnd posts may be this large; beyond, 413 `body_too_large`.
    let maxBodyBytes: Int

    /// Registers `POST /v1/owntracks` on the authenticated `/v1` group (`AuthMiddleware` takes HTTP
    /// Basic as OwnTracks sends it).
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("owntracks", use: ownTracks)
    }

    /// OsmAnd has no Authorization header: the device token is the device identifier.
    func addUnauthenticatedRoutes(to router: Router<AppRequestContext>) {
        router.get("v1/osmand", use: osmAnd)
        router.post("v1/osmand", use: osmAnd)
    }

    // MARK: OwnTracks

    /// One OwnTracks message (or an array of them, or an empty body); the answer is the JSON
    /// array of messages the app takes as input: `cmd`s `clearWaypoints` + `setWaypoints` when
    /// its regions change or it left its refresh circle, a `card` and a `location` for each
    /// friend (members of the caller's groups where group status shows them), and group
    /// alerts since the phone's last post as that friend's `transition` (out of range: leave,
    /// back in range: enter; joining and leaving the group likewise).
    @Sendable func ownTracks(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        guard let user = context.principal.userID else {
            throw DBeaconError.forbidden("OwnTracks reports belong to users; the admin token has none")
        }
        var request = request
        let body = try await request.optionalJSONBody(limit: maxBodyBytes)
        let messages = try OwnTracksRequest.decode(body, now: clock.now(), config: phones.fences.config)
        var fixes: [LocationFix] = [], beacons: [SightingInput] = []
        var transitions: [PhoneTransition] = []
        for m in messages {
            switch m {
            case .location(let fix): fixes.append(fix)
            case .transition(let transition): transitions.append(transition)
            case .beacon(let sighting): beacons.append(sighting)
            case .ignored: break
            }
        }
        let reports = fixes.count + transitions.count + beacons.count
        if reports > 0 { try limiter.consume(.fixes, key: user.rawValue, cost: Double(reports)) }
        // The phone among the user's: its device, or the device name the app sends (X-Limit-D).
        let client = context.device?.rawValue ?? "token:" + String((request.headers[.init("X-Limit-D")!] ?? "phone").prefix(64))
        let answer = try await phones.ownTracks(fixes: fixes, transitions: transitions, beacons: beacons,
                                                user: user, client: client, by: context.principal)
        return .json(bytes: OwnTracksAnswer.encode(answer))
    }

    // MARK: Traccar Client / OsmAnd

    /// A fix as the OsmAnd protocol sends it (query string, form body, or the Traccar Client's
    /// JSON). 200 with an empty body; a fix too old for the fence engine, or a heartbeat without
    /// a position, is accepted and left alone (the client would otherwise resend it forever).
    @Sendable func osmAnd(_ request: Request, context: AppRequestContext) async throws -> Response {
        let lockedOut: Bool
        do { try limiter.check(.authFailures, key: context.clientAddress); lockedOut = false } catch { lockedOut = true }
        var request = request
        var fields: [String: String] = [:]
        // Read as a form (`+` is a space, as Traccar's own clients send `2014-06-04+09:10:11`).
        try Self.fields(of: request.uri.query ?? "", into: &fields)
        var json: ObjectReader?
        let type = request.headers[.contentType]?.lowercased() ?? ""
        if request.method == .post {
            if type.hasPrefix("application/json") {
                json = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
            } else if type.hasPrefix("application/x-www-form-urlencoded") {
                let body = try await request.collectBody(upTo: maxBodyBytes)
                try Self.fields(of: String(buffer: body), into: &fields)
            }
        }
        // The device first: its token is the identifier (`id`, `deviceid`, or `device_id`).
        let device = try json?.optionalString("device_id", maxLength: 200) ?? fields["id"] ?? fields["deviceid"] ?? ""
        // Locked out (too many bad identifiers from this address): only a device seen lately goes on.
        if lockedOut && !auth.seenValid(token: device) { try limiter.check(.authFailures, key: context.clientAddress) }
        guard !device.isEmpty, let caller = try await auth.authenticateCaller(token: device), caller.device != nil,
              let user = caller.principal.userID else {
            try limiter.consume(.authFailures, key: context.clientAddress)
            throw DBeaconError.unauthorized("the device identifier (id, or device_id) must be an active device token (POST /v1/me/devices)")
        }
        let report = try json.map { try OsmAndRequest.decodeJSON($0) } ?? OsmAndRequest.decode(fields)
        let now = clock.now()
        let config = phones.fences.config
        guard let position = report.position else { return Response(status: .ok) }
        let at = report.timestamp ?? now
        // Outside the accepted window: acknowledged and left alone, as OwnTracks does (a 4xx
        // would make the app retry it for ever).
        guard config.accepts(time: at, now: now) else { return Response(status: .ok) }
        try limiter.consume(.fixes, key: user.rawValue)
        _ = try await phones.report([LocationFix(position: position, accuracyM: report.accuracyM, timestamp: at)], user: user)
        return Response(status: .ok)
    }

    /// The pairs of a query string or a form body into `fields`, each key once: 400
    /// `invalid_parameter` naming a key given twice (`lat=48&lat=x`), rather than one of them
    /// read. A key of the query may appear again in the form body, which wins.
    static func fields(of text: String, into fields: inout [String: String]) throws {
        var seen = Set<String>()
        for (k, v) in form(text) {
            guard seen.insert(k).inserted else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "\(k.prefix(100)) must be given once", path: String(k.prefix(100)))
            }
            fields[k] = v
        }
    }

    /// `application/x-www-form-urlencoded` pairs.
    static func form(_ text: String) -> [(String, String)] {
        text.split(separator: "&").compactMap { pair in
            let kv = pair.split(separator: "=", maxSplits: 1)
            func decode(_ s: Substring) -> String { (String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding) ?? String(s) }
            guard let k = kv.first else { return nil }
            return (decode(k), kv.count > 1 ? decode(kv[1]) : "")
        }
    }
}
