package import DBeaconCore
import DBeaconGeo
package import DBeaconStore
import Synchronization

/// Location-based advertising (thesis 4.3.4, scoring from the Noticon app). A promotion is a
/// beacon (service `promotion`): location = the business, perimeter = the promotion region,
/// tags = its category (plus `promotion`), content, lifetime, `related` relationships.
package struct PromotionService: Sendable {
    package let beacons: BeaconService
    let store: any ServiceBackingStore
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
    package static let maxInterests = 64

    // MARK: Advertisers

    /// Creates a promotion owned by the caller: a beacon of service `promotion` tagged with its
    /// categories (the first one leading) and `promotion`.
    package func create(_ draft: PromotionDraft, by principal: Principal) async throws -> Beacon {
        guard let owner = principal.userID else { throw DBeaconError.forbidden("promotions belong to users; the admin token cannot own one") }
        let categories = draft.categories.filter { $0 != ServiceKind.promotion }
        guard let first = categories.first else {
            throw DBeaconError.invalid("category", "a promotion needs a category (or tags)", code: "missing_field")
        }
        let beacon = BeaconDraft(
            name: draft.name, description: draft.description, location: draft.location, perimeter: draft.perimeter,
            lifetime: draft.lifetime,
            tags: Array(([first, ServiceKind.promotion] + categories.dropFirst()).uniqued().prefix(BeaconLimits.maxTags)),
            relationships: draft.related.uniqued().map { Relationship(type: "related", target: $0) }, content: draft.content)
        do {
            return try await beacons.create(beacon, owner: owner, service: ServiceKind.promotion)
        } catch let error as DBeaconError {
            guard let path = error.path, path.hasPrefix("properties.relationships") else { throw error }
            var renamed = error.renamingPath([("properties.relationships", "related")])
            if let path = renamed.path, path.hasSuffix(".target") { renamed.path = String(path.dropLast(".target".count)) }
            throw renamed
        }
    }

    /// The promotion if the caller may see it; 404 for anything else.
    package func promotion(_ id: BeaconID, by principal: Principal) async throws -> VisibleBeacon {
        let beacon = try await beacons.get(id, by: principal)
        guard beacon.service == ServiceKind.promotion else { throw DBeaconError.notFound("promotion \(id)") }
        return beacon
    }

    /// Interaction totals (the advertiser only: 403 for others who see it).
    package func stats(_ id: BeaconID, by principal: Principal) async throws -> PromotionTotals {
        let promotion = try await promotion(id, by: principal)
        try promotion.authorize(.modify, by: principal, at: clock.now(),
                                otherwise: "only the advertiser may see the statistics of this promotion")
        return try await store.promotionTotals(id)
    }

    // MARK: Consumers

    /// Replaces the caller's interests (categories with integer scores in [-100, 100]).
    package func setInterests(_ interests: [(category: String, score: Int)],
                              by principal: Principal) async throws -> [(category: String, score: Int)] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("interests belong to users") }
        guard interests.count <= Self.maxInterests else {
            throw DBeaconError.invalid("interests", "at most \(Self.maxInterests) interests", code: "too_many")
        }
        try await store.setInterests(uid, interests)
        return interests
    }

    package func interests(by principal: Principal) async throws -> [(category: String, score: Int)] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("interests belong to users") }
        return try await store.interests(uid)
    }

    /// Interests inferred from where the caller went (tags of the beacons they entered, from
    /// their own event log), not yet among their interests: offered, never set; the caller
    /// accepts one with `PUT /v1/me/interests`. Suggested score: 10 per entry, at most 100.
    package func suggestedInterests(by principal: Principal) async throws -> [(category: String, entries: Int, score: Int)] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("interests belong to users") }
        let known = Set(try await store.interests(uid).map(\.category))
        // The tags of the entered beacons the user may still see, as they are now (through the
        // gate): a beacon made private, then retagged, suggests nothing.
        let entered = try await store.enteredBeacons(user: uid)
        var entries: [BeaconID: Int] = [:]
        for e in entered { entries[e.beacon] = e.entries }
        var byTag: [String: Int] = [:]
        for b in try await beacons.gate.beacons(entered.map(\.beacon), for: principal) {
            for tag in b.tags { byTag[tag, default: 0] += entries[b.id] ?? 0 }
        }
        return byTag.filter { !known.contains($0.key) && $0.key != ServiceKind.promotion }
            .sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .prefix(20)
            .map { ($0.key, $0.value, min(100, 10 * $0.value)) }
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
        // Like nearby, `at` only narrows: a suggestion must be visible to the caller now too
        // (the gate decides before anything about it is scored).
        let suggestions = try await beacons.gate.resolve(Array(relatedTo.keys), for: principal).values.filter {
            $0.service == ServiceKind.promotion && $0.isAlive(at: when)
        }
        let all = found.map(\.beacon.beacon) + suggestions
        let scores = try await scores(all, for: principal)
        func scored(_ r: NearbyResult) -> ScoredPromotion { ScoredPromotion(result: r, score: scores[r.beacon.id] ?? 0) }
        func ordered(_ a: ScoredPromotion, _ b: ScoredPromotion) -> Bool {
            if a.score != b.score { return a.score > b.score }
            if a.result.distanceM != b.result.distanceM { return a.result.distanceM < b.result.distanceM }
            return a.result.beacon.id < b.result.beacon.id
        }
        let listed = Array(found.map(scored).sorted(by: ordered).prefix(limit))
        listedIDs = Set(listed.map(\.result.beacon.id))
        let related = try await beacons.present(BeaconService.rank(suggestions, from: point, limit: Int.max), to: principal).map { r in
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
        let scores = try await scores(found.map(\.beacon.beacon), for: principal)
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

    /// Records an interaction (now) with a promotion the caller can see: `shown`, `clicked`,
    /// `calendar_add` (the log), `saved` (save for later; saving again keeps it once), `rated`
    /// (`rating` 1–5, once: 409 `already_rated` after), `feedback` (`text` for the advertiser).
    /// At most `maxInteractionsPerMinute` of each logged type and of feedback per minute.
    package func record(_ id: BeaconID, type: InteractionType, rating: Int? = nil, text: String? = nil,
                        by principal: Principal) async throws -> Interaction {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("interactions are recorded for users") }
        _ = try await promotion(id, by: principal)
        let now = clock.now()
        let minuteAgo = now.adding(seconds: -60)
        switch type {
        case .shown, .clicked, .calendarAdd, .feedback:
            let recent = type == .feedback
                ? try await store.promotionFeedbackCount(id, user: uid, since: minuteAgo)
                : try await store.interactionCount(promotion: id, user: uid, type: type, since: minuteAgo)
            guard recent < config.maxInteractionsPerMinute else {
                throw DBeaconError.tooManyRequests("at most \(config.maxInteractionsPerMinute) \(type.rawValue) interactions per minute",
                                                   retryAfter: 60)
            }
        case .saved, .rated:
            break
        }
        switch type {
        case .shown, .clicked, .calendarAdd:
            try await store.recordInteraction(promotion: id, user: uid, type: type, at: now)
        case .saved:
            try await store.savePromotion(id, user: uid, at: now)
        case .rated:
            guard let rating, (1...5).contains(rating) else {
                throw DBeaconError.invalid("rating", "a rating is an integer from 1 to 5", code: "out_of_range")
            }
            guard try await store.ratePromotion(id, user: uid, rating: rating, at: now) else {
                throw DBeaconError.conflict("you rated this promotion already (a rating is given once)", code: "already_rated")
            }
        case .feedback:
            guard let text, !text.isEmpty else { throw DBeaconError.invalid("text", "feedback needs a text", code: "missing_field") }
            try await store.addPromotionFeedback(id, user: uid, text: text, at: now)
        }
        return Interaction(promotion: id, user: uid, type: type, createdAt: now, rating: type == .rated ? rating : nil,
                           text: type == .feedback ? text : nil)
    }

    /// The caller's saved promotions that they may still see now, most recently saved first.
    package func saved(by principal: Principal) async throws -> [(promotion: VisibleBeacon, savedAt: Timestamp)] {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("saved items belong to users") }
        let saved = try await store.savedPromotions(user: uid)
        var byID: [BeaconID: VisibleBeacon] = [:]
        for b in try await beacons.gate.beacons(saved.map(\.promotion), for: principal) { byID[b.id] = b }
        return saved.compactMap { item in byID[item.promotion].map { ($0, item.savedAt) } }
    }

    /// Deletes a saved item: 404 when it is not among the caller's saved items as they see
    /// them, so a promotion that became hidden answers as a deleted one does (its row goes all
    /// the same: it is the caller's own data).
    package func unsave(_ id: BeaconID, by principal: Principal) async throws {
        guard let uid = principal.userID else { throw DBeaconError.forbidden("saved items belong to users") }
        let removed = try await store.unsavePromotion(id, user: uid)
        guard removed, try await beacons.gate.resolve(id, for: principal) != nil else { throw DBeaconError.notFound("saved item \(id)") }
    }

    /// Feedback on a promotion, for its advertiser (403 for others who see it), without authors.
    package func feedback(_ id: BeaconID, limit: Int, after: Int64?, by principal: Principal) async throws -> Page<PromotionFeedback> {
        let promotion = try await promotion(id, by: principal)
        try promotion.authorize(.modify, by: principal, at: clock.now(),
                                otherwise: "only the advertiser may read the feedback on this promotion")
        return try await store.promotionFeedback(id, limit: limit, after: after)
    }
}

extension Array where Element: Hashable {
    /// The elements in order, each once.
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
