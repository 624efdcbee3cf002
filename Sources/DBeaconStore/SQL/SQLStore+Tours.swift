package import DBeaconCore
import Foundation

/// City tours: followed tours, visits, media at places (migration v4), on either database.
extension SQLStore {
    package func tours(withStops places: [BeaconID]) async throws -> [BeaconID] {
        guard !places.isEmpty else { return [] }
        return try await read { db in
            try await db.rows("""
                SELECT DISTINCT source_id FROM relationships WHERE type = 'tour' AND \(db.dialect.contains("target_id", "$1")) ORDER BY source_id
                """, [places.map(\.rawValue)]).map { BeaconID(uncheckedRawValue: try $0.string("source_id")) }
        }
    }

    package func followTour(_ tour: BeaconID, user: UserID, at: Timestamp) async throws -> Timestamp {
        try await write { db, log in
            try await db.rows("""
                INSERT INTO tour_followers(tour_id, user_id, started_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING
                """, [tour.rawValue, user.rawValue, at.millis])
            try await Self.addFollower(db, beacon: tour, user: user, at: at, log: &log)
            return try await db.row("SELECT started_at FROM tour_followers WHERE tour_id = $1 AND user_id = $2",
                                    [tour.rawValue, user.rawValue])?.timestamp("started_at") ?? at
        }
    }

    package func unfollowTour(_ tour: BeaconID, user: UserID) async throws -> Bool {
        try await write { db, log in
            guard try await !db.rows("DELETE FROM tour_followers WHERE tour_id = $1 AND user_id = $2 RETURNING user_id",
                                     [tour.rawValue, user.rawValue]).isEmpty else { return false }
            try await Self.removeFollower(db, beacon: tour, user: user, log: &log)
            return true
        }
    }

    package func tourStart(_ tour: BeaconID, user: UserID) async throws -> Timestamp? {
        try await read { db in
            try await db.row("SELECT started_at FROM tour_followers WHERE tour_id = $1 AND user_id = $2",
                             [tour.rawValue, user.rawValue])?.timestamp("started_at")
        }
    }

    package func followedTours(user: UserID, containing places: [BeaconID]) async throws -> [FollowedTourStop] {
        guard !places.isEmpty else { return [] }
        let request = FollowedToursRequest(user: user, places: places)
        guard let coalescer = fixReads?.tours else { return try await followedTours([request])[0] }
        return try await coalescer.read(request) { [self] requests in try await followedTours(requests) }
    }

    /// `followedTours(user:containing:)` of each request, in one statement.
    func followedTours(_ requests: [FollowedToursRequest]) async throws -> [[FollowedTourStop]] {
        let users = Array(Set(requests.map(\.user.rawValue))), places = Array(Set(requests.flatMap(\.places).map(\.rawValue)))
        let rows = try await readStatement { dialect in
            ("""
            SELECT f.user_id, f.tour_id, r.target_id, f.started_at FROM tour_followers f
            JOIN relationships r ON r.source_id = f.tour_id AND r.type = 'tour'
            WHERE \(dialect.contains("f.user_id", "$1")) AND \(dialect.contains("r.target_id", "$2"))
            ORDER BY f.user_id, f.tour_id, r.target_id
            """, [users, places])
        }
        var byUser: [UserID: [FollowedTourStop]] = [:]
        for row in rows {
            byUser[UserID(uncheckedRawValue: try row.string("user_id")), default: []].append(
                (BeaconID(uncheckedRawValue: try row.string("tour_id")), BeaconID(uncheckedRawValue: try row.string("target_id")),
                 try row.timestamp("started_at")))
        }
        return requests.map { request in
            let places = Set(request.places)
            return (byUser[request.user] ?? []).filter { places.contains($0.place) }
        }
    }

    package func recordVisits(_ visits: [TourVisit]) async throws {
        guard !visits.isEmpty else { return }
        try await write { db, _ in
            for v in visits {
                try await db.rows("""
                    INSERT INTO tour_visits(tour_id, user_id, place_id, visited_at)
                    SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM tour_followers WHERE tour_id = $1 AND user_id = $2)
                      AND EXISTS (SELECT 1 FROM beacons WHERE id = $3)
                    ON CONFLICT DO NOTHING
                    """, [v.tour.rawValue, v.user.rawValue, v.place.rawValue, v.visitedAt.millis])
            }
        }
    }

    package func tourVisits(_ tour: BeaconID, user: UserID) async throws -> [TourVisit] {
        try await read { db in
            try await db.rows("""
                SELECT place_id, visited_at FROM tour_visits WHERE tour_id = $1 AND user_id = $2 ORDER BY visited_at, place_id
                """, [tour.rawValue, user.rawValue]).map {
                TourVisit(tour: tour, user: user, place: BeaconID(uncheckedRawValue: try $0.string("place_id")),
                          visitedAt: try $0.timestamp("visited_at"))
            }
        }
    }

    package func addPlaceMedia(_ media: PlaceMedia) async throws {
        try await write { db, _ in
            try await db.rows("""
                INSERT INTO place_media(id, place_id, user_id, kind, url, title, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
                """, [media.id.rawValue, media.place.rawValue, media.user.rawValue, media.content.kind,
                      media.content.url, media.content.title, media.createdAt.millis])
        }
    }

    package func placeMedia(_ place: BeaconID, limit: Int, after: Int64?) async throws -> Page<PlaceMedia> {
        try await read { db in
            let rows = try await db.rows("SELECT * FROM place_media WHERE place_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                                         [place.rawValue, after ?? 0, limit + 1])
            let page = rows.prefix(limit)
            return Page(items: try page.map(Self.placeMedia(from:)), next: rows.count > limit ? try page.last?.int64("seq") : nil)
        }
    }

    package func placeMediaItem(_ id: MediaID) async throws -> PlaceMedia? {
        try await read { db in try await db.row("SELECT * FROM place_media WHERE id = $1", [id.rawValue]).map(Self.placeMedia(from:)) }
    }

    package func deletePlaceMedia(_ id: MediaID) async throws -> Bool {
        try await write { db, _ in try await !db.rows("DELETE FROM place_media WHERE id = $1 RETURNING id", [id.rawValue]).isEmpty }
    }

    static func placeMedia(from row: SQLRow) throws -> PlaceMedia {
        let user = UserID(uncheckedRawValue: try row.string("user_id"))
        let at = try row.timestamp("created_at")
        return PlaceMedia(id: MediaID(uncheckedRawValue: try row.string("id")), place: BeaconID(uncheckedRawValue: try row.string("place_id")),
                          user: user,
                          content: ContentRef(kind: try row.string("kind"), url: try row.string("url"),
                                              title: try row.optionalString("title"), addedBy: user, createdAt: at),
                          createdAt: at)
    }
}
