package import DBeaconCore
import DBeaconGeo
import Foundation
import GRDB

extension SpatiaLiteStore {
    // MARK: Writes

    package func insertBeacon(_ beacon: Beacon, events: [Event]) async throws {
        try await write { db, changes in
            try Self.insert(beacon, db: db)
            try Self.insertEvents(db, events)
            changes.append(.upsert(beacon))
        }
    }

    package func insertBeacons(_ beacons: [Beacon]) async throws {
        try await write { db, changes in
            // Rows first, then tags/members/relationships: relationships among the new beacons
            // (even cycles, such as promotions related to each other) then find their targets.
            for beacon in beacons { try Self.insertRow(beacon, db: db) }
            for beacon in beacons {
                try Self.writeChildren(beacon, db: db, replacing: false)
                changes.append(.upsert(beacon))
            }
        }
    }

    package func updateBeacon(_ beacon: Beacon, expectedVersion: Int, fanOut: FollowerFanOut?, events: [Event]) async throws -> Int {
        try await write { db, changes in
            try Self.checkVersion(db, id: beacon.id, expected: expectedVersion)
            try Self.update(beacon, db: db)
            try Self.dropUninvitedAttendees(db, meeting: beacon.id)
            if let fanOut { try Self.fanOutToFollowers(db, beacon: beacon.id, fanOut) }
            try Self.insertEvents(db, events)
            var b = beacon
            b.followersCount = try Int.fetchOne(db, sql: "SELECT followers_count FROM beacons WHERE id = ?",
                                                arguments: [beacon.id.rawValue]) ?? beacon.followersCount
            changes.append(.upsert(b))
            return b.followersCount
        }
    }

    package func deleteBeacon(id: BeaconID, expectedVersion: Int?, fanOut: FollowerFanOut?) async throws {
        try await write { db, changes in
            try Self.checkVersion(db, id: id, expected: expectedVersion)
            // Followers are notified before the cascade removes them.
            if let fanOut { try Self.fanOutToFollowers(db, beacon: id, fanOut) }
            try db.execute(sql: "DELETE FROM beacons WHERE id = ?", arguments: [id.rawValue])
            changes.append(.delete(id))
        }
    }

    /// Throws `notFound` for a missing beacon and `preconditionFailed` for a stale version.
    static func checkVersion(_ db: Database, id: BeaconID, expected: Int?) throws {
        guard let current = try Int.fetchOne(db, sql: "SELECT version FROM beacons WHERE id = ?", arguments: [id.rawValue]) else {
            throw DBeaconError.notFound("beacon \(id)")
        }
        if let expected, current != expected {
            throw DBeaconError(.preconditionFailed, code: "version_mismatch",
                               message: "the beacon is at version \(current), not \(expected); fetch it again and retry")
        }
    }

    static func insert(_ b: Beacon, db: Database) throws {
        try insertRow(b, db: db)
        try writeChildren(b, db: db, replacing: false)
    }

    static func insertRow(_ b: Beacon, db: Database) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM beacons WHERE id = ?", arguments: [b.id.rawValue]) == true {
            throw DBeaconError.conflict("a beacon with id \(b.id) already exists", code: "beacon_exists", path: "id")
        }
        let statement = try db.cachedStatement(sql: """
            INSERT INTO beacons(id, owner, name, description, lon, lat, perimeter_kind, radius_m, lifetime_start,
                lifetime_end, is_private, tracks_owner, service, content, followers_count, version, created_at,
                updated_at, area)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, GeomFromWKB(?, 4326))
            """)
        try statement.execute(arguments: StatementArguments(columnValues(b) + [b.followersCount, b.version, b.createdAt.millis,
                                                                                 b.updatedAt.millis, Data(StoredBeacon.areaWKB(b))]))
    }

    static func update(_ b: Beacon, db: Database) throws {
        let statement = try db.cachedStatement(sql: """
            UPDATE beacons SET id = ?, owner = ?, name = ?, description = ?, lon = ?, lat = ?, perimeter_kind = ?,
                radius_m = ?, lifetime_start = ?, lifetime_end = ?, is_private = ?, tracks_owner = ?, service = ?,
                content = ?, version = ?, updated_at = ?, area = GeomFromWKB(?, 4326)
            WHERE id = ?
            """)
        try statement.execute(arguments: StatementArguments(columnValues(b) + [b.version, b.updatedAt.millis,
                                                                                 Data(StoredBeacon.areaWKB(b)), b.id.rawValue]))
        try writeChildren(b, db: db, replacing: true)
    }

    /// Moves a beacon's location (and a circle's search area) without a new version: live
    /// positions of moving beacons are not edits.
    static func move(_ id: BeaconID, to location: Position, radiusM: Double?, db: Database) throws {
        let area = radiusM.map { WKB.boxes(Geodesy.boundingBoxes(center: location, radiusM: $0)) }
        if let area {
            try db.execute(sql: "UPDATE beacons SET lon = ?, lat = ?, area = GeomFromWKB(?, 4326) WHERE id = ?",
                           arguments: [location.lon, location.lat, Data(area), id.rawValue])
        } else {
            try db.execute(sql: "UPDATE beacons SET lon = ?, lat = ? WHERE id = ?",
                           arguments: [location.lon, location.lat, id.rawValue])
        }
    }

    private static func columnValues(_ b: Beacon) -> [(any DatabaseValueConvertible)?] {
        let kind = StoredBeacon.perimeterKind(b.perimeter)
        return [
            b.id.rawValue, b.owner.rawValue, b.name, b.description, b.location.lon, b.location.lat, kind,
            b.perimeter.radiusM, b.lifetime?.start?.millis, b.lifetime?.end?.millis, b.isPrivate, b.tracksOwner,
            b.service, StoredBeacon.contentColumn(b.content),
        ]
    }

    static func writeChildren(_ b: Beacon, db: Database, replacing: Bool) throws {
        let id = b.id.rawValue
        if replacing {
            try db.execute(sql: "DELETE FROM beacon_tags WHERE beacon_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM beacon_members WHERE beacon_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM relationships WHERE source_id = ?", arguments: [id])
        }
        if !b.tags.isEmpty {
            let s = try db.cachedStatement(sql: "INSERT INTO beacon_tags(beacon_id, tag, position) VALUES (?, ?, ?)")
            for (i, tag) in b.tags.enumerated() { try s.execute(arguments: [id, tag, i]) }
        }
        if let members = b.members, !members.isEmpty {
            let s = try db.cachedStatement(sql: "INSERT INTO beacon_members(beacon_id, user_id, position) VALUES (?, ?, ?)")
            for (i, m) in members.enumerated() { try s.execute(arguments: [id, m.rawValue, i]) }
        }
        if !b.relationships.isEmpty {
            let s = try db.cachedStatement(sql: "INSERT INTO relationships(source_id, type, target_id, ord, position) VALUES (?, ?, ?, ?, ?)")
            for (i, r) in b.relationships.enumerated() {
                guard try Bool.fetchOne(db, sql: "SELECT 1 FROM beacons WHERE id = ?", arguments: [r.target.rawValue]) == true else {
                    throw DBeaconError.invalid("properties.relationships[\(i)].target", "beacon \(r.target) not found",
                                               code: "unknown_target")
                }
                try s.execute(arguments: [id, r.type, r.target.rawValue, r.order, i])
            }
        }
    }

    // MARK: Reads

    static let beaconColumns = """
        b.seq, b.id, b.owner, b.name, b.description, b.lon, b.lat, b.perimeter_kind, b.radius_m, b.lifetime_start,
        b.lifetime_end, b.is_private, b.tracks_owner, b.service, b.content, b.followers_count, b.version,
        b.created_at, b.updated_at, CASE WHEN b.perimeter_kind = 'circle' THEN NULL ELSE AsBinary(b.area) END AS area_wkb
        """

    package func beacon(id: BeaconID) async throws -> Beacon? {
        try await read { db in
            try Self.fetchBeacons(db, sql: "SELECT \(Self.beaconColumns) FROM beacons b WHERE b.id = ?",
                                  arguments: [id.rawValue]).first
        }
    }

    package func beacons(ids: [BeaconID]) async throws -> [Beacon] {
        guard !ids.isEmpty else { return [] }
        return try await read { db in
            var result: [Beacon] = []
            for chunk in ids.chunked(500) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                result += try Self.fetchBeacons(db, sql: "SELECT \(Self.beaconColumns) FROM beacons b WHERE b.id IN (\(marks))",
                                                arguments: StatementArguments(chunk.map(\.rawValue)))
            }
            return result
        }
    }

    package func trackingBeacons(owner: UserID) async throws -> [Beacon] {
        try await read { db in
            try Self.fetchBeacons(db, sql: "SELECT \(Self.beaconColumns) FROM beacons b WHERE b.owner = ? AND b.tracks_owner = 1",
                                  arguments: [owner.rawValue])
        }
    }

    package func beaconCount() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM beacons") ?? 0 }
    }

    package func beaconCount(owner: UserID) async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM beacons WHERE owner = ?", arguments: [owner.rawValue]) ?? 0 }
    }

    /// SQL that keeps beacons `viewer` may see at `:now` (owner always; others while alive,
    /// and for private beacons only members). Bind `uid` and `now` by name.
    static func visibilityClause(_ viewer: Principal) -> String {
        switch viewer {
        case .admin:
            return "1"
        case .user:
            return """
                (b.owner = :uid OR ((b.is_private = 0 OR EXISTS (SELECT 1 FROM beacon_members m
                    WHERE m.beacon_id = b.id AND m.user_id = :uid))
                 AND (b.lifetime_start IS NULL OR b.lifetime_start <= :now)
                 AND (b.lifetime_end IS NULL OR b.lifetime_end > :now)))
                """
        }
    }

    static func tagClause(_ tags: [String], arguments: inout [String: (any DatabaseValueConvertible)?]) -> String {
        guard !tags.isEmpty else { return "1" }
        var names: [String] = []
        for (i, tag) in tags.enumerated() {
            names.append(":tag\(i)")
            arguments["tag\(i)"] = tag
        }
        return "EXISTS (SELECT 1 FROM beacon_tags t WHERE t.beacon_id = b.id AND t.tag IN (\(names.joined(separator: ","))))"
    }

    package func listBeacons(_ query: BeaconListQuery, viewer: Principal, now: Timestamp) async throws -> Page<Beacon> {
        try await read { db in
            var args: [String: (any DatabaseValueConvertible)?] = [
                "uid": viewer.userID?.rawValue, "now": now.millis, "after": query.after ?? 0, "limit": query.limit + 1,
            ]
            var clauses = ["b.seq > :after", Self.visibilityClause(viewer), Self.tagClause(query.tags, arguments: &args)]
            if let owner = query.owner {
                clauses.append("b.owner = :owner")
                args["owner"] = owner.rawValue
            }
            if let service = query.service {
                clauses.append("b.service = :service")
                args["service"] = service
            }
            if let box = query.bbox {
                clauses.append("b.lat BETWEEN :south AND :north")
                clauses.append(box.west <= box.east ? "b.lon BETWEEN :west AND :east" : "(b.lon >= :west OR b.lon <= :east)")
                args["south"] = box.south
                args["north"] = box.north
                args["west"] = box.west
                args["east"] = box.east
            }
            let sql = "SELECT \(Self.beaconColumns) FROM beacons b WHERE \(clauses.joined(separator: " AND ")) ORDER BY b.seq LIMIT :limit"
            let rows = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(args))
            var page = rows
            var next: Int64?
            if rows.count > query.limit {
                page = Array(rows.prefix(query.limit))
                next = page.last?["seq"]
            }
            return Page(items: try Self.beacons(from: page, db: db), next: next)
        }
    }

    package func coveringBeacons(_ query: CoverQuery) async throws -> [Beacon] {
        try await read { db in
            var args: [String: (any DatabaseValueConvertible)?] = [
                "uid": query.viewer.userID?.rawValue, "at": query.at.millis, "now": query.visibleNow.millis,
                "lon": query.point.lon, "lat": query.point.lat,
            ]
            var clauses = [
                """
                b.seq IN (SELECT pkid FROM idx_beacons_area
                          WHERE xmin <= :lon AND xmax >= :lon AND ymin <= :lat AND ymax >= :lat)
                """,
                "(b.lifetime_start IS NULL OR b.lifetime_start <= :at)",
                "(b.lifetime_end IS NULL OR b.lifetime_end > :at)",
                Self.visibilityClause(query.viewer),
                Self.tagClause(query.tags, arguments: &args),
                """
                CASE b.perimeter_kind
                    WHEN 'circle' THEN dbeacon_circle_contains(b.lat, b.lon, b.radius_m, :lat, :lon)
                    ELSE ST_Covers(b.area, MakePoint(:lon, :lat, 4326)) END = 1
                """,
            ]
            if let service = query.service {
                clauses.append("b.service = :service")
                args["service"] = service
            }
            let sql = "SELECT \(Self.beaconColumns) FROM beacons b WHERE \(clauses.joined(separator: " AND "))"
            return try Self.fetchBeacons(db, sql: sql, arguments: StatementArguments(args))
        }
    }

    package func forEachBeacon(batchSize: Int, _ body: @Sendable ([Beacon]) throws -> Void) async throws {
        var after: Int64 = 0
        while true {
            let start = after
            let (batch, last): ([Beacon], Int64?) = try await read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT \(Self.beaconColumns) FROM beacons b WHERE b.seq > ? ORDER BY b.seq LIMIT ?",
                                            arguments: [start, batchSize])
                return (try Self.beacons(from: rows, db: db), rows.last?["seq"])
            }
            guard let last else { return }
            try body(batch)
            after = last
        }
    }

    // MARK: Row decoding

    static func fetchBeacons(_ db: Database, sql: String, arguments: StatementArguments) throws -> [Beacon] {
        try beacons(from: Row.fetchAll(db, sql: sql, arguments: arguments), db: db)
    }

    /// Builds beacons from rows of `beaconColumns`, loading tags, members and relationships
    /// for all of them with one query per table and chunk.
    static func beacons(from rows: [Row], db: Database) throws -> [Beacon] {
        guard !rows.isEmpty else { return [] }
        let ids: [String] = rows.map { $0["id"] }
        var tags: [String: [String]] = [:]
        var members: [String: [UserID]] = [:]
        var relationships: [String: [Relationship]] = [:]
        for chunk in ids.chunked(500) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            let args = StatementArguments(chunk)
            for row in try Row.fetchAll(db, sql: "SELECT beacon_id, tag FROM beacon_tags WHERE beacon_id IN (\(marks)) ORDER BY beacon_id, position", arguments: args) {
                tags[row["beacon_id"], default: []].append(row["tag"])
            }
            for row in try Row.fetchAll(db, sql: "SELECT beacon_id, user_id FROM beacon_members WHERE beacon_id IN (\(marks)) ORDER BY beacon_id, position", arguments: args) {
                members[row["beacon_id"], default: []].append(UserID(uncheckedRawValue: row["user_id"]))
            }
            for row in try Row.fetchAll(db, sql: "SELECT source_id, type, target_id, ord FROM relationships WHERE source_id IN (\(marks)) ORDER BY source_id, position", arguments: args) {
                relationships[row["source_id"], default: []].append(
                    Relationship(type: row["type"], target: BeaconID(uncheckedRawValue: row["target_id"]), order: row["ord"]))
            }
        }
        return try rows.map { row in
            let id: String = row["id"]
            let kind: String = row["perimeter_kind"]
            let perimeter: Perimeter
            switch kind {
            case "circle":
                perimeter = .circle(radiusM: row["radius_m"])
            default:
                let data: Data = row["area_wkb"]
                let polygons: [Polygon]
                do { polygons = try WKB.decodePolygons(data) } catch {
                    throw DBeaconError.internalError("corrupt perimeter of beacon \(id)")
                }
                perimeter = kind == "polygon" && polygons.count == 1 ? .polygon(polygons[0]) : .multiPolygon(polygons)
            }
            let start: Int64? = row["lifetime_start"]
            let end: Int64? = row["lifetime_end"]
            let isPrivate: Bool = row["is_private"]
            return Beacon(
                id: BeaconID(uncheckedRawValue: id),
                name: row["name"],
                description: row["description"],
                owner: UserID(uncheckedRawValue: row["owner"]),
                location: Position(lon: row["lon"], lat: row["lat"]),
                perimeter: perimeter,
                lifetime: start == nil && end == nil ? nil : Lifetime(start: start.map(Timestamp.init(millis:)), end: end.map(Timestamp.init(millis:))),
                members: isPrivate ? (members[id] ?? []) : nil,
                tags: tags[id] ?? [],
                relationships: relationships[id] ?? [],
                content: StoredBeacon.content(fromColumn: row["content"]),
                tracksOwner: row["tracks_owner"],
                service: row["service"],
                followersCount: row["followers_count"],
                version: row["version"],
                createdAt: Timestamp(millis: row["created_at"]),
                updatedAt: Timestamp(millis: row["updated_at"])
            )
        }
    }

    // MARK: Followers

    package func follow(beacon: BeaconID, user: UserID, at: Timestamp) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "INSERT OR IGNORE INTO followers(beacon_id, user_id, created_at) VALUES (?, ?, ?)",
                           arguments: [beacon.rawValue, user.rawValue, at.millis])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "UPDATE beacons SET followers_count = followers_count + 1 WHERE id = ?", arguments: [beacon.rawValue])
            return true
        }
    }

    package func unfollow(beacon: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM followers WHERE beacon_id = ? AND user_id = ?", arguments: [beacon.rawValue, user.rawValue])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "UPDATE beacons SET followers_count = followers_count - 1 WHERE id = ?", arguments: [beacon.rawValue])
            return true
        }
    }

    package func followers(of beacon: BeaconID, limit: Int, after: Int64?) async throws -> Page<Follower> {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT f.seq, f.user_id, f.created_at, u.name FROM followers f JOIN users u ON u.id = f.user_id
                WHERE f.beacon_id = ? AND f.seq > ? ORDER BY f.seq LIMIT ?
                """, arguments: [beacon.rawValue, after ?? 0, limit + 1])
            let page = rows.prefix(limit)
            return Page(items: page.map { Follower(user: UserID(uncheckedRawValue: $0["user_id"]), name: $0["name"],
                                                    since: Timestamp(millis: $0["created_at"])) },
                        next: rows.count > limit ? page.last?["seq"] : nil)
        }
    }

    package func isFollowing(beacon: BeaconID, user: UserID) async throws -> Bool {
        try await read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM followers WHERE beacon_id = ? AND user_id = ?",
                              arguments: [beacon.rawValue, user.rawValue]) ?? false
        }
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
