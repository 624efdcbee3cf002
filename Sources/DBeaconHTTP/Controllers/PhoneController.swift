import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Foundation
import Hummingbird

/// Phone apps that speak their own protocols: OwnTracks in HTTP mode (`POST /v1/owntracks`,
/// HTTP Basic with the user's id or name and a device or user token) and Traccar Client /
/// OsmAnd (`GET|POST /v1/osmand`, the device token as the device identifier).
struct PhoneController {
    let phones: PhoneService
    let auth: AuthService
    let limiter: RateLimiter
    let clock: any WallClock
    let maxBodyBytes: Int

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
        let messages = try OwnTracksRequest.decode(body, now: clock.now(), config: await phones.fences.config)
        var fixes: [LocationFix] = [], beacons: [SightingInput] = []
        var transitions: [(entered: Bool, rid: String?, wtst: Int?, desc: String?, position: Position?, at: Timestamp)] = []
        for m in messages {
            switch m {
            case .location(let fix): fixes.append(fix)
            case .transition(let entered, let rid, let wtst, let desc, let position, _, let at):
                transitions.append((entered, rid, wtst, desc, position, at))
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
        return .json(.array(Self.ownTracksMessages(answer)))
    }

    static func ownTracksMessages(_ answer: PhoneAnswer) -> [JSONValue] {
        var out: [JSONValue] = []
        if let waypoints = answer.waypoints {
            out.append(.object(["_type": "cmd", "action": "clearWaypoints"]))
            out.append(.object(JSONObject([
                ("_type", "cmd"), ("action", "setWaypoints"),
                ("waypoints", .object(JSONObject([("_type", "waypoints"), ("waypoints", .array(waypoints.map(waypoint)))]))),
            ])))
        }
        var used = Set<String>()
        var tids: [UserID: (tid: String, friend: PhoneFriend)] = [:]
        for f in answer.friends {
            let tid = trackerID(user: f.user, name: f.name, taken: &used)
            tids[f.user] = (tid, f)
            out.append(.object(JSONObject([("_type", "card"), ("tid", .string(tid)), ("name", .string(f.name))])))
            out.append(.object(JSONObject([
                ("_type", "location"), ("tid", .string(tid)), ("lat", .number(f.location.position.lat)),
                ("lon", .number(f.location.position.lon)), ("acc", .int(Int(f.location.accuracyM.rounded()))),
                ("tst", .int(Int(f.location.fixAt.millis / 1000))), ("t", "u"),
                ("topic", .string("owntracks/\(f.user.rawValue)/dbeacon")),
            ])))
        }
        // Group alerts as the friend's transition (the apps show "<friend> leaves <region>"): for
        // members the caller sees on the map (their card and tid were just given) at their
        // position; for a member who left the group (no longer shared), with the tid they had and
        // at the group's place.
        for n in answer.notices {
            let tid: String, position: Position, accuracy: Double
            if let (known, friend) = tids[n.member] {
                (tid, position, accuracy) = (known, friend.location.position, friend.location.accuracyM)
            } else if !n.entered, let place = n.groupLocation {
                (tid, position, accuracy) = (trackerID(user: n.member, name: n.memberName ?? n.member.rawValue, taken: &used), place, 0)
            } else {
                continue
            }
            out.append(.object(JSONObject([
                ("_type", "transition"), ("tid", .string(tid)), ("event", .string(n.entered ? "enter" : "leave")),
                ("desc", .string(n.group)), ("t", "c"), ("tst", .int(Int(n.at.millis / 1000))),
                ("wtst", .int(PhoneWaypoint.wtst(n.groupID))), ("rid", .string(n.groupID)),
                ("lat", .number(position.lat)), ("lon", .number(position.lon)), ("acc", .int(Int(accuracy.rounded()))),
                ("topic", .string("owntracks/\(n.member.rawValue)/dbeacon/event")),
            ])))
        }
        return out
    }

    static func waypoint(_ w: PhoneWaypoint) -> JSONValue {
        var o = JSONObject([("_type", "waypoint"), ("desc", .string(w.desc)), ("lat", .number(w.center.lat)), ("lon", .number(w.center.lon)),
                            ("rad", .int(w.radiusM)), ("tst", .int(w.wtst)), ("rid", .string(w.rid))])
        if let b = w.iBeacon {
            // iOS reads an iBeacon region from its description: Name:UUID[:major[:minor]].
            var desc = "\(w.desc.replacingOccurrences(of: ":", with: " ")):\(b.uuid)"
            if let major = b.major {
                desc += ":\(major)"
                if let minor = b.minor { desc += ":\(minor)" }
            }
            o["desc"] = .string(desc)
            o["uuid"] = .string(b.uuid)
            if let major = b.major { o["major"] = .int(major) }
            if let minor = b.minor { o["minor"] = .int(minor) }
        }
        return .object(o)
    }

    /// Two characters the apps key a friend by (`tid`): the name's first letter and one derived
    /// from the user id, another when taken in this answer.
    static func trackerID(user: UserID, name: String, taken: inout Set<String>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let first = name.uppercased().first(where: { $0.isLetter && $0.isASCII }) ?? "X"
        var h = 0
        for b in user.rawValue.utf8 { h = (h &* 31 &+ Int(b)) & 0x7fff_ffff }
        for k in 0..<alphabet.count * alphabet.count {
            let a = k < alphabet.count ? first : alphabet[(k / alphabet.count) % alphabet.count]
            let tid = String([a, alphabet[(h + k) % alphabet.count]])
            if taken.insert(tid).inserted { return tid }
        }
        return "??"
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
        for (k, v) in Self.form(request.uri.query ?? "") { fields[k] = v }
        var json: ObjectReader?
        let type = request.headers[.contentType]?.lowercased() ?? ""
        if request.method == .post {
            if type.hasPrefix("application/json") {
                json = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
            } else if type.hasPrefix("application/x-www-form-urlencoded") {
                let body = try await request.collectBody(upTo: maxBodyBytes)
                for (k, v) in Self.form(String(buffer: body)) { fields[k] = v }
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
        let config = await phones.fences.config
        guard let position = report.position else { return Response(status: .ok) }
        let at = report.timestamp ?? now
        // Outside the accepted window: acknowledged and left alone, as OwnTracks does (a 4xx
        // would make the app retry it for ever).
        guard config.accepts(time: at, now: now) else { return Response(status: .ok) }
        try limiter.consume(.fixes, key: user.rawValue)
        _ = try await phones.report([LocationFix(position: position, accuracyM: report.accuracyM, timestamp: at)], user: user)
        return Response(status: .ok)
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
