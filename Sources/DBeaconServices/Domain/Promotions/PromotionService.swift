package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import Synchronization

/// Location-based advertising (thesis 4.3.4, scoring from the Noticon app). A promotion is a
/// beacon (service `promotion`): location = the business, perimeter = the promotion region,
/// tags = its category (plus `promotion`), content, lifetime, `related` relationships.
package struct PromotionService: Sendable {
    package let beacons: BeaconService
    package let store: any ServiceBackingStore
    package let config: ServiceConfig
    package let randomness: PickRandomness

    package init(beacons: BeaconService, store: any ServiceBackingStore, config: ServiceConfig,
                 randomness: PickRandomness = PickRandomness()) {
        self.beacons = beacons
        self.store = store
        self.config = config
        self.randomness = randomness
    }

    private var clock: any WallClock { beacons.clock }
    static let fields: Set<String> = ["name", "description", "location", "perimeter", "category", "tags", "content", "start", "end",
                                      "related"]
    static let maxInterests = 64

    // MARK: Advertisers

    /// `{"name","description"?,"location":{"lat","lon"},"perimeter","category","tags"?,"content"?,
    /// "start"?,"end"?,"related"?:[bcn_…]}`. The perimeter is the promotion region (required).
    package func create(_ body: JSONValue, by principal: Principal) async throws -> Beacon {
        guard let owner = principal.userID else { throw DBeaconError.forbidden("promotions belong to users; the admin token cannot own one") }
        let r = try ObjectReader(body)
        try ServiceInput.checkKnownMembers(r, Self.fields)
        let name = try r.string("name", maxLength: BeaconLimits.maxNameLength)
        let description = try r.optionalString("description", maxLength: BeaconLimits.maxDescriptionLength)
        let location = try ServiceInput.requiredLatLon(r, "location")
        guard let perimeter = try ServiceInput.perimeter(r, "perimeter", limits: beacons.limits) else {
            throw DBeaconError.invalid("perimeter", "perimeter (the promotion region) is required", code: "missing_field")
        }
        var categories: [String] = []
        if let c = try r.optionalString("category", maxLength: BeaconLimits.maxTagLength) {
            categories.append(try BeaconFeatureCodec.normalizeTag(c, path: "category"))
        }
        for t in try ServiceInput.tags(r) where !categories.contains(t) && t != ServiceKind.promotion { categories.append(t) }
        guard !categories.isEmpty else {
            throw DBeaconError.invalid("category", "a promotion needs a category (or tags)", code: "missing_field")
        }
        let start = try r.optionalTimestamp("start"), end = try r.optionalTimestamp("end")
        if let start, let end, end <= start { throw DBeaconError.invalid("end", "end must be after start", code: "invalid_lifetime") }
        let related = try (r.optionalStringArray("related", maxCount: BeaconLimits.maxRelationships, maxLength: 100) ?? [])
            .enumerated().map { i, raw -> Relationship in
                guard let id = BeaconID(raw) else { throw DBeaconError.invalid("related[\(i)]", "not a beacon id (bcn_…)", code: "invalid_id") }
                return Relationship(type: "related", target: id)
            }
        var seen = Set<BeaconID>()
        let unique = related.filter { seen.insert($0.target).inserted }
        let draft = BeaconDraft(
            name: name, description: description, location: location, perimeter: perimeter,
            lifetime: start == nil && end == nil ? nil : Lifetime(start: start, end: end),
            tags: Array(([categories[0], ServiceKind.promotion] + categories.dropFirst()).uniqued().prefix(BeaconLimits.maxTags)),
            relationships: unique, content: try ServiceInput.content(r))
        do {
            return try await beacons.create(draft, owner: owner, service: ServiceKind.promotion)
        } catch let error as DBeaconError {
            var renamed = ServiceInput.renamingPath(error, [("properties.relationships", "related")])
            if let path = renamed.path, path.hasPrefix("related["), path.hasSuffix(".target") {
                renamed.path = String(path.dropLast(".target".count))
            }
            throw renamed
        }
    }

    /// The promotion if the caller may see it; 404 for anything else.
    package func promotion(_ id: BeaconID, by principal: Principal) async throws -> Beacon {
        let beacon = try await beacons.get(id, by: principal)
        guard beacon.service == ServiceKind.promotion else { throw DBeaconError.notFound("promotion \(id)") }
        return beacon
    }

    /// Interaction totals (the advertiser only: 403 for others who see it).
    package func stats(_ id: BeaconID, by principal: Principal) async throws -> PromotionTotals {
        let promotion = try await promotion(id, by: principal)
        guard principal.isAdmin || principal.userID == promotion.owner else {
            throw DBeaconError.forbidden("only the advertiser may see the statistics of this promotion")
        }
        return try await store.promotionTotals(id)
    }

    // MARK: Consumers

    /// Replaces the caller's interests: `["food","music"]` (score 1 each) or `{"food":3,"music":1}`
    /// (integer scores in [-100, 100]).
    package func setInterests(_ body: JSONValue, by principal: Principal) async throws -> [(category: String, score: Int)] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("interests belong to users") }
        let r = try ObjectReader(body)
        try ServiceInput.checkKnownMembers(r, ["interests"])
        var result: [(category: String, score: Int)] = []
        switch r.value("interests") {
        case .array(let items)?:
            guard items.count <= Self.maxInterests else {
                throw DBeaconError.invalid("interests", "at most \(Self.maxInterests) interests", code: "too_many")
            }
            for (i, item) in items.enumerated() {
                guard case .string(let s) = item else {
                    throw DBeaconError.invalid("interests[\(i)]", "expected a string, got \(item.typeName)", code: "invalid_type")
                }
                let tag = try BeaconFeatureCodec.normalizeTag(s, path: "interests[\(i)]")
                if !result.contains(where: { $0.category == tag }) { result.append((tag, 1)) }
            }
        case .object(let o)?:
            guard o.count <= Self.maxInterests else {
                throw DBeaconError.invalid("interests", "at most \(Self.maxInterests) interests", code: "too_many")
            }
            let reader = try ObjectReader(.object(o), path: "interests")
            for key in o.keys {
                let tag = try BeaconFeatureCodec.normalizeTag(key, path: reader.path(key))
                let score = try reader.int(key, range: -100...100)
                if let i = result.firstIndex(where: { $0.category == tag }) { result[i].score = score } else { result.append((tag, score)) }
            }
        case let other?:
            throw DBeaconError.invalid("interests", "expected an array of categories or an object of scores, got \(other.typeName)",
                                       code: "invalid_type")
        case nil:
            throw DBeaconError.invalid("interests", "interests is required", code: "missing_field")
        }
        try await store.setInterests(uid, result)
        return result
    }

    package func interests(by principal: Principal) async throws -> [(category: String, score: Int)] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("interests belong to users") }
        return try await store.interests(uid)
    }

    /// Promotions whose region covers the consumer (alive at `at`, visible), best score first
    /// (then nearest); and the promotions they relate to that are not listed (suggestions, even
    /// outside their own region), best first.
    package func nearby(point: Position, tags: [String], at: Timestamp?, limit: Int,
                        by principal: Principal) async throws -> (promotions: [ScoredPromotion], related: [ScoredPromotion]) {
        let now = clock.now()
        let when = at ?? now
        let found = try await beacons.nearby(point: point, tags: tags, at: when, limit: Int.max, service: ServiceKind.promotion,
                                             by: principal)
        var listedIDs = Set(found.map(\.beacon.id))
        var relatedTo: [BeaconID: [BeaconID]] = [:]
        for r in found {
            for link in r.beacon.relationships where link.type == "related" && !listedIDs.contains(link.target) {
                relatedTo[link.target, default: []].append(r.beacon.id)
            }
        }
        // Like nearby, `at` only narrows: a suggestion must be visible to the caller now too.
        let suggestions = try await beacons.redacted(try await store.beacons(ids: Array(relatedTo.keys)).filter {
            $0.service == ServiceKind.promotion && $0.isVisible(to: principal, at: now) && $0.isAlive(at: when)
        }, for: principal)
        let all = found.map(\.beacon) + suggestions
        let scores = try await scores(all, for: principal)
        func scored(_ r: NearbyResult) -> ScoredPromotion { ScoredPromotion(result: r, score: scores[r.beacon.id] ?? 0) }
        func ordered(_ a: ScoredPromotion, _ b: ScoredPromotion) -> Bool {
            if a.score != b.score { return a.score > b.score }
            if a.result.distanceM != b.result.distanceM { return a.result.distanceM < b.result.distanceM }
            return a.result.beacon.id < b.result.beacon.id
        }
        let listed = Array(found.map(scored).sorted(by: ordered).prefix(limit))
        listedIDs = Set(listed.map(\.result.beacon.id))
        let related = BeaconService.rank(suggestions, from: point, limit: Int.max).map { r in
            var s = scored(r)
            s.relatedTo = (relatedTo[r.beacon.id] ?? []).filter(listedIDs.contains)
            return s
        }.filter { !$0.relatedTo.isEmpty }.sorted(by: ordered)
        return (listed, Array(related.prefix(limit)))
    }

    /// Each promotion's score for the caller (the operator has no interests or history: 0).
    private func scores(_ promotions: [Beacon], for principal: Principal) async throws -> [BeaconID: Int] {
        guard let uid = principal.userID, !promotions.isEmpty else { return [:] }
        var interests: [String: Int] = [:]
        for i in try await store.interests(uid) { interests[i.category] = i.score }
        let counts = try await store.interactionCounts(user: uid, promotions: promotions.map(\.id))
        var result: [BeaconID: Int] = [:]
        for p in promotions {
            result[p.id] = PromotionScoring.score(interest: PromotionScoring.interest(of: p.tags, in: interests),
                                                  counts: counts[p.id] ?? InteractionCounts())
        }
        return result
    }

    /// Chooses the one promotion to notify the consumer of, among those whose region covers
    /// them: the highest Noticon score, ties broken uniformly at random. The pick is recorded
    /// as `shown` and counts against the per-user frequency cap.
    package func pick(point: Position, at: Timestamp?, by principal: Principal) async throws -> PromotionPick {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("promotions are picked for users") }
        let now = clock.now()
        let windowStart = now.adding(seconds: -config.promotionPickWindowSeconds)
        let recent = try await store.pickTimes(user: uid, since: windowStart)
        if recent.count >= config.promotionPicksPerWindow {
            return capped(recent, now: now)
        }
        let found = try await beacons.nearby(point: point, tags: [], at: at ?? now, limit: Int.max, service: ServiceKind.promotion,
                                             by: principal)
        let scores = try await scores(found.map(\.beacon), for: principal)
        let candidates = found.sorted { $0.beacon.id < $1.beacon.id }
        let (index, best, tied) = randomness.choose(count: candidates.count) { scores[candidates[$0].beacon.id] ?? 0 }
        guard let index, let best else { return PromotionPick(chosen: nil, candidates: 0, tied: 0, capped: false) }
        let chosen = candidates[index]
        guard try await store.recordPick(promotion: chosen.beacon.id, user: uid, at: now, since: windowStart,
                                         cap: config.promotionPicksPerWindow) else {
            return capped(try await store.pickTimes(user: uid, since: windowStart), now: now)
        }
        return PromotionPick(chosen: ScoredPromotion(result: chosen, score: best), candidates: candidates.count, tied: tied, capped: false)
    }

    private func capped(_ picks: [Timestamp], now: Timestamp) -> PromotionPick {
        let oldest = picks.first ?? now
        let wait = oldest.adding(seconds: config.promotionPickWindowSeconds).seconds(since: now)
        return PromotionPick(chosen: nil, candidates: 0, tied: 0, capped: true, retryAfterSeconds: max(1, Int(wait.rounded(.up))))
    }

    /// Records `shown`, `clicked` or `calendar_add` (now) for a promotion the caller can see.
    package func record(_ id: BeaconID, type: InteractionType, by principal: Principal) async throws -> Interaction {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("interactions are recorded for users") }
        _ = try await promotion(id, by: principal)
        let now = clock.now()
        let recent = try await store.interactionCount(promotion: id, user: uid, type: type, since: now.adding(seconds: -60))
        guard recent < config.maxInteractionsPerMinute else {
            throw DBeaconError.tooManyRequests("at most \(config.maxInteractionsPerMinute) \(type.rawValue) interactions per minute",
                                               retryAfter: 60)
        }
        try await store.recordInteraction(promotion: id, user: uid, type: type, at: now)
        return Interaction(promotion: id, user: uid, type: type, createdAt: now)
    }
}

extension Array where Element: Hashable {
    /// The elements in order, each once.
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
