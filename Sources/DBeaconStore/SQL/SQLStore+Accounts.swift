import Crypto
package import DBeaconCore
import Synchronization

/// The functions told which accounts changed (set at start-up, called after each commit that
/// changed one, and for other processes' changes). Kept in an immutable holder, as
/// `ChangeObserverBox` explains.
package final class AccountObservers: Sendable {
    private final class Holder: Sendable {
        let functions: [@Sendable (UserID?) -> Void]
        init(_ functions: [@Sendable (UserID?) -> Void]) { self.functions = functions }
    }

    private let holder = Mutex(Holder([]))

    package init() {}

    func add(_ observer: @escaping @Sendable (UserID?) -> Void) {
        holder.withLock { $0 = Holder($0.functions + [observer]) }
    }

    /// Tells every observer about `users` (nil: some account, unknown which).
    func notify(_ users: [UserID?]) {
        let functions = holder.withLock { $0 }.functions
        for user in users { for f in functions { f(user) } }
    }
}

/// Accounts on either database: the credential check, the admin's list and edits, token
/// rotation, what an export reads. Erasure is `SQLStore+Erasure`.
extension SQLStore {
    package func observeAccountChanges(_ observer: @escaping @Sendable (UserID?) -> Void) {
        accountObservers.add(observer)
    }

    /// The columns `user(from:)` reads.
    static var userColumns: String { "id, name, created_at, disabled_at, token_rotated_at" }


    // MARK: Credentials

    package func credential(tokenHash: [UInt8], device: Bool) async throws -> StoredCredential? {
        let request = CredentialRequest(hash: tokenHash, device: device)
        // PostgreSQL: one statement for the checks waiting together (every request makes one).
        if let coalescer = fixReads?.credentials {
            return try await coalescer.read(request) { [self] requests in try await credentials(requests) }
        }
        return try await read { db in try await Self.credential(request, db: db) }
    }

    static func credential(_ request: CredentialRequest, db: any SQLSession) async throws -> StoredCredential? {
        if request.device {
            return try await db.row("""
                SELECT d.id, d.user_id, d.last_seen_at FROM devices d JOIN users u ON u.id = d.user_id
                WHERE d.token_hash = $1 AND d.revoked_at IS NULL AND u.disabled_at IS NULL
                """, [SQLBlob(request.hash)]).map { row in
                .device(DeviceID(uncheckedRawValue: try row.string("id")), user: UserID(uncheckedRawValue: try row.string("user_id")),
                        lastSeenAt: try row.optionalTimestamp("last_seen_at"))
            }
        }
        return try await db.row("SELECT id FROM users WHERE token_hash = $1 AND disabled_at IS NULL", [SQLBlob(request.hash)])
            .map { .user(UserID(uncheckedRawValue: try $0.string("id"))) }
    }

    /// Many credential checks in one statement (PostgreSQL: hashes are bound as hex text).
    private func credentials(_ requests: [CredentialRequest]) async throws -> [StoredCredential?] {
        guard dialect == .postgres, requests.count > 1 else {
            return try await read { db in
                var out: [StoredCredential?] = []
                for r in requests { out.append(try await Self.credential(r, db: db)) }
                return out
            }
        }
        let hashes = requests.map { Hex.string($0.hash) }
        let kinds = requests.map { $0.device ? "d" : "u" }
        let rows = try await readStatement { d in ("""
            SELECT e.position, u.id AS user_id, CAST(NULL AS TEXT) AS device_id, CAST(NULL AS BIGINT) AS last_seen_at
            FROM \(d.elements("$1", as: "e")) JOIN \(d.elements("$2", as: "k")) ON k.position = e.position AND k.value = 'u'
            JOIN users u ON u.token_hash = decode(e.value, 'hex') AND u.disabled_at IS NULL
            UNION ALL
            SELECT e.position, dv.user_id, dv.id, dv.last_seen_at
            FROM \(d.elements("$1", as: "e")) JOIN \(d.elements("$2", as: "k")) ON k.position = e.position AND k.value = 'd'
            JOIN devices dv ON dv.token_hash = decode(e.value, 'hex') AND dv.revoked_at IS NULL
            JOIN users u ON u.id = dv.user_id AND u.disabled_at IS NULL
            """, [d.boundList(hashes), d.boundList(kinds)]) }
        var out = [StoredCredential?](repeating: nil, count: requests.count)
        for row in rows {
            let i = try row.int("position")
            guard out.indices.contains(i) else { continue }
            let user = UserID(uncheckedRawValue: try row.string("user_id"))
            if let device = try row.optionalString("device_id") {
                out[i] = .device(DeviceID(uncheckedRawValue: device), user: user, lastSeenAt: try row.optionalTimestamp("last_seen_at"))
            } else {
                out[i] = .user(user)
            }
        }
        return out
    }

    package var cachesCredentials: Bool { dialect == .sqlite }

    // MARK: The admin's list and edits

    package func users(namePrefix: String?, after: Int64?, limit: Int) async throws -> Page<User> {
        try await read { db in
            var s = SQLStatement()
            var sql = "SELECT seq, \(Self.userColumns) FROM users WHERE seq > \(s.bind(after ?? 0))"
            if let prefix = namePrefix, !prefix.isEmpty {
                // Compared as text, not with LIKE (a prefix may hold % or _), ignoring the case of
                // ASCII letters, as both databases can.
                let lowered = String(String.UnicodeScalarView(prefix.unicodeScalars.map {
                    ("A"..."Z").contains($0) ? Unicode.Scalar(UInt8($0.value + 0x20)) : $0
                }))
                let head = "substr(name, 1, CAST(\(s.bind(prefix.unicodeScalars.count)) AS INTEGER))"
                sql += " AND \(db.dialect.asciiLower(head)) = \(s.bind(lowered))"
            }
            sql += " ORDER BY seq LIMIT \(s.bind(limit + 1))"
            let rows = try await db.rows(sql, s.arguments)
            let page = rows.prefix(limit)
            return Page(items: try page.map(Self.user(from:)), next: rows.count > limit ? try page.last?.int64("seq") : nil)
        }
    }

    package func updateUser(_ id: UserID, name: String?, disabled: Bool?, at: Timestamp) async throws -> User? {
        try await write { db, log in
            guard let current = try await db.row("SELECT \(Self.userColumns) FROM users WHERE id = $1\(db.dialect.forUpdate)",
                                                 [id.rawValue]).map(Self.user(from:)) else { return nil }
            var user = current
            if let name { user.name = name }
            if let disabled, disabled != current.isDisabled { user.disabledAt = disabled ? at : nil }
            guard user != current else { return user }
            try await db.rows("UPDATE users SET name = $1, disabled_at = $2 WHERE id = $3",
                              [user.name, user.disabledAt?.millis, id.rawValue])
            if user.disabledAt != current.disabledAt { log.accountsChanged.append(id) }
            return user
        }
    }

    package func replaceToken(of id: UserID, tokenHash: [UInt8], at: Timestamp) async throws -> User? {
        try await write { db, log in
            guard let row = try await db.row("""
                UPDATE users SET token_hash = $1, token_rotated_at = $2 WHERE id = $3 RETURNING \(Self.userColumns)
                """, [SQLBlob(tokenHash), at.millis, id.rawValue]) else { return nil }
            log.accountsChanged.append(id)
            return try Self.user(from: row)
        }
    }

    package func isRetired(_ id: UserID) async throws -> Bool {
        try await read { db in
            try await db.exists("SELECT 1 FROM retired_users WHERE id_hash = $1", [SQLBlob(RetiredIDs.hash(id))])
        }
    }

    // MARK: Export

    package func exportRows(_ section: ExportSection, user: UserID, after: Int64?, limit: Int) async throws -> Page<JSONObject> {
        let u = user.rawValue
        // (query, whether rows are paged by their `seq` column)
        let (sql, paged): (String, Bool) = switch section {
        case .devices:
            ("SELECT id, name, created_at, last_seen_at, revoked_at FROM devices WHERE user_id = $1 ORDER BY created_at, id", false)
        case .content:
            // Others' beacons whose content names the user; their own items are picked below.
            ("SELECT seq, id AS beacon, content FROM beacons WHERE owner <> $1 AND \(dialect.containsText("content", "$1")) AND seq > $2 ORDER BY seq LIMIT $3", true)
        case .media:
            ("SELECT seq, id, place_id AS place, kind, url, title, created_at FROM place_media WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", true)
        case .follows:
            ("SELECT seq, beacon_id AS beacon, created_at AS since FROM followers WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", true)
        case .tagFollows:
            ("SELECT tag, radius_m, created_at FROM tag_follows WHERE user_id = $1 ORDER BY tag", false)
        case .interests:
            ("SELECT category, score FROM user_interests WHERE user_id = $1 ORDER BY position", false)
        case .saved:
            ("SELECT promotion_id AS promotion, saved_at FROM promotion_saves WHERE user_id = $1 ORDER BY saved_at, promotion_id", false)
        case .ratings:
            ("SELECT promotion_id AS promotion, rating, created_at FROM promotion_ratings WHERE user_id = $1 ORDER BY created_at, promotion_id", false)
        case .feedback:
            ("SELECT seq, promotion_id AS promotion, text, created_at FROM promotion_feedback WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", true)
        case .interactions:
            ("SELECT seq, promotion_id AS promotion, type, source, created_at FROM promotion_interactions WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", true)
        case .groups:
            ("""
             SELECT g.id AS "group", g.beacon_id AS beacon, g.name, m.status, m.joined_at, m.range_state, m.range_distance_m,
                    m.range_changed_at
             FROM group_members m JOIN tracked_groups g ON g.id = m.group_id WHERE m.user_id = $1 ORDER BY m.joined_at, g.id
             """, false)
        case .invitations:
            ("""
             SELECT b.id AS meeting, b.name FROM beacon_members m JOIN beacons b ON b.id = m.beacon_id
             WHERE m.user_id = $1 AND b.owner <> $1 AND b.service = 'meeting' ORDER BY b.seq
             """, false)
        case .attending:
            ("SELECT meeting_id AS meeting, joined_at FROM meeting_attendees WHERE user_id = $1 ORDER BY joined_at, meeting_id", false)
        case .memberships:
            ("""
             SELECT b.id AS beacon, b.name FROM beacon_members m JOIN beacons b ON b.id = m.beacon_id
             WHERE m.user_id = $1 AND b.owner <> $1 AND (b.service IS NULL OR b.service <> 'meeting') ORDER BY b.seq
             """, false)
        case .tours:
            ("SELECT tour_id AS tour, started_at FROM tour_followers WHERE user_id = $1 ORDER BY started_at, tour_id", false)
        case .tourVisits:
            ("SELECT tour_id AS tour, place_id AS place, visited_at FROM tour_visits WHERE user_id = $1 ORDER BY visited_at, place_id", false)
        case .location:
            ("SELECT lat, lon, accuracy_m, fix_at, received_at FROM user_locations WHERE user_id = $1", false)
        case .fenceStates:
            ("SELECT beacon_id AS beacon, entered_at, dwelled, sighted_at FROM fence_states WHERE user_id = $1 ORDER BY entered_at, beacon_id", false)
        case .phoneStates:
            ("SELECT client, state, updated_at FROM phone_states WHERE user_id = $1 ORDER BY client", false)
        case .sightingBatches:
            ("SELECT batch_id, response, created_at FROM sighting_batches WHERE user_id = $1 ORDER BY created_at, batch_id", false)
        case .registry:
            ("""
             SELECT seq, id, kind, id1, id2, id3, instance, beacon_id AS beacon, lat, lon, level, measured_power, status, version,
                    created_at, updated_at
             FROM registry_entries WHERE owner = $1 AND seq > $2 ORDER BY seq LIMIT $3
             """, true)
        }
        let arguments: [any SQLArgument] = paged ? [u, after ?? 0, limit + 1] : [u]
        let rows = try await readStatement { _ in (sql, arguments) }
        let page = paged ? Array(rows.prefix(limit)) : rows
        let next = paged && rows.count > limit ? try page.last?.int64("seq") : nil
        var items: [JSONObject] = []
        for row in page {
            var o = JSONObject()
            for (name, value) in zip(row.columns.names, row.values) where name != "seq" {
                o[name] = Self.exportValue(name, value)
            }
            switch section {
            case .content:
                // Only the items the user added, each with the beacon it is on.
                for item in StoredBeacon.content(fromColumn: try row.string("content")) where item.addedBy == user {
                    items.append(JSONObject([
                        ("beacon", o["beacon"] ?? .null), ("kind", .string(item.kind)), ("url", .string(item.url)),
                        ("title", .optional(item.title)), ("created_at", .optional(item.createdAt?.rfc3339)),
                    ]))
                }
                continue
            case .phoneStates, .sightingBatches:
                // Stored as JSON text: exported as the JSON it is.
                for key in ["state", "response"] {
                    if let text = o[key]?.stringValue { o[key] = (try? JSONParser.parse(text)) ?? .string(text) }
                }
            case .fenceStates:
                o["dwelled"] = .bool((o["dwelled"]?.numberValue ?? 0) != 0)
            default:
                break
            }
            items.append(o)
        }
        return Page(items: items, next: next)
    }

    /// A stored value as exported: times (`…_at`, `since`, stored as milliseconds) as RFC 3339.
    static func exportValue(_ column: String, _ value: SQLValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .integer(let v):
            if column.hasSuffix("_at") || column == "since" { return .string(Timestamp(millis: v).rfc3339) }
            return .int(Int(v))
        case .real(let v): return .number(v)
        case .text(let v): return .string(v)
        case .bool(let v): return .bool(v)
        case .blob, .textArray, .integerArray: return .null  // no export reads these
        }
    }
}

/// Erased users' ids are remembered only by their SHA-256, so none is issued again.
package enum RetiredIDs {
    package static func hash(_ id: UserID) -> [UInt8] { Array(SHA256.hash(data: Array(id.rawValue.utf8))) }
}

/// One credential check: a token's hash, and whether it is a device token.
package struct CredentialRequest: Sendable {
    let hash: [UInt8]
    let device: Bool
}

