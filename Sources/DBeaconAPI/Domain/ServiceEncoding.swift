package import DBeaconCore
import DBeaconGeo
package import DBeaconServices

/// JSON of the four services' answers, shared by the HTTP API and the CLI on a local database.
package enum ServiceEncoding {
    // MARK: Common

    /// A Feature with extra members in its properties.
    package static func feature(_ beacon: VisibleBeacon, extra: [(String, JSONValue)] = []) -> JSONValue {
        var properties = BeaconFeatureCodec.encodeProperties(beacon)
        for (k, v) in extra { properties[k] = v }
        return .object(JSONObject([
            ("type", "Feature"), ("id", .string(beacon.id.rawValue)),
            ("geometry", GeoJSONCodec.encodePoint(beacon.location)), ("properties", .object(properties)),
        ]))
    }

    /// A nearby Feature: `distance_m` and `bearing_deg` from the query point, then `extra`.
    package static func nearbyFeature(_ r: NearbyResult, extra: [(String, JSONValue)] = []) -> JSONValue {
        feature(r.beacon, extra: [("distance_m", .number(r.distanceM)), ("bearing_deg", .number(r.bearingDeg))] + extra)
    }

    /// `{"lat","lon"}` of a point.
    static func position(_ p: Position) -> JSONValue { .object(["lat": .number(p.lat), "lon": .number(p.lon)]) }

    /// The directions answer for distances the service measured
    /// (`GET /v1/meetings/{id}/directions`); see `directions(to:from:distanceM:bearingDeg:)`.
    package static func directions(_ d: Directions, from: Position) -> JSONValue {
        directions(to: d.beacon, from: from, distanceM: d.distanceM, bearingDeg: d.bearingDeg)
    }

    /// `distance_m`, `bearing_deg`, `walking_eta_s` and a `geo:` URI of the destination.
    package static func directions(to beacon: VisibleBeacon, from: Position, distanceM: Double, bearingDeg: Double) -> JSONValue {
        .object(JSONObject([
            ("beacon", .string(beacon.id.rawValue)), ("from", position(from)), ("to", position(beacon.location)),
            ("distance_m", .number(distanceM)), ("bearing_deg", .number(bearingDeg)),
            ("walking_eta_s", .int(Geodesy.walkingETA(meters: distanceM))),
            ("geo_uri", .string("geo:\(beacon.location.lat),\(beacon.location.lon)")),
        ]))
    }

    // MARK: Meetings

    /// The meeting Feature with `properties.meeting` = attendee count, whether the caller
    /// joined and, for the organizer, the attendees.
    package static func meeting(_ view: MeetingView) -> JSONValue {
        var info: JSONObject = ["attendees_count": .int(view.attendeesCount), "joined": .bool(view.joined)]
        if let attendees = view.attendees {
            info["attendees"] = .array(attendees.map { a in
                .object(["id": .string(a.user.rawValue), "name": .string(a.name), "joined_at": .string(a.joinedAt.rfc3339)])
            })
        }
        return feature(view.beacon, extra: [("meeting", .object(info))])
    }

    // MARK: Groups

    /// A group as its guide and members see it (`GET /v1/groups/{id}`, and the answers to creating
    /// and joining): `owner` is the guide, `open` when anyone who sees it may join (else `allowed`
    /// lists who may), `located` once its beacon has a place, `stale_after_s`, and each member's
    /// status (`member`).
    package static func group(_ s: GroupStatus) -> JSONValue {
        .object(JSONObject([
            ("id", .string(s.group.id.rawValue)), ("name", .string(s.group.name)), ("owner", .string(s.group.leader.rawValue)),
            ("range_m", .number(s.group.rangeM)), ("beacon", .string(s.group.beacon.rawValue)),
            ("open", .bool(s.group.allowed == nil)),
            ("allowed", s.group.allowed.map { .array($0.map { .string($0.rawValue) }) } ?? .null),
            ("located", .bool(s.group.placed)),
            ("stale_after_s", .number(s.staleAfterSeconds)),
            ("members", .array(s.members.map(member))),
            ("created_at", .string(s.group.createdAt.rfc3339)),
        ]))
    }

    /// One member as the group shows them: `role`, the last shared `location` (with `accuracy_m`
    /// and `fix_at`) or null, its age in seconds, `stale`, and the distance from the guide with
    /// `in_range` (null while unknown).
    static func member(_ m: GroupMemberStatus) -> JSONValue {
        .object(JSONObject([
            ("id", .string(m.user.rawValue)), ("name", .string(m.name)), ("role", .string(m.role)),
            ("joined_at", .string(m.joinedAt.rfc3339)),
            ("location", m.location.map { l in
                .object(JSONObject([("lat", .number(l.position.lat)), ("lon", .number(l.position.lon)),
                                    ("accuracy_m", .number(l.accuracyM)), ("fix_at", .string(l.fixAt.rfc3339))]))
            } ?? .null),
            ("age_s", .optional(m.ageSeconds)), ("stale", .bool(m.stale)),
            ("distance_m", .optional(m.distanceM)), ("in_range", m.inRange.map(JSONValue.bool) ?? .null),
        ]))
    }

    /// A group summary (for lists and nearby).
    package static func groupSummary(_ g: TrackedGroup) -> JSONValue {
        .object(JSONObject([
            ("id", .string(g.id.rawValue)), ("name", .string(g.name)), ("owner", .string(g.leader.rawValue)),
            ("range_m", .number(g.rangeM)), ("beacon", .string(g.beacon.rawValue)), ("open", .bool(g.allowed == nil)),
        ]))
    }

    // MARK: Tours

    /// `{"order", "beacon": Feature}`: one stop of a tour.
    package static func stop(_ s: TourStop) -> JSONValue {
        .object(["order": .int(s.order), "beacon": BeaconFeatureCodec.encode(s.place)])
    }

    /// `{"tour": Feature, "stops": […], "progress"?}`: a tour with the stops the caller can see,
    /// and their progress when they follow it.
    package static func tour(_ view: TourView) -> JSONValue {
        var o = JSONObject([("tour", BeaconFeatureCodec.encode(view.tour)), ("stops", .array(view.stops.map(stop)))])
        if let p = view.progress { o["progress"] = progress(p, tour: view.tour.id) }
        return .object(o)
    }

    /// A caller's progress on a tour: when they started, the stops visited (each with when), the
    /// `next` stop (null once every stop is visited), `visited_count` of `total`, and `completed`.
    package static func progress(_ p: TourProgress, tour: BeaconID) -> JSONValue {
        .object(JSONObject([
            ("tour", .string(tour.rawValue)), ("started_at", .string(p.startedAt.rfc3339)),
            ("visited", .array(p.visited.map { v in
                .object(["order": .int(v.stop.order), "beacon": .string(v.stop.place.id.rawValue), "name": .string(v.stop.place.name),
                         "visited_at": .string(v.at.rfc3339)])
            })),
            ("next", p.next.map(stop) ?? .null), ("visited_count", .int(p.visited.count)), ("total", .int(p.total)),
            ("completed", .bool(p.completed)),
        ]))
    }

    /// The answer of `GET /v1/tours/{id}/next`: the `next` stop and the stops `following` from it
    /// on, each with `distance_m` and `bearing_deg` from the origin (the caller's position, else
    /// the `from` stop; null without either); `directions` to the next stop when there is an
    /// origin; `remaining` counts the stops after the next one.
    package static func tourNext(_ n: TourNext) -> JSONValue {
        func leg(_ l: TourLeg) -> JSONValue {
            .object(JSONObject([("order", .int(l.stop.order)), ("beacon", BeaconFeatureCodec.encode(l.stop.place)),
                                ("distance_m", .optional(l.distanceM)), ("bearing_deg", .optional(l.bearingDeg))]))
        }
        var directions: JSONValue = .null
        if let origin = n.origin, let next = n.next, let d = next.distanceM, let b = next.bearingDeg {
            directions = ServiceEncoding.directions(to: next.stop.place, from: origin, distanceM: d, bearingDeg: b)
        }
        return .object(JSONObject([
            ("tour", .string(n.tour.id.rawValue)), ("from", .optional(n.from?.rawValue)),
            ("next", n.next.map(leg) ?? .null), ("remaining", .int(max(0, n.following.count - 1))),
            ("directions", directions), ("following", .array(n.following.map(leg))),
        ]))
    }

    /// A FeatureCollection of tours near a point: each Feature adds `matched_stops` (`order`,
    /// `beacon`, `name`, `distance_m`) to `distance_m` and `bearing_deg`.
    package static func nearbyTours(_ tours: [NearbyTour]) -> JSONValue {
        BeaconFeatureCodec.collection(tours.map { t in
            nearbyFeature(t.result, extra: [("matched_stops", .array(t.matched.map { m in
                .object(["order": .int(m.stop.order), "beacon": .string(m.stop.place.id.rawValue), "name": .string(m.stop.place.name),
                         "distance_m": .number(m.distanceM)])
            }))])
        })
    }

    /// One media item shared at a place: its content reference (`kind`, `url`, `title`), the place,
    /// who shared it and when.
    package static func media(_ m: PlaceMedia) -> JSONValue {
        .object(JSONObject([
            ("id", .string(m.id.rawValue)), ("place", .string(m.place.rawValue)), ("user", .string(m.user.rawValue)),
            ("kind", .string(m.content.kind)), ("url", .string(m.content.url)), ("title", .optional(m.content.title)),
            ("created_at", .string(m.createdAt.rfc3339)),
        ]))
    }

    // MARK: Promotions

    /// A promotion's nearby Feature with its `score` for the caller; a suggestion (`related`) also
    /// names the listed promotions it relates to (`related_to`).
    package static func scoredPromotion(_ p: ScoredPromotion, related: Bool = false) -> JSONValue {
        var extra: [(String, JSONValue)] = [("score", .int(p.score))]
        if related { extra.append(("related_to", .array(p.relatedTo.map { .string($0.rawValue) }))) }
        return nearbyFeature(p.result, extra: extra)
    }

    /// A FeatureCollection of the covering promotions plus `related`: the suggestions.
    package static func promotionsNearby(_ listed: [ScoredPromotion], related: [ScoredPromotion]) -> JSONValue {
        .object(JSONObject([
            ("type", "FeatureCollection"), ("features", .array(listed.map { scoredPromotion($0) })),
            ("related", .array(related.map { scoredPromotion($0, related: true) })),
        ]))
    }

    /// The answer of `GET /v1/promotions/pick`: the chosen `promotion` (null when none) and its
    /// `score`, how many `candidates` there were and how many `tied` for the top, `capped`, and
    /// `retry_after_s` when the frequency cap says when to ask again.
    package static func pick(_ p: PromotionPick) -> JSONValue {
        var o = JSONObject([
            ("promotion", p.chosen.map { scoredPromotion($0) } ?? .null), ("score", .int(p.chosen?.score)),
            ("candidates", .int(p.candidates)), ("tied", .int(p.tied)), ("capped", .bool(p.capped)),
        ])
        if let r = p.retryAfterSeconds { o["retry_after_s"] = .int(r) }
        return .object(o)
    }

    /// `{"interests": [category, …], "scores": {category: score}}`: the caller's interests, and
    /// each one's score.
    package static func interests(_ items: [(category: String, score: Int)]) -> JSONValue {
        var scores = JSONObject()
        for i in items { scores[i.category] = .int(i.score) }
        return .object(["interests": .array(items.map { .string($0.category) }), "scores": .object(scores)])
    }

    /// A recorded interaction: the promotion, the user, the `type` and when, with `rating` or
    /// `text` for the types that have them.
    package static func interaction(_ i: Interaction) -> JSONValue {
        var o = JSONObject([("promotion", .string(i.promotion.rawValue)), ("user", .string(i.user.rawValue)),
                            ("type", .string(i.type.rawValue)), ("created_at", .string(i.createdAt.rfc3339))])
        if let rating = i.rating { o["rating"] = .int(rating) }
        if let text = i.text { o["text"] = .string(text) }
        return .object(o)
    }

    /// `{"saved": [{"promotion", "name", "saved_at"}]}`
    package static func saved(_ items: [(promotion: VisibleBeacon, savedAt: Timestamp)]) -> JSONValue {
        .object(["saved": .array(items.map { item in
            .object(JSONObject([("promotion", .string(item.promotion.id.rawValue)), ("name", .string(item.promotion.name)),
                                ("saved_at", .string(item.savedAt.rfc3339))]))
        })])
    }

    /// `{"feedback": [{"text", "created_at"}], "next_cursor"}`
    package static func feedback(_ page: Page<PromotionFeedback>, nextCursor: String?) -> JSONValue {
        .object(JSONObject([
            ("feedback", .array(page.items.map { .object(JSONObject([("text", .string($0.text)), ("created_at", .string($0.createdAt.rfc3339))])) })),
            ("next_cursor", .optional(nextCursor)),
        ]))
    }

    /// The answer of `GET /v1/promotions/{id}/stats`: counts per interaction type, `unique_users`,
    /// `click_through_rate` (clicks per showing; null before the first showing), saves, ratings
    /// with their average (null without any) and how many feedback texts there are.
    package static func stats(_ id: BeaconID, _ t: PromotionTotals) -> JSONValue {
        .object(JSONObject([
            ("promotion", .string(id.rawValue)), ("shown", .int(t.counts.shown)), ("clicked", .int(t.counts.clicked)),
            ("calendar_add", .int(t.counts.calendarAdds)), ("unique_users", .int(t.uniqueUsers)),
            ("click_through_rate", t.counts.shown > 0 ? .number(Double(t.counts.clicked) / Double(t.counts.shown)) : .null),
            ("saved", .int(t.saves)), ("ratings", .int(t.ratings)), ("average_rating", t.averageRating.map(JSONValue.number) ?? .null),
            ("feedback", .int(t.feedback)),
        ]))
    }
}
