package import DBeaconCore
import GRDB

extension SpatiaLiteStore: RegistryStore {
    static let registryColumns = """
        r.seq, r.id, r.kind, r.id1, r.id2, r.id3, r.instance, r.beacon_id, r.owner, r.lon, r.lat, r.level,
        r.measured_power, r.status, r.version, r.created_at, r.updated_at
        """

    package func insertRegistryEntry(_ entry: RegistryEntry) async throws {
        try await write { db, _ in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM beacons WHERE id = ?", arguments: [entry.beacon.rawValue]) == true else {
                throw DBeaconError.notFound("beacon \(entry.beacon)", path: "beacon")
            }
            if entry.status != .decommissioned { try Self.checkIdentityFree(db, entry) }
            try db.execute(sql: """
                INSERT INTO registry_entries(id, kind, id1, id2, id3, instance, identity_key, specificity, beacon_id, owner,
                    lon, lat, level, measured_power, status, version, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: StatementArguments(Self.registryArguments(entry)))
        }
    }

    package func updateRegistryEntry(_ entry: RegistryEntry, expectedVersion: Int) async throws {
        try await write { db, _ in
            guard let version = try Int.fetchOne(db, sql: "SELECT version FROM registry_entries WHERE id = ?",
                                                 arguments: [entry.id.rawValue]) else {
                throw DBeaconError.notFound("registry entry \(entry.id)")
            }
            guard version == expectedVersion else {
                throw DBeaconError(.preconditionFailed, code: "version_mismatch",
                                   message: "the registry entry is at version \(version), not \(expectedVersion)")
            }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM beacons WHERE id = ?", arguments: [entry.beacon.rawValue]) == true else {
                throw DBeaconError.notFound("beacon \(entry.beacon)", path: "beacon")
            }
            if entry.status != .decommissioned { try Self.checkIdentityFree(db, entry) }
            try db.execute(sql: """
                UPDATE registry_entries SET kind = ?, id1 = ?, id2 = ?, id3 = ?, instance = ?, identity_key = ?, specificity = ?,
                    beacon_id = ?, owner = ?, lon = ?, lat = ?, level = ?, measured_power = ?, status = ?, version = ?,
                    created_at = ?, updated_at = ?
                WHERE id = ?
                """, arguments: StatementArguments(Self.registryArguments(entry).dropFirst() + [entry.id.rawValue]))
        }
    }

    /// The unique index would refuse a duplicate too; checking first gives the precise error.
    private static func checkIdentityFree(_ db: Database, _ entry: RegistryEntry) throws {
        let taken = try Bool.fetchOne(db, sql: """
            SELECT 1 FROM registry_entries WHERE identity_key = ? AND status != 'decommissioned' AND id != ?
            """, arguments: [entry.identity.key, entry.id.rawValue]) == true
        if taken {
            throw DBeaconError.conflict("this physical beacon identity (\(entry.identity.key)) is already registered",
                                        code: "duplicate_identity")
        }
    }

    private static func registryArguments(_ e: RegistryEntry) -> [(any DatabaseValueConvertible)?] {
        [e.id.rawValue, e.identity.kind.rawValue, e.identity.id1, e.identity.id2, e.identity.id3, e.identity.instance,
         e.identity.key, e.identity.specificity, e.beacon.rawValue, e.owner.rawValue, e.position?.position.lon,
         e.position?.position.lat, e.position?.level, e.measuredPower, e.status.rawValue, e.version, e.createdAt.millis,
         e.updatedAt.millis]
    }

    package func registryEntry(id: RegistryID) async throws -> RegistryEntry? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.registryColumns) FROM registry_entries r WHERE r.id = ?",
                             arguments: [id.rawValue]).map(Self.registryEntry(from:))
        }
    }

    package func deleteRegistryEntry(id: RegistryID) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM registry_entries WHERE id = ?", arguments: [id.rawValue])
            return db.changesCount > 0
        }
    }

    package func listRegistryEntries(_ query: RegistryListQuery, viewer: Principal, now: Timestamp) async throws -> Page<RegistryEntry> {
        try await read { db in
            var args: [String: (any DatabaseValueConvertible)?] = [
                "uid": viewer.userID?.rawValue, "now": now.millis, "after": query.after ?? 0, "limit": query.limit + 1,
            ]
            var clauses = ["r.seq > :after", Self.visibilityClause(viewer)]
            if let beacon = query.beacon {
                clauses.append("r.beacon_id = :beacon")
                args["beacon"] = beacon.rawValue
            }
            if let kind = query.kind {
                clauses.append("r.kind = :kind")
                args["kind"] = kind.rawValue
            }
            if let id1 = query.id1 {
                clauses.append("r.id1 = :id1")
                args["id1"] = id1
            }
            if let status = query.status {
                clauses.append("r.status = :status")
                args["status"] = status.rawValue
            }
            if let owner = query.owner {
                clauses.append("r.owner = :owner")
                args["owner"] = owner.rawValue
            }
            let rows = try Row.fetchAll(db, sql: """
                SELECT \(Self.registryColumns) FROM registry_entries r JOIN beacons b ON b.id = r.beacon_id
                WHERE \(clauses.joined(separator: " AND ")) ORDER BY r.seq LIMIT :limit
                """, arguments: StatementArguments(args))
            let page = rows.prefix(query.limit)
            return Page(items: page.map(Self.registryEntry(from:)), next: rows.count > query.limit ? page.last?["seq"] : nil)
        }
    }

    package func activeRegistryMatches(_ identities: [PhysicalBeaconIdentity]) async throws -> [PhysicalBeaconIdentity: [RegistryEntry]] {
        let groups = Set(identities.map { "\($0.kind.rawValue)\u{0}\($0.id1)" })
        guard !groups.isEmpty else { return [:] }
        let candidates: [RegistryEntry] = try await read { db in
            var all: [RegistryEntry] = []
            let statement = try db.cachedStatement(sql: """
                SELECT \(Self.registryColumns) FROM registry_entries r
                WHERE r.kind = ? AND r.id1 = ? AND r.status = 'active'
                ORDER BY r.specificity DESC, r.seq
                """)
            for group in groups.sorted() {
                let parts = group.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
                all += try Row.fetchAll(statement, arguments: [parts[0], parts[1]]).map(Self.registryEntry(from:))
            }
            return all
        }
        var result: [PhysicalBeaconIdentity: [RegistryEntry]] = [:]
        for identity in Set(identities) {
            result[identity] = candidates.filter { $0.identity.matches(identity) }
        }
        return result
    }

    static func registryEntry(from row: Row) -> RegistryEntry {
        let kind = PhysicalBeaconKind(rawValue: row["kind"]) ?? .iBeacon
        let lon: Double? = row["lon"], lat: Double? = row["lat"]
        var position: InstalledPosition?
        if let lon, let lat { position = InstalledPosition(position: Position(lon: lon, lat: lat), level: row["level"]) }
        return RegistryEntry(
            id: RegistryID(uncheckedRawValue: row["id"]),
            identity: PhysicalBeaconIdentity(kind: kind, id1: row["id1"], id2: row["id2"], id3: row["id3"], instance: row["instance"]),
            beacon: BeaconID(uncheckedRawValue: row["beacon_id"]), owner: UserID(uncheckedRawValue: row["owner"]), position: position,
            measuredPower: row["measured_power"], status: RegistryEntry.Status(rawValue: row["status"]) ?? .inactive,
            version: row["version"], createdAt: Timestamp(millis: row["created_at"]), updatedAt: Timestamp(millis: row["updated_at"]))
    }

    // MARK: Sighting batches

    package func sightingBatchResponse(user: UserID, batchID: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT response FROM sighting_batches WHERE user_id = ? AND batch_id = ?",
                                arguments: [user.rawValue, batchID])
        }
    }

    package func storeSightingBatchResponse(user: UserID, batchID: String, response: String, at: Timestamp,
                                            expireBefore: Timestamp) async throws -> String {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM sighting_batches WHERE created_at < ?", arguments: [expireBefore.millis])
            try db.execute(sql: """
                INSERT INTO sighting_batches(user_id, batch_id, response, created_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(user_id, batch_id) DO NOTHING
                """, arguments: [user.rawValue, batchID, response, at.millis])
            return try String.fetchOne(db, sql: "SELECT response FROM sighting_batches WHERE user_id = ? AND batch_id = ?",
                                       arguments: [user.rawValue, batchID]) ?? response
        }
    }
}
