import DBeaconCore
import DBeaconGeo
import DBeaconServices
import DBeaconStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct PromotionServiceTests {
    /// A promotion body: a square region of `half` metres around `center`, business at `center`.
    static func promotion(_ name: String, category: String, at center: Position, half: Double = 100,
                          related: [String] = []) -> JSONValue {
        let sw = Walk.offset(center, north: -half, east: -half), ne = Walk.offset(center, north: half, east: half)
        return [
            "name": .string(name), "location": Walk.latLon(center), "category": .string(category),
            "perimeter": polygon([box(sw.lon, sw.lat, ne.lon, ne.lat)]),
            "start": "2026-01-01T00:00:00Z", "end": "2027-01-01T00:00:00Z",
            "content": [["kind": "web", "url": .string("https://example.org/\(name)")]],
            "related": .array(related.map(JSONValue.string)),
        ]
    }

    static func scores(_ r: JSONResponse) -> [String: Int] {
        var result: [String: Int] = [:]
        for f in r.features { result[f["properties"]?["name"]?.stringValue ?? ""] = Int(f["properties"]?["score"]?.numberValue ?? .nan) }
        return result
    }

    @Test(arguments: Backend.all) func nearbyRelatedPickAndTheNoticonScore(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.services.promotionPicksPerWindow = 1000 }
        let (_, shop) = try await h.user("shop")
        let (_, cleo) = try await h.user("cleo")
        let (_, eve) = try await h.user("eve")
        let here = Walk.schlossplatz
        try await h.app().test(.router) { client in
            var ids: [String: String] = [:]
            let elsewhere = Walk.offset(here, north: 2000)
            let e = try await client.call(.post, "/v1/promotions", token: shop, json: Self.promotion("E", category: "food", at: elsewhere))
            #expect(e.status == .created, "\(e.text)")
            ids["E"] = e.json?["id"]?.stringValue
            #expect(e.json?["properties"]?["service"] == "promotion")
            #expect(e.json?["properties"]?["tags"] == ["food", "promotion"])
            for (name, category, offset) in [("A", "food", 10.0), ("B", "food", 20.0), ("C", "shopping", 30.0), ("D", "food", 40.0)] {
                let related = name == "A" ? [ids["E"]!] : []
                let r = try await client.call(.post, "/v1/promotions", token: shop,
                                              json: Self.promotion(name, category: category, at: Walk.offset(here, east: offset), related: related))
                #expect(r.status == .created, "\(r.text)")
                ids[name] = r.json?["id"]?.stringValue
            }
            let interests = try await client.call(.put, "/v1/me/interests", token: cleo, json: ["interests": ["food": 2, "shopping": 1]])
            #expect(interests.status == .ok && interests.json?["interests"] == ["food", "shopping"], "\(interests.text)")
            #expect(try await client.call(.get, "/v1/me/interests", token: cleo).json?["scores"] == ["food": 2, "shopping": 1])

            // Nearby: covering promotions best first; the related one suggested although far away
            let q = "lat=\(here.lat)&lon=\(here.lon)"
            var nearby = try await client.call(.get, "/v1/promotions/nearby?\(q)", token: cleo)
            #expect(nearby.features.compactMap { $0["properties"]?["name"]?.stringValue } == ["A", "B", "D", "C"], "\(nearby.text)")
            #expect(Self.scores(nearby) == ["A": 20, "B": 20, "D": 20, "C": 10])
            let related = nearby.json?["related"]?.arrayValue ?? []
            #expect(related.compactMap { $0["id"]?.stringValue } == [ids["E"]!])
            #expect(related.first?["properties"]?["related_to"] == [.string(ids["A"]!)])
            #expect((related.first?["properties"]?["distance_m"]?.numberValue ?? 0) > 1900)

            // score = 10·interest − shown − 5·clicked − 100·calendar adds
            for (name, type, times) in [("A", "shown", 3), ("B", "clicked", 1), ("C", "shown", 1), ("D", "calendar_add", 1)] {
                for _ in 0..<times {
                    let r = try await client.call(.post, "/v1/promotions/\(ids[name]!)/interactions", token: cleo, json: ["type": .string(type)])
                    #expect(r.status == .created && r.json?["type"] == .string(type), "\(r.text)")
                }
            }
            nearby = try await client.call(.get, "/v1/promotions/nearby?\(q)", token: cleo)
            #expect(Self.scores(nearby) == ["A": 17, "B": 15, "C": 9, "D": -80])
            #expect(nearby.features.compactMap { $0["properties"]?["name"]?.stringValue } == ["A", "B", "C", "D"])
            #expect(Self.scores(try await client.call(.get, "/v1/promotions/nearby?\(q)", token: eve)) == ["A": 0, "B": 0, "C": 0, "D": 0],
                    "another consumer has no interests and no history")

            // Pick: the best score; each pick counts as shown, so the choice moves on
            var picks: [String] = []
            for _ in 0..<4 {
                let pick = try await client.call(.get, "/v1/promotions/pick?\(q)", token: cleo)
                #expect(pick.status == .ok, "\(pick.text)")
                picks.append(pick.json?["promotion"]?["properties"]?["name"]?.stringValue ?? "-")
            }
            // A 17 → 16, 15, 14 … B stays 15 until A falls below it.
            #expect(Array(picks.prefix(2)) == ["A", "A"])
            #expect(Set(picks.suffix(2)).isSubset(of: ["A", "B"]))
            let pick = try await client.call(.get, "/v1/promotions/pick?\(q)", token: cleo)
            #expect(pick.json?["candidates"] == 4)
            #expect(pick.json?["score"] == pick.json?["promotion"]?["properties"]?["score"])

            // Statistics: the advertiser only
            let stats = try await client.call(.get, "/v1/promotions/\(ids["A"]!)/stats", token: shop)
            #expect(stats.status == .ok)
            #expect((stats.json?["shown"]?.numberValue ?? 0) >= 5 && stats.json?["unique_users"] == 1, "\(stats.text)")
            #expect(try await client.call(.get, "/v1/promotions/\(ids["A"]!)/stats", token: cleo).status == .forbidden)
            #expect(try await client.call(.get, "/v1/promotions/\(ids["D"]!)/stats", token: shop).json?["calendar_add"] == 1)

            // Bad input names the field
            for (method, path, body, field) in [
                (HTTPRequest.Method.put, "/v1/me/interests", #"{"interests":{"food":500}}"#, "interests.food"),
                (.put, "/v1/me/interests", #"{"interests":["Food!"]}"#, "interests[0]"),
                (.post, "/v1/promotions/\(ids["A"]!)/interactions", #"{"type":"liked"}"#, "type"),
                (.post, "/v1/promotions", #"{"name":"x","location":{"lat":48,"lon":9},"category":"food"}"#, "perimeter"),
                (.post, "/v1/promotions", #"{"name":"x","location":{"lat":48,"lon":9},"perimeter":{"type":"Circle","radius_m":50}}"#, "category"),
                (.post, "/v1/promotions", #"{"name":"x","location":{"lat":48,"lon":9},"perimeter":{"type":"Circle","radius_m":50},"category":"food","related":["bcn_ghost"]}"#, "related[0]"),
            ] {
                let r = try await client.call(method, path, token: cleo, raw: body)
                #expect(r.status == .unprocessableContent && r.errorPath == field, "\(body) → \(r.text)")
            }
            #expect(try await client.call(.get, "/v1/me/interests", token: cleo).json?["scores"] == ["food": 2, "shopping": 1])
        }
    }

    @Test(arguments: Backend.all) func frequencyCapPerUser(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) {
            $0.services.promotionPicksPerWindow = 2
            $0.services.promotionPickWindowSeconds = 600
        }
        let (_, shop) = try await h.user("shop")
        let (_, cleo) = try await h.user("cleo")
        let (_, dan) = try await h.user("dan")
        let here = Walk.schlossplatz
        try await h.app().test(.router) { client in
            _ = try await client.call(.post, "/v1/promotions", token: shop, json: Self.promotion("A", category: "food", at: here))
            let q = "/v1/promotions/pick?lat=\(here.lat)&lon=\(here.lon)"
            #expect(try await client.call(.get, q, token: cleo).json?["promotion"] != .null)
            _ = h.clock.tick(60)
            #expect(try await client.call(.get, q, token: cleo).json?["promotion"] != .null)
            let capped = try await client.call(.get, q, token: cleo)
            #expect(capped.status == .ok)
            #expect(capped.json?["promotion"] == .null && capped.json?["capped"] == true)
            #expect(capped.json?["retry_after_s"] == 540, "the first pick leaves the window after 600 s")
            #expect(try await client.call(.get, q, token: dan).json?["capped"] == false, "the cap is per user")
            _ = h.clock.tick(541)
            #expect(try await client.call(.get, q, token: cleo).json?["capped"] == false)
            let stats = try await client.call(.get, "/v1/promotions/\(try await h.store.listBeacons(.init(), viewer: .admin, now: h.clock.now()).items[0].id)/stats", token: shop)
            #expect(stats.json?["shown"] == 4, "capped picks record nothing")
        }
    }

    /// 300 consumers each pick once among three promotions with the same top score: each is
    /// chosen about 100 times (chi-square with 2 degrees of freedom; 18.4 is p = 0.0001).
    @Test(arguments: Backend.all) func tieBreakIsUniformOverHTTP(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (_, shop) = try await h.user("shop")
        let here = Walk.schlossplatz
        try await h.app().test(.router) { client in
            for (name, offset) in [("A", 0.0), ("B", 15), ("C", 30)] {
                _ = try await client.call(.post, "/v1/promotions", token: shop,
                                          json: Self.promotion(name, category: "food", at: Walk.offset(here, east: offset)))
            }
            // A fourth, lower-scored candidate is never picked.
            _ = try await client.call(.post, "/v1/promotions", token: shop, json: Self.promotion("Z", category: "tools", at: here))
            var counts: [String: Int] = [:]
            let n = 300
            for i in 0..<n {
                let (_, token) = try await h.user("consumer\(i)")
                _ = try await client.call(.put, "/v1/me/interests", token: token, json: ["interests": ["food"]])
                let pick = try await client.call(.get, "/v1/promotions/pick?lat=\(here.lat)&lon=\(here.lon)", token: token)
                #expect(pick.json?["tied"] == 3 && pick.json?["score"] == 10)
                counts[pick.json?["promotion"]?["properties"]?["name"]?.stringValue ?? "-", default: 0] += 1
            }
            #expect(counts["Z"] == nil)
            let expected = Double(n) / 3
            let chi2 = ["A", "B", "C"].reduce(0.0) { $0 + pow(Double(counts[$1] ?? 0) - expected, 2) / expected }
            #expect(chi2 < 18.4, "\(counts) χ² = \(chi2)")
        }
    }

    /// The reservoir rule itself, on a seeded generator: with 5 ties each wins 1/5 of 50 000
    /// draws (χ² with 4 degrees of freedom, 18.5 is p = 0.001), and Noticon's original
    /// 1/(k+1) rule would fail the same test.
    /// Noticon's interaction set: save for later (and delete the saved item), rate 1–5 once,
    /// feedback text; they show in the saved list, the advertiser's stats and feedback, and the
    /// pick score.
    @Test(arguments: Backend.all) func saveRateAndFeedback(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.services.promotionPicksPerWindow = 1000 }
        let (_, shop) = try await h.user("shop")
        let (_, cleo) = try await h.user("cleo")
        let (_, dan) = try await h.user("dan")
        let here = Walk.schlossplatz
        try await h.app().test(.router) { client in
            let a = try #require(try await client.call(.post, "/v1/promotions", token: shop,
                                                       json: Self.promotion("A", category: "food", at: here)).json?["id"]?.stringValue)
            let b = try #require(try await client.call(.post, "/v1/promotions", token: shop,
                                                       json: Self.promotion("B", category: "food", at: here)).json?["id"]?.stringValue)
            func interact(_ id: String, _ token: String, _ body: JSONValue) async throws -> JSONResponse {
                try await client.call(.post, "/v1/promotions/\(id)/interactions", token: token, json: body)
            }
            // Save A then B; saving A again keeps one item (and its first time).
            #expect(try await interact(a, cleo, ["type": "saved"]).status == .created)
            h.clock.advance(seconds: 1)
            #expect(try await interact(b, cleo, ["type": "saved"]).status == .created)
            #expect(try await interact(a, cleo, ["type": "saved"]).status == .created)
            let saved = try await client.call(.get, "/v1/me/saved", token: cleo).json?["saved"]?.arrayValue ?? []
            #expect(saved.compactMap { $0["promotion"]?.stringValue } == [b, a])
            #expect(saved.first?["name"] == "B")
            #expect(try await client.call(.get, "/v1/me/saved", token: dan).json?["saved"]?.arrayValue == [])

            // The pick prefers the unsaved promotion: B saved → −30 each, then B deleted from the list.
            #expect(try await client.call(.delete, "/v1/me/saved/\(b)", token: cleo).status == .noContent)
            #expect(try await client.call(.delete, "/v1/me/saved/\(b)", token: cleo).status == .notFound)
            let scores = Self.scores(try await client.call(.get, "/v1/promotions/nearby?lat=\(here.lat)&lon=\(here.lon)", token: cleo))
            #expect(scores == ["A": -30, "B": 0])

            // Rate once; a second rating is a 409; out of range or missing is a 422 naming the field.
            let rated = try await interact(a, cleo, ["type": "rated", "rating": 5])
            #expect(rated.status == .created && rated.json?["rating"] == 5)
            let again = try await interact(a, cleo, ["type": "rated", "rating": 1])
            #expect(again.status == .conflict && again.json?["error"]?["code"] == "already_rated")
            #expect(try await interact(b, dan, ["type": "rated", "rating": 6]).errorPath == "rating")
            #expect(try await interact(b, dan, ["type": "rated"]).errorPath == "rating")
            #expect(try await interact(b, dan, ["type": "saved", "rating": 3]).errorPath == "rating")
            #expect(try await interact(b, dan, ["type": "rated", "rating": 2]).status == .created)
            let rescored = Self.scores(try await client.call(.get, "/v1/promotions/nearby?lat=\(here.lat)&lon=\(here.lon)", token: cleo))
            #expect(rescored["A"] == -30 + 10)

            // Feedback reaches the advertiser only, without its author.
            #expect(try await interact(a, dan, ["type": "feedback", "text": "Queue too long"]).json?["text"] == "Queue too long")
            #expect(try await interact(a, dan, ["type": "feedback", "text": ""]).errorPath == "text")
            #expect(try await interact(a, dan, ["type": "feedback"]).errorPath == "text")
            let feedback = try await client.call(.get, "/v1/promotions/\(a)/feedback", token: shop)
            #expect(feedback.json?["feedback"]?.arrayValue?.map { $0["text"] } == ["Queue too long"])
            #expect(feedback.json?["feedback"]?.arrayValue?.first?["user"] == nil)
            #expect(try await client.call(.get, "/v1/promotions/\(a)/feedback", token: dan).status == .forbidden)

            let stats = try await client.call(.get, "/v1/promotions/\(a)/stats", token: shop).json
            #expect(stats?["saved"] == 1 && stats?["ratings"] == 1 && stats?["average_rating"] == 5 && stats?["feedback"] == 1)
            #expect(stats?["unique_users"] == 2)
            let statsB = try await client.call(.get, "/v1/promotions/\(b)/stats", token: shop).json
            #expect(statsB?["saved"] == 0 && statsB?["average_rating"] == 2)
        }
    }

    @Test func reservoirChoiceIsUniform() {
        var rng = SeededGenerator(seed: 42)
        let scores = [3, 7, 7, 1, 7, 7, 2, 7]
        var wins = [Int: Int]()
        let n = 50_000
        for _ in 0..<n {
            let (chosen, best, tied) = PromotionScoring.chooseBest(Array(scores.indices), score: { scores[$0] }, using: &rng)
            #expect(best == 7 && tied == 5)
            wins[chosen!, default: 0] += 1
        }
        #expect(Set(wins.keys) == [1, 2, 4, 5, 7])
        let expected = Double(n) / 5
        let chi2 = wins.values.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        #expect(chi2 < 18.5, "\(wins) χ² = \(chi2)")

        // The listing's rule (replace with probability 1/(k+1)) favours the first tie.
        var original = [Int: Int]()
        for _ in 0..<n {
            var chosen = 1, same = 1
            for i in [2, 4, 5, 7] {
                same += 1
                if Int.random(in: 0..<(same + 1), using: &rng) == 0 { chosen = i }
            }
            original[chosen, default: 0] += 1
        }
        let chi2Original = original.values.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        #expect(chi2Original > 100, "\(original)")
    }

    @Test func score() {
        #expect(PromotionScoring.score(interest: 3, counts: InteractionCounts(shown: 4, clicked: 2, calendarAdds: 1)) == 30 - 4 - 10 - 100)
        // Saved: −30; a rating r: +5·(r − 3).
        #expect(PromotionScoring.score(interest: 0, counts: InteractionCounts(saved: 1)) == -30)
        #expect(PromotionScoring.score(interest: 1, counts: InteractionCounts(rating: 5)) == 10 + 10)
        #expect(PromotionScoring.score(interest: 1, counts: InteractionCounts(rating: 1)) == 10 - 10)
        #expect(PromotionScoring.interest(of: ["food", "promotion", "market"], in: ["market": 4, "food": 1]) == 4)
        #expect(PromotionScoring.interest(of: ["food"], in: ["music": 4]) == 0)
        #expect(PromotionScoring.interest(of: ["food", "beer"], in: ["food": -3]) == -3)
    }

    @Test(arguments: Backend.all) func samplePromotions(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.samplesDirectory = samplesDirectory }
        try await h.app().test(.router) { client in
            // At the Marktplatz: the Markthalle tasting plate covers; its bakery offer is related
            let r = try await client.call(.get, "/v1/promotions/nearby?lat=48.7753&lon=9.1783", token: "demo-token-anna")
            #expect(r.featureIDs.contains("bcn_promo_markthalle_tasting"), "\(r.text)")
            let pick = try await client.call(.get, "/v1/promotions/pick?lat=48.7753&lon=9.1783", token: "demo-token-anna")
            #expect(pick.json?["promotion"]?["properties"]?["service"] == "promotion")
            let milaneo = try await client.call(.get, "/v1/promotions/nearby?lat=48.79131&lon=9.18242", token: "demo-token-anna")
            #expect(milaneo.featureIDs == ["bcn_promo_milaneo_lunch"])
            #expect((milaneo.json?["related"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue } == ["bcn_promo_markthalle_tasting"])
        }
    }
}
