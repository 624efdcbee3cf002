package import DBeaconCore
import DBeaconGeo
import Foundation

/// Beacons, on either database. Circles are stored as their
/// geodesic bounding boxes (so the spatial index finds them) and tested exactly in Swift with
/// `Geodesy.circleContains`, as the in-memory index does.
extension SQLStore {
    // MARK: Writes

    package func insertBeacon(_ beacon: Beacon, events: [Event]) async throws {
        try await write { db, log in
            try await Self.insertRow(beacon, db: db)
            try await Self.writeChildren(beacon, db: db, replacing: false)
            try await Self.insertEvents(db, events)
            log.changes.append(.upsert(beacon))
        }
    }

    package func insertBeacons(_ beacons: [Beacon]) async throws {
        try await write { db, log in
            // Rows first, then children: relationships among the new beacons find their targets.
            try await Self.insertRows(beacons, db: db)
            for beacon in beacons {
                try await Self.writeChildren(beacon, db: db, replacing: false)
                log.changes.append(.upsert(beacon))
            }
        }
    }

    package func updateBeacon(_ beacon: Beacon, expectedVersion: Int, fanOut: FollowerFanOut?, events: [Event]) async throws -> Int {
        try await write { db, log in
            try await Self.checkVersion(db, id: beacon.id, expected: expectedVersion)
            try await Self.update(beacon, db: db)
            try await Self.dropUninvitedAttendees(db, meeting: beacon.id, log: &log)
            if let fanOut { try await Self.fanOutToFollowers(db, beacon: beacon.id, fanOut) }
            try await Self.insertEvents(db, events)
            var b = beacon
            b.followersCount = try await db.row("SELECT followers_count FROM beacons WHERE id = $1", [beacon.id.rawValue])?
                .int("followers_count") ?? beacon.followersCount
            log.changes.append(.upsert(b))
            return b.followersCount
        }
    }

    package func deleteBeacon(id: BeaconID, expectedVersion: Int?, fanOut: FollowerFanOut?) async throws {
        try await write { db, log in
            try await Self.checkVersion(db, id: id, expected: expectedVersion)
            if let fanOut { try await Self.fanOutToFollowers(db, beacon: id, fanOut) }
            // Beacons that link to this one lose those relationships with it (cascade).
            let linking = try await db.rows("SELECT DISTINCT source_id FROM relationships WHERE target_id = $1 AND source_id <> $1",
                                            [id.rawValue])
            try await db.rows("DELETE FROM beacons WHERE id = $1", [id.rawValue])
            log.changes.append(.delete(id))
            for row in linking { log.touch(BeaconID(uncheckedRawValue: try row.string("source_id"))) }
        }
    }

    /// Locks the beacon's row for the transaction; `notFound` for a missing beacon,
    /// `preconditionFailed` for a stale version.
    static func checkVersion(_ db: any SQLSession, id: BeaconID, expected: Int?) async throws {
        guard let current = try await db.row("SELECT version FROM beacons WHERE id = $1\(db.dialect.forUpdate)", [id.rawValue])?.int("version") else {
            throw DBeaconError.notFound("beacon \(id)")
        }
        if let expected, current != expected {
            throw DBeaconError(.preconditionFailed, code: "version_mismatch",
                               message: "the beacon is at version \(current), not \(expected); fetch it again and retry")
        }
    }

    static func insertRow(_ b: Beacon, db: any SQLSession) async throws {
        try await insertRows([b], db: db)
    }

    /// Inserts the rows of `beacons` in order, in multi-row statements of power-of-two sizes up
    /// to 256 (a bulk insert makes a round trip per slice, not per beacon, and few statement
    /// shapes are cached); `beacon_exists` names the first id that is already taken (or repeated
    /// among them), and the caller's transaction then rolls back.
    static func insertRows(_ beacons: [Beacon], db: any SQLSession) async throws {
        for slice in beacons.chunkedInPowersOfTwo() {  // 256 × 20 arguments: below SQLite's and PostgreSQL's limits
            var s = SQLStatement()
            let values = slice.map { b in
                let columns = (columnValues(b) + [b.followersCount, b.version, b.createdAt.millis, b.updatedAt.millis]).map { s.bind($0) }
                return "(\(columns.joined(separator: ", ")), \(db.dialect.geometry(fromWKB: s.bind(SQLBlob(StoredBeacon.areaWKB(b))))))"
            }
            let inserted = try await db.rows("""
                INSERT INTO beacons(id, owner, name, description, lon, lat, perimeter_kind, radius_m, lifetime_start,
                    lifetime_end, is_private, tracks_owner, service, content, content_policy, followers_count, version, created_at,
                    updated_at, area)
                VALUES \(values.joined(separator: ",\n"))
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, s.arguments)
            if inserted.count < slice.count {
                var fresh = Set<String>()
                for row in inserted { fresh.insert(try row.string("id")) }
                // The first that was not inserted: taken before, or an earlier copy in this call.
                let taken = slice.first { fresh.remove($0.id.rawValue) == nil } ?? slice[slice.startIndex]
                throw DBeaconError.conflict("a beacon with id \(taken.id) already exists", code: "beacon_exists", path: "id")
            }
        }
    }

    static func update(_ b: Beacon, db: any SQLSession) async throws {
        try await db.rows("""
            UPDATE beacons SET id = $1, owner = $2, name = $3, description = $4, lon = $5, lat = $6, perimeter_kind = $7,
                radius_m = $8, lifetime_start = $9, lifetime_end = $10, is_private = $11, tracks_owner = $12, service = $13,
                content = $14, content_policy = $15, version = $16, updated_at = $17, area = \(db.dialect.geometry(fromWKB: "$18"))
            WHERE id = $19
            """, columnValues(b) + [b.version, b.updatedAt.millis, SQLBlob(StoredBeacon.areaWKB(b)), b.id.rawValue])
        try await writeChildren(b, db: db, replacing: true)
    }

    /// Moves a beacon's location (and a circle's search area) without a new version.
    static func move(_ id: BeaconID, to location: Position, radiusM: Double?, db: any SQLSession) async throws {
        if let radiusM {
            let area = WKB.boxes(Geodesy.boundingBoxes(center: location, radiusM: radiusM))
            try await db.rows("UPDATE beacons SET lon = $1, lat = $2, area = \(db.dialect.geometry(fromWKB: "$3")) WHERE id = $4",
                              [location.lon, location.lat, SQLBlob(area), id.rawValue])
        } else {
            try await db.rows("UPDATE beacons SET lon = $1, lat = $2 WHERE id = $3", [location.lon, location.lat, id.rawValue])
        }
    }

    private static func columnValues(_ b: Beacon) -> [any SQLArgument] {
        let kind = StoredBeacon.perimeterKind(b.perimeter)
        return [
            b.id.rawValue, b.owner.rawValue, b.name, b.description, b.location.lon, b.location.lat, kind,
            b.perimeter.radiusM, b.lifetime?.start?.millis, b.lifetime?.end?.millis, b.isPrivate, b.tracksOwner,
            b.service, StoredBeacon.contentColumn(b.content), b.contentPolicy.rawValue,
        ]
    }

    static func writeChildren(_ b: Beacon, db: any SQLSession, replacing: Bool) async throws {
        let id = b.id.rawValue
        if replacing {
            try await db.rows("DELETE FROM beacon_tags WHERE beacon_id = $1", [id])
            try await db.rows("DELETE FROM beacon_members WHERE beacon_id = $1", [id])
            try await db.rows("DELETE FROM relationships WHERE source_id = $1", [id])
        }
        if !b.tags.isEmpty {
            try await db.rows("""
                INSERT INTO beacon_tags(beacon_id, tag, position)
                SELECT $1, t.value, t.position FROM \(db.dialect.elements("$2", as: "t"))
                """, [id, b.tags])
        }
        if let members = b.members, !members.isEmpty {
            try await db.rows("""
                INSERT INTO beacon_members(beacon_id, user_id, position)
                SELECT $1, m.value, m.position FROM \(db.dialect.elements("$2", as: "m"))
                """, [id, members.map(\.rawValue)])
        }
        for (i, r) in b.relationships.enumerated() {
            guard try await db.exists("SELECT 1 FROM beacons WHERE id = $1", [r.target.rawValue]) else {
                throw DBeaconError.invalid("properties.relationships[\(i)].target", "beacon \(r.target) not found",
                                           code: "unknown_target")
            }
            try await db.rows("INSERT INTO relationships(source_id, type, target_id, ord, position) VALUES ($1, $2, $3, $4, $5)",
                              [id, r.type, r.target.rawValue, r.order, i])
        }
    }

    // MARK: Reads

    /// The columns `beacons(from:db:)` reads, of `beacons b`.
    static func beaconColumns(_ dialect: SQLDialect) -> String {
        """
        b.seq, b.id, b.owner, b.name, b.description, b.lon, b.lat, b.perimeter_kind, b.radius_m, b.lifetime_start,
        b.lifetime_end, b.is_private, b.tracks_owner, b.service, b.content, b.content_policy, b.followers_count, b.version,
        b.created_at, b.updated_at, CASE WHEN b.perimeter_kind = 'circle' THEN NULL ELSE \(dialect.storedGeometry("b.area")) END AS area_wkb
        """
    }

    package func beacon(id: BeaconID) async throws -> Beacon? {
        try await read { db in try await Self.beacons(ids: [id], db: db).first }
    }

    package func beacons(ids: [BeaconID]) async throws -> [Beacon] {
        guard !ids.isEmpty else { return [] }
        return try await read { db in try await Self.beacons(ids: ids, db: db) }
    }

    /// The beacons among `ids` that exist, in no particular order.
    static func beacons(ids: [BeaconID], db: any SQLSession) async throws -> [Beacon] {
        guard !ids.isEmpty else { return [] }
        return try await fetchBeacons(db, "SELECT \(beaconColumns(db.dialect)) FROM beacons b WHERE \(db.dialect.contains("b.id", "$1"))",
                                      [ids.map(\.rawValue)])
    }

    package func trackingBeacons(owner: UserID) async throws -> [Beacon] {
        try await read { db in
            try await Self.fetchBeacons(db, "SELECT \(Self.beaconColumns(db.dialect)) FROM beacons b WHERE b.owner = $1 AND b.tracks_owner",
                                        [owner.rawValue])
        }
    }

    package func beaconCount() async throws -> Int {
        try await read { db in try await db.row("SELECT count(*) AS n FROM beacons")?.int("n") ?? 0 }
    }

    package func beaconCount(owner: UserID) async throws -> Int {
        try await read { db in try await db.row("SELECT count(*) AS n FROM beacons WHERE owner = $1", [owner.rawValue])?.int("n") ?? 0 }
    }

    /// SQL keeping the beacons (`b`) `viewer` may see at `now` (or, with `.cover`, be covered
    /// by): `VisibilityPolicy`'s condition rendered for this table, never written by hand. The
    /// operator's clause is `true` (they see everything; coverage checks lifetimes itself).
    static func visibilityClause(_ viewer: Principal, now: Timestamp, _ s: inout SQLStatement,
                                 access: BeaconAccess = .see) -> String {
        switch viewer {
        case .admin:
            return "true"
        case .user(let user):
            return policyClause(VisibilityPolicy.condition(for: access), viewer: s.bind(user.rawValue), at: s.bind(now.millis), &s)
        }
    }

    /// The policy's condition for the beacon `b` and the viewer whose id is the SQL expression
    /// `viewer` (a parameter, or a column such as a follower's), at the time `at` (a parameter).
    static func policyClause(_ c: VisibilityPolicy.Condition, viewer: String, at: String, _ s: inout SQLStatement) -> String {
        switch c {
        case .viewerIsOwner: return "b.owner = \(viewer)"
        case .viewerIsMember: return "EXISTS (SELECT 1 FROM beacon_members m WHERE m.beacon_id = b.id AND m.user_id = \(viewer))"
        case .isPublic: return "NOT b.is_private"
        case .aliveNow:
            return "((b.lifetime_start IS NULL OR b.lifetime_start <= \(at)) AND (b.lifetime_end IS NULL OR b.lifetime_end > \(at)))"
        case .notEndedNow: return "(b.lifetime_end IS NULL OR b.lifetime_end > \(at))"
        case .isPrivateMeeting: return "(b.service = \(s.bind(ServiceKind.meeting)) AND b.is_private)"
        case .all(let cs): return "(" + cs.map { policyClause($0, viewer: viewer, at: at, &s) }.joined(separator: " AND ") + ")"
        case .any(let cs): return "(" + cs.map { policyClause($0, viewer: viewer, at: at, &s) }.joined(separator: " OR ") + ")"
        }
    }

    static func tagClause(_ tags: [String], _ s: inout SQLStatement, _ dialect: SQLDialect) -> String {
        guard !tags.isEmpty else { return "true" }
        return "EXISTS (SELECT 1 FROM beacon_tags t WHERE t.beacon_id = b.id AND \(dialect.contains("t.tag", s.bind(tags))))"
    }

    package func listBeacons(_ query: BeaconListQuery, viewer: Principal, now: Timestamp) async throws -> Page<Beacon> {
        var s = SQLStatement()
        var clauses = ["b.seq > \(s.bind(query.after ?? 0))", Self.visibilityClause(viewer, now: now, &s), Self.tagClause(query.tags, &s, dialect)]
        if let owner = query.owner { clauses.append("b.owner = \(s.bind(owner.rawValue))") }
        if let service = query.service { clauses.append("b.service = \(s.bind(service))") }
        if !query.perimeterMeets.isEmpty {
            let boxes = query.perimeterMeets.flatMap { box in
                // A box across the antimeridian is two.
                box.west <= box.east ? [box] : [BoundingBox(west: box.west, south: box.south, east: 180, north: box.north),
                                                 BoundingBox(west: -180, south: box.south, east: box.east, north: box.north)]
            }
            clauses.append("(" + boxes.map { box in
                dialect.areaBoxMeets(west: s.bind(box.west), south: s.bind(box.south), east: s.bind(box.east), north: s.bind(box.north))
            }.joined(separator: " OR ") + ")")
        }
        if let box = query.bbox {
            clauses.append("b.lat BETWEEN \(s.bind(box.south)) AND \(s.bind(box.north))")
            let west = s.bind(box.west), east = s.bind(box.east)
            clauses.append(box.west <= box.east ? "b.lon BETWEEN \(west) AND \(east)" : "(b.lon >= \(west) OR b.lon <= \(east))")
        }
        let sql = """
            SELECT \(Self.beaconColumns(dialect)) FROM beacons b WHERE \(clauses.joined(separator: " AND "))
            ORDER BY b.seq LIMIT \(s.bind(query.limit + 1))
            """
        let arguments = s.arguments
        return try await read { db in
            let rows = try await db.rows(sql, arguments)
            var page = rows
            var next: Int64?
            if rows.count > query.limit {
                page = Array(rows.prefix(query.limit))
                next = try page.last?.int64("seq")
            }
            return Page(items: try await Self.beacons(from: page, db: db), next: next)
        }
    }

    package func coveringBeacons(_ query: CoverQuery) async throws -> [Beacon] {
        var s = SQLStatement()
        let lon = s.bind(query.point.lon), lat = s.bind(query.point.lat)
        let point = dialect.point(lon: lon, lat: lat)
        let at = s.bind(query.at.millis)
        var clauses = [
            // The spatial index finds candidates by box; polygons are then tested exactly in
            // SQL, circles in Swift with the geodesic test below.
            dialect.areaBoxContains(lon: lon, lat: lat),
            // Alive at the time asked about: the policy's lifetime test, at `at`.
            Self.policyClause(.aliveNow, viewer: "NULL", at: at, &s),
            Self.visibilityClause(query.viewer, now: query.visibleNow, &s, access: .cover),
            Self.tagClause(query.tags, &s, dialect),
            "(b.perimeter_kind = 'circle' OR ST_Covers(b.area, \(point)))",
        ]
        if let service = query.service { clauses.append("b.service = \(s.bind(service))") }
        let sql = "SELECT \(Self.beaconColumns(dialect)) FROM beacons b WHERE \(clauses.joined(separator: " AND "))"
        let arguments = s.arguments
        let candidates = try await read { db in try await Self.fetchBeacons(db, sql, arguments) }
        return candidates.filter { beacon in
            guard case .circle(let radius) = beacon.perimeter else { return true }
            return Geodesy.circleContains(center: beacon.location, radiusM: radius, point: query.point)
        }
    }

    package func forEachBeacon(batchSize: Int, shard: (index: Int, count: Int), _ body: @Sendable ([Beacon]) async throws -> Void) async throws {
        guard shard.count > 1 else { return try await forEachBeaconInOrder(batchSize: batchSize, body) }
        // Shards take alternate blocks of `batchSize` sequence numbers (each reads only its own
        // rows' pages; filtering on `seq % count` made every reader step through every row).
        // At the end the last number is read again: beacons inserted meanwhile are read too.
        let stride = Int64(shard.count) * Int64(batchSize)
        var start = Int64(shard.index) * Int64(batchSize)
        var last: Int64 = try await lastBeaconSeq()
        while true {
            if start >= last {
                last = try await lastBeaconSeq()
                if start >= last { return }
            }
            let (from, to) = (start, start + Int64(batchSize))
            let batch = try await read { db in
                try await Self.beacons(from: try await db.rows("""
                    SELECT \(Self.beaconColumns(db.dialect)) FROM beacons b WHERE b.seq > $1 AND b.seq <= $2 ORDER BY b.seq
                    """, [from, to]), db: db)
            }
            if !batch.isEmpty { try await body(batch) }
            start += stride
        }
    }

    /// Every beacon in order of their sequence numbers, a batch at a time (one reader).
    private func forEachBeaconInOrder(batchSize: Int, _ body: @Sendable ([Beacon]) async throws -> Void) async throws {
        var after: Int64 = 0
        while true {
            let start = after
            let (batch, last): ([Beacon], Int64?) = try await read { db in
                let rows = try await db.rows("SELECT \(Self.beaconColumns(db.dialect)) FROM beacons b WHERE b.seq > $1 ORDER BY b.seq LIMIT $2",
                                             [start, batchSize])
                return (try await Self.beacons(from: rows, db: db), try rows.last?.int64("seq"))
            }
            guard let last else { return }
            try await body(batch)
            after = last
        }
    }

    /// The highest sequence number given to a beacon so far (0: none).
    private func lastBeaconSeq() async throws -> Int64 {
        try await read { db in try await db.rows("SELECT COALESCE(MAX(seq), 0) AS last FROM beacons", []).first?.int64("last") ?? 0 }
    }

    // MARK: Row decoding

    /// A stored perimeter: PostGIS answers WKB; SpatiaLite its own blob, decoded here without
    /// the cost of `AsBinary` (a third of loading 1M beacons), or, for a blob this decoder does
    /// not read, converted by SpatiaLite.
    static func decodeArea(_ bytes: [UInt8], id: String, db: any SQLSession) async throws -> [Polygon] {
        guard db.dialect == .sqlite else { return try WKB.decodePolygons(bytes) }
        if let polygons = try? WKB.decodeSpatiaLitePolygons(bytes) { return polygons }
        let rows = try await db.rows("SELECT \(db.dialect.wkb("area")) AS wkb FROM beacons WHERE id = $1", [id])
        guard let row = rows.first else { throw DBeaconError.internalError("beacon \(id) vanished while read") }
        return try WKB.decodePolygons(try row.bytes("wkb"))
    }

    static func fetchBeacons(_ db: any SQLSession, _ sql: String, _ arguments: [any SQLArgument]) async throws -> [Beacon] {
        try await beacons(from: db.rows(sql, arguments), db: db)
    }

    /// Builds beacons from rows of `beaconColumns`, loading tags, members and relationships
    /// for all of them with one query per table.
    static func beacons(from rows: [SQLRow], db: any SQLSession) async throws -> [Beacon] {
        guard let first = rows.first else { return [] }
        // Columns by position, looked up once (a load reads a million rows of twenty columns).
        let c = BeaconColumns(first.columns)
        let ids = try rows.map { try $0.string(c.id) }
        let idList = db.dialect.boundList(ids)
        // Each beacon's rows of `table` (alias `x`, beacon column `key`), in `position` order, as
        // `value` reads them (`columns` first, looked up once per result): one array per row of
        // `rows`, in their order. Selected by the ids' positions in the bound list and put in
        // place by them: no dictionary of ids, and no second pass over the beacons' own rows
        // (a join on `beacons` to select a load's block read its table pages again for each of
        // the three tables: a third of that block's reading).
        func related<T>(_ table: String, key: String, _ columns: String...,
                        value: (SQLRow, [SQLColumn]) throws -> T) async throws -> [[T]] {
            let selected = columns.map { "x.\($0)" }.joined(separator: ", ")
            var out = [[T]](repeating: [], count: rows.count)
            let related = try await db.rows("""
                SELECT e.position AS beacon_position, \(selected) FROM \(db.dialect.elements("$1", as: "e"))
                JOIN \(table) x ON x.\(key) = e.value ORDER BY e.position, x.position
                """, [idList])
            guard let first = related.first else { return out }
            let positionColumn = SQLColumn("beacon_position", in: first.columns)
            let valueColumns = columns.map { SQLColumn($0, in: first.columns) }
            for row in related {
                let position = try row.int(positionColumn)
                guard out.indices.contains(position) else {
                    throw DBeaconError.internalError("database error", cause: "\(table) row for position \(position) of \(out.count)")
                }
                out[position].append(try value(row, valueColumns))
            }
            return out
        }
        let tags = try await related("beacon_tags", key: "beacon_id", "tag") { row, c in try row.string(c[0]) }
        let members = try await related("beacon_members", key: "beacon_id", "user_id") { row, c in
            UserID(uncheckedRawValue: try row.string(c[0]))
        }
        let relationships = try await related("relationships", key: "source_id", "type", "target_id", "ord") { row, c in
            Relationship(type: try row.string(c[0]), target: BeaconID(uncheckedRawValue: try row.string(c[1])), order: try row.optionalInt(c[2]))
        }
        var areas = [[Polygon]](repeating: [], count: rows.count)
        for (i, row) in rows.enumerated() where try row.string(c.perimeterKind) != "circle" {
            do { areas[i] = try await Self.decodeArea(try row.bytes(c.area), id: ids[i], db: db) } catch {
                throw DBeaconError.internalError("corrupt perimeter of beacon \(ids[i])")
            }
        }
        return try rows.enumerated().map { i, row in
            let id = ids[i]
            let kind = try row.string(c.perimeterKind)
            let perimeter: Perimeter
            switch kind {
            case "circle":
                perimeter = .circle(radiusM: try row.double(c.radius))
            default:
                let polygons = areas[i]
                perimeter = kind == "polygon" && polygons.count == 1 ? .polygon(polygons[0]) : .multiPolygon(polygons)
            }
            let start = try row.optionalTimestamp(c.lifetimeStart)
            let end = try row.optionalTimestamp(c.lifetimeEnd)
            let isPrivate = try row.bool(c.isPrivate)
            return Beacon(
                id: BeaconID(uncheckedRawValue: id),
                name: try row.string(c.name),
                description: try row.optionalString(c.description),
                owner: UserID(uncheckedRawValue: try row.string(c.owner)),
                location: Position(lon: try row.double(c.lon), lat: try row.double(c.lat)),
                perimeter: perimeter,
                lifetime: start == nil && end == nil ? nil : Lifetime(start: start, end: end),
                members: isPrivate ? members[i] : nil,
                tags: tags[i],
                relationships: relationships[i],
                content: StoredBeacon.content(fromColumn: try row.string(c.content)),
                tracksOwner: try row.bool(c.tracksOwner),
                contentPolicy: ContentPolicy(rawValue: try row.string(c.contentPolicy)) ?? .owner,
                service: try row.optionalString(c.service),
                followersCount: try row.int(c.followersCount),
                version: try row.int(c.version),
                createdAt: try row.timestamp(c.createdAt),
                updatedAt: try row.timestamp(c.updatedAt)
            )
        }
    }

}

/// The columns of `SQLStore.beaconColumns` in one result.
private struct BeaconColumns {
    let id, owner, name, description, lon, lat, perimeterKind, radius, lifetimeStart, lifetimeEnd, isPrivate,
        tracksOwner, service, content, contentPolicy, followersCount, version, createdAt, updatedAt, area: SQLColumnPosition

    init(_ columns: SQLColumns) {
        func column(_ name: StaticString) -> SQLColumnPosition { SQLColumnPosition(name, in: columns) }
        id = column("id"); owner = column("owner"); name = column("name"); description = column("description")
        lon = column("lon"); lat = column("lat"); perimeterKind = column("perimeter_kind"); radius = column("radius_m")
        lifetimeStart = column("lifetime_start"); lifetimeEnd = column("lifetime_end"); isPrivate = column("is_private")
        tracksOwner = column("tracks_owner"); service = column("service"); content = column("content")
        contentPolicy = column("content_policy"); followersCount = column("followers_count"); version = column("version")
        createdAt = column("created_at"); updatedAt = column("updated_at"); area = column("area_wkb")
    }
}
