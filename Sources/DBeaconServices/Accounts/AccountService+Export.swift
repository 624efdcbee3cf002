package import DBeaconCore
import DBeaconStore

/// Receives a user's export as it is read, member by member of one JSON object, so a user with
/// 100k events is written out page by page and never held whole.
package protocol ExportSink {
    /// A whole member.
    mutating func member(_ key: String, _ value: JSONValue) async throws
    /// Opens an array member (`open` is written before the first element: `[`, or
    /// `{"type":"FeatureCollection","features":[`).
    mutating func beginArray(_ key: String, open: String) async throws
    mutating func elements(_ values: [JSONValue]) async throws
    /// Closes the array (`close`: `]`, or `]}`).
    mutating func endArray(close: String) async throws
}

extension AccountService {
    /// The format version of the export document.
    package static let exportFormat = "dbeacon-export/1"

    /// `GET /v1/me/export` (the user's own token) and `GET /v1/users/{id}/export` (admin): every
    /// thing the service holds about the user, as one JSON document written to `sink` section
    /// by section (`docs` in README, "Your users' data").
    ///
    /// What names a beacon the user may no longer see (a follow of a beacon made private since,
    /// content they added to it) is left out, as the visibility gate leaves it out of every
    /// answer: that it still exists is its owner's to tell. `feature` encodes a beacon.
    package func export(_ id: UserID, by principal: Principal, device: DeviceID?,
                        feature: @Sendable (VisibleBeacon) -> JSONValue, to sink: inout some ExportSink) async throws {
        let user = try await exportable(id, by: principal, device: device)
        let viewer = Principal.user(id)
        let gate = beacons.gate
        try await sink.member("format", .string(Self.exportFormat))
        try await sink.member("exported_at", .string(clock.now().rfc3339))
        try await sink.member("profile", .object(JSONObject([
            ("id", .string(user.id.rawValue)), ("name", .string(user.name)), ("created_at", .string(user.createdAt.rfc3339)),
            ("token_rotated_at", .optional(user.tokenRotatedAt?.rfc3339)), ("disabled_at", .optional(user.disabledAt?.rfc3339)),
            ("beacon_id_prefix", .string(BeaconID.namespace(of: user.id))),
        ])))

        // The beacons they own, as a FeatureCollection, a page at a time.
        try await sink.beginArray("beacons", open: #"{"type":"FeatureCollection","features":["#)
        var after: Int64?
        repeat {
            let page = try await store.listBeacons(BeaconListQuery(owner: id, limit: 200, after: after), viewer: viewer, now: clock.now())
            try await sink.elements(try await gate.present(page.items, to: viewer).map(feature))
            after = page.next
        } while after != nil
        try await sink.endArray(close: "]}")

        // One table each, as stored (rows about beacons hidden from them left out).
        for section in ExportSection.allCases {
            if section == .location {  // one row or none
                let row = try await store.exportRows(.location, user: id, after: nil, limit: 1).items.first
                try await sink.member("location", row.map(JSONValue.object) ?? .null)
                continue
            }
            try await sink.beginArray(section.rawValue, open: "[")
            var after: Int64?
            repeat {
                let page = try await store.exportRows(section, user: id, after: after, limit: 500)
                let rows = try await reshaped(section, page.items, to: viewer, gate: gate)
                try await sink.elements(try await visibleRows(rows, to: viewer, gate: gate).map(JSONValue.object))
                after = page.next
            } while after != nil
            try await sink.endArray(close: "]")
        }

        // Visits they made (entries per beacon, from the event log), and the events themselves.
        let entered = try await store.enteredBeacons(user: id)
        let seen = try await gate.visibleIDs(entered.map(\.beacon), to: viewer)
        try await sink.member("visits", .array(entered.filter { seen.contains($0.beacon) }.map {
            .object(["beacon": .string($0.beacon.rawValue), "entries": .int($0.entries)])
        }))
        try await sink.beginArray("events", open: "[")
        var position: Int64?
        repeat {
            let page = try await feed.events(by: viewer, after: position, limit: 500)
            try await sink.elements(page.items.map(\.json))
            position = page.next
        } while position != nil
        try await sink.endArray(close: "]")

        // Webhooks, without their secrets.
        try await sink.member("webhooks", .array(try await store.webhooks(owner: id).map { w in
            .object(JSONObject([
                ("id", .string(w.id)), ("url", .string(w.url)), ("events", .array(w.events.map(JSONValue.string))),
                ("description", .optional(w.description)), ("status", .string(w.status.rawValue)), ("created_at", .string(w.createdAt.rfc3339)),
            ]))
        }))
    }

    /// The user whose export `principal` may read (their own, with their own token; anyone's,
    /// with the admin token): checked before an answer starts streaming, so refusals get their
    /// status.
    package func exportable(_ id: UserID, by principal: Principal, device: DeviceID?) async throws -> User {
        if !principal.isAdmin {
            guard principal.userID == id else { throw DBeaconError(.forbidden, code: "admin_only", message: "only the admin token exports others") }
            guard device == nil else {
                throw DBeaconError(.forbidden, code: "device_token", message: "a device token cannot export the account: use the user's own token")
            }
        }
        guard let user = try await store.user(id: id) else { throw DBeaconError.notFound("user \(id)") }
        return user
    }

    /// Rows kept as the protocols' own JSON, in the export's terms: a phone's state as the
    /// regions it was given (those the user may still see) and its refresh circle, without the
    /// protocol's bookkeeping (a log position counts everyone's events); a sighting batch as
    /// what it resolved, each beacon by id while the user may still see it.
    private func reshaped(_ section: ExportSection, _ rows: [JSONObject], to viewer: Principal,
                          gate: VisibilityGate) async throws -> [JSONObject] {
        switch section {
        case .phoneStates:
            var out: [JSONObject] = []
            for row in rows {
                // (A state this version cannot read is exported as no regions, like the phone
                // that gets its regions again: `PhoneService.state`.)
                let state = (row["state"]?.jsonString).flatMap { try? PhoneState(decoding: $0) } ?? .initial
                let seen = try await gate.visibleIDs(state.waypoints.compactMap { BeaconID($0.rid) }, to: viewer)
                let regions: [JSONValue] = state.waypoints.compactMap { w in
                    if let beacon = BeaconID(w.rid), !seen.contains(beacon) { return nil }
                    return .object(["region": .string(w.rid), "description": .string(w.desc)])
                }
                out.append(JSONObject([
                    ("client", row["client"] ?? .null), ("updated_at", row["updated_at"] ?? .null),
                    ("refresh", .object(["lat": .number(state.refreshCenter.lat), "lon": .number(state.refreshCenter.lon),
                                         "radius_m": .number(state.refreshRadius)])),
                    ("regions", .array(regions)),
                ]))
            }
            return out
        case .sightingBatches:
            var out: [JSONObject] = []
            for row in rows {
                let answer = row["response"]?["response"] ?? .null
                let results = answer["results"]?.arrayValue ?? []
                let ids = results.compactMap { $0["beacon"]?["id"]?.stringValue.flatMap(BeaconID.init) }
                let seen = try await gate.visibleIDs(ids, to: viewer)
                out.append(JSONObject([
                    ("batch_id", row["batch_id"] ?? .null), ("created_at", row["created_at"] ?? .null),
                    ("results", .array(results.map { r in
                        let id = r["beacon"]?["id"]?.stringValue.flatMap(BeaconID.init)
                        return .object(JSONObject([
                            ("index", r["index"] ?? .null), ("beacon", id.flatMap { seen.contains($0) ? .string($0.rawValue) : nil } ?? .null),
                            ("distance_m", r["distance_m"] ?? .null), ("proximity", r["proximity"] ?? .null),
                            ("error", r["error"]?["code"] ?? .null),
                        ]))
                    })),
                    ("position", answer["position"] ?? .null),
                ]))
            }
            return out
        default:
            return rows
        }
    }

    /// The rows whose beacon references (`beacon`, `place`, `promotion`, `meeting`, `tour`)
    /// all name beacons the viewer may see now.
    private func visibleRows(_ rows: [JSONObject], to viewer: Principal, gate: VisibilityGate) async throws -> [JSONObject] {
        let keys = ["beacon", "place", "promotion", "meeting", "tour"]
        let ids = Set(rows.flatMap { row in keys.compactMap { row[$0]?.stringValue.map(BeaconID.init(uncheckedRawValue:)) } })
        guard !ids.isEmpty else { return rows }
        let seen = try await gate.visibleIDs(Array(ids), to: viewer)
        return rows.filter { row in
            keys.allSatisfy { key in row[key]?.stringValue.map { seen.contains(BeaconID(uncheckedRawValue: $0)) } ?? true }
        }
    }
}
