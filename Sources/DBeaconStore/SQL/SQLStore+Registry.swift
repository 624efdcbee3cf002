package import DBeaconCore

/// The shared physical beacon registry and the sighting batch replay log, on either database
/// (DDL: schema/*/v3_registry.sql).
///
/// Several PostGIS processes may write at once: an update locks the entry (`FOR UPDATE`) before
/// its version check, the beacon is locked against deletion (`FOR KEY SHARE`) while an entry is
/// written for it, and when two transactions register the same identity at the same time
/// the partial unique index `registry_entries_identity` refuses the second, which is
/// reported as the same `duplicate_identity` conflict as the check made first.
extension SQLStore {
    static var registryColumns: String { """
        r.seq, r.id, r.kind, r.id1, r.id2, r.id3, r.instance, r.beacon_id, r.owner, r.lon, r.lat, r.level,
        r.measured_power, r.status, r.version, r.created_at, r.updated_at
        """ }

    package func insertRegistryEntry(_ entry: RegistryEntry, conflictsVisibleTo viewer: Principal, now: Timestamp) async throws {
        try await write { db, _ in
            try await Self.requireBeacon(db, entry.beacon)
            if entry.status != .decommissioned { try await Self.checkIdentityFree(db, entry, viewer: viewer, now: now) }
            try await Self.identityGuarded(entry) {
                _ = try await db.rows("""
                    INSERT INTO registry_entries(id, kind, id1, id2, id3, instance, identity_key, specificity, beacon_id, owner,
                        lon, lat, level, measured_power, status, version, created_at, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
                    """, Self.registryArguments(entry))
            }
        }
    }

    package func updateRegistryEntry(_ entry: RegistryEntry, expectedVersion: Int, conflictsVisibleTo viewer: Principal,
                                     now: Timestamp) async throws {
        try await write { db, _ in
            guard let version = try await db.row("SELECT version FROM registry_entries WHERE id = $1\(db.dialect.forUpdate)",
                                                 [entry.id.rawValue])?.int("version") else {
                throw DBeaconError.notFound("registry entry \(entry.id)")
            }
            guard version == expectedVersion else {
                throw DBeaconError(.preconditionFailed, code: "version_mismatch",
                                   message: "the registry entry is at version \(version), not \(expectedVersion)")
            }
            try await Self.requireBeacon(db, entry.beacon)
            if entry.status != .decommissioned { try await Self.checkIdentityFree(db, entry, viewer: viewer, now: now) }
            try await Self.identityGuarded(entry) {
                _ = try await db.rows("""
                    UPDATE registry_entries SET kind = $2, id1 = $3, id2 = $4, id3 = $5, instance = $6, identity_key = $7,
                        specificity = $8, beacon_id = $9, owner = $10, lon = $11, lat = $12, level = $13, measured_power = $14,
                        status = $15, version = $16, created_at = $17, updated_at = $18
                    WHERE id = $1
                    """, Self.registryArguments(entry))
            }
        }
    }

    /// `notFound` (path `beacon`) unless the digital beacon exists; keeps it from being deleted
    /// until the transaction ends.
    private static func requireBeacon(_ db: any SQLSession, _ beacon: BeaconID) async throws {
        guard try await db.exists("SELECT 1 FROM beacons WHERE id = $1\(db.dialect.forKeyShare)", [beacon.rawValue]) else {
            throw DBeaconError.notFound("beacon \(beacon)", path: "beacon")
        }
    }

    /// A live entry with the same identity *that the registering principal may see* is a
    /// conflict; entries of beacons hidden from them neither block nor show (issue 26). Taken
    /// under a transaction lock on the identity (PostGIS), so two visible registrations of one
    /// identity cannot both pass.
    private static func checkIdentityFree(_ db: any SQLSession, _ entry: RegistryEntry, viewer: Principal,
                                          now: Timestamp) async throws {
        if let lock = db.dialect.transactionLock("$1") { _ = try await db.rows(lock, ["registry:" + entry.identity.key]) }
        var s = SQLStatement()
        let key = s.bind(entry.identity.key), id = s.bind(entry.id.rawValue)
        let visible = visibilityClause(viewer, now: now, &s)
        if try await db.exists("""
            SELECT 1 FROM registry_entries r JOIN beacons b ON b.id = r.beacon_id
            WHERE r.identity_key = \(key) AND r.status <> 'decommissioned' AND r.id <> \(id) AND \(visible)
            """, s.arguments) {
            throw duplicateIdentity(entry)
        }
    }

    /// Runs `body`, reporting a violation of the identity index (a concurrent registration
    /// committed after `checkIdentityFree` looked) as `duplicate_identity`.
    private static func identityGuarded(_ entry: RegistryEntry, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as SQLConstraintViolation where error.constraint == "registry_entries_identity" {
            throw duplicateIdentity(entry)
        }
    }

    private static func duplicateIdentity(_ entry: RegistryEntry) -> DBeaconError {
        DBeaconError.conflict("this physical beacon identity (\(entry.identity.key)) is already registered",
                              code: "duplicate_identity")
    }

    /// `$1`…`$18` in column order (id first).
    private static func registryArguments(_ e: RegistryEntry) -> [any SQLArgument] {
        [e.id.rawValue, e.identity.kind.rawValue, e.identity.id1, e.identity.id2, e.identity.id3, e.identity.instance,
         e.identity.key, e.identity.specificity, e.beacon.rawValue, e.owner.rawValue, e.position?.position.lon,
         e.position?.position.lat, e.position?.level, e.measuredPower, e.status.rawValue, e.version, e.createdAt.millis,
         e.updatedAt.millis]
    }

    package func registryEntry(id: RegistryID) async throws -> RegistryEntry? {
        try await read { db in
            try await db.row("SELECT \(Self.registryColumns) FROM registry_entries r WHERE r.id = $1", [id.rawValue])
                .map(Self.registryEntry(from:))
        }
    }

    package func deleteRegistryEntry(id: RegistryID) async throws -> Bool {
        try await write { db, _ in
            try await !db.rows("DELETE FROM registry_entries WHERE id = $1 RETURNING seq", [id.rawValue]).isEmpty
        }
    }

    package func listRegistryEntries(_ query: RegistryListQuery, viewer: Principal, now: Timestamp) async throws -> Page<RegistryEntry> {
        var s = SQLStatement()
        var clauses = ["r.seq > \(s.bind(query.after ?? 0))", Self.visibilityClause(viewer, now: now, &s)]
        if let beacon = query.beacon { clauses.append("r.beacon_id = \(s.bind(beacon.rawValue))") }
        if let beacons = query.beacons { clauses.append(dialect.contains("r.beacon_id", s.bind(beacons.map(\.rawValue)))) }
        if let kind = query.kind { clauses.append("r.kind = \(s.bind(kind.rawValue))") }
        if let id1 = query.id1 { clauses.append("r.id1 = \(s.bind(id1))") }
        if let status = query.status { clauses.append("r.status = \(s.bind(status.rawValue))") }
        if let owner = query.owner { clauses.append("r.owner = \(s.bind(owner.rawValue))") }
        let sql = """
            SELECT \(Self.registryColumns) FROM registry_entries r JOIN beacons b ON b.id = r.beacon_id
            WHERE \(clauses.joined(separator: " AND ")) ORDER BY r.seq LIMIT \(s.bind(query.limit + 1))
            """
        let arguments = s.arguments
        return try await read { db in
            let rows = try await db.rows(sql, arguments)
            let page = rows.prefix(query.limit)
            return Page(items: try page.map(Self.registryEntry(from:)),
                        next: rows.count > query.limit ? try page.last?.int64("seq") : nil)
        }
    }

    package func activeRegistryMatches(_ identities: [PhysicalBeaconIdentity]) async throws -> [PhysicalBeaconIdentity: [RegistryEntry]] {
        let groups = Set(identities.map { RegistryGroupKey(kind: $0.kind.rawValue, id1: $0.id1) }).sorted { ($0.kind, $0.id1) < ($1.kind, $1.id1) }
        guard !groups.isEmpty else { return [:] }
        // Every active pattern of the sighted (kind, id1) pairs, most specific first, ties oldest first.
        let candidates: [RegistryEntry] = try await read { db in
            try await db.rows("""
                SELECT \(Self.registryColumns) FROM registry_entries r
                JOIN (SELECT k.value AS kind, i.value AS id1 FROM \(db.dialect.elements("$1", as: "k"))
                      JOIN \(db.dialect.elements("$2", as: "i")) ON i.position = k.position) AS g
                  ON r.kind = g.kind AND r.id1 = g.id1
                WHERE r.status = 'active'
                ORDER BY r.specificity DESC, r.seq
                """, [groups.map(\.kind), groups.map(\.id1)]).map(Self.registryEntry(from:))
        }
        var result: [PhysicalBeaconIdentity: [RegistryEntry]] = [:]
        for identity in Set(identities) {
            result[identity] = candidates.filter { $0.identity.matches(identity) }
        }
        return result
    }


    static func registryEntry(from row: SQLRow) throws -> RegistryEntry {
        let kind = PhysicalBeaconKind(rawValue: try row.string("kind")) ?? .iBeacon
        var position: InstalledPosition?
        if let lon = try row.optionalDouble("lon"), let lat = try row.optionalDouble("lat") {
            position = InstalledPosition(position: Position(lon: lon, lat: lat), level: try row.optionalInt("level"))
        }
        return RegistryEntry(
            id: RegistryID(uncheckedRawValue: try row.string("id")),
            identity: PhysicalBeaconIdentity(kind: kind, id1: try row.string("id1"), id2: try row.optionalInt("id2"),
                                             id3: try row.optionalInt("id3"), instance: try row.optionalString("instance")),
            beacon: BeaconID(uncheckedRawValue: try row.string("beacon_id")), owner: UserID(uncheckedRawValue: try row.string("owner")),
            position: position, measuredPower: try row.optionalInt("measured_power"),
            status: RegistryEntry.Status(rawValue: try row.string("status")) ?? .inactive,
            version: try row.int("version"), createdAt: try row.timestamp("created_at"), updatedAt: try row.timestamp("updated_at"))
    }

    // MARK: Sighting batches

    package func sightingBatchResponse(user: UserID, batchID: String) async throws -> String? {
        try await read { db in
            try await db.row("SELECT response FROM sighting_batches WHERE user_id = $1 AND batch_id = $2",
                             [user.rawValue, batchID])?.string("response")
        }
    }

    /// A concurrent store of the same batch waits on the primary key until the first commits,
    /// then inserts nothing; the following SELECT (a new snapshot under read committed) returns
    /// the answer that won.
    package func storeSightingBatchResponse(user: UserID, batchID: String, response: String, at: Timestamp,
                                            expireBefore: Timestamp) async throws -> String {
        try await write { db, _ in
            try await db.rows("DELETE FROM sighting_batches WHERE created_at < $1", [expireBefore.millis])
            try await db.rows("""
                INSERT INTO sighting_batches(user_id, batch_id, response, created_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (user_id, batch_id) DO NOTHING
                """, [user.rawValue, batchID, response, at.millis])
            return try await db.row("SELECT response FROM sighting_batches WHERE user_id = $1 AND batch_id = $2",
                                    [user.rawValue, batchID])?.string("response") ?? response
        }
    }
}

private struct RegistryGroupKey: Hashable {
    var kind: String
    var id1: String
}
