package import DBeaconCore
package import DBeaconStore

/// Webhook endpoints: registration (with the SSRF check), listing, secret rotation,
/// deliveries and redelivery. Users manage their own endpoints; the admin token manages all
/// and may subscribe to every event (`scope: all`).
package struct WebhookService: Sendable {
    let store: any DBeaconStore
    package let ssrf: SSRFGuard
    package let clock: any WallClock
    package let wake: WakeSignal
    /// How long the previous secret keeps signing after a rotation.
    package static let rotationGraceSeconds = 24 * 3600.0
    package static let maxPerUser = 25

    package init(store: any DBeaconStore, ssrf: SSRFGuard, clock: any WallClock, wake: WakeSignal) {
        self.store = store
        self.ssrf = ssrf
        self.clock = clock
        self.wake = wake
    }

    package func create(url: String, events: [String]?, scope: String?, description: String?, by principal: Principal) async throws -> Webhook {
        let scopeValue = scope ?? (principal.isAdmin ? "all" : "user")
        guard let parsedScope = Webhook.Scope(rawValue: scopeValue) else {
            throw DBeaconError.invalid("scope", "scope must be user or all", code: "invalid_value")
        }
        switch (parsedScope, principal) {
        case (.all, .user): throw DBeaconError.forbidden("scope all (every event) needs the admin token")
        case (.user, .admin): throw DBeaconError.invalid("scope", "the admin token has no events of its own; use scope all", code: "invalid_value")
        default: break
        }
        let filters = events ?? ["*"]
        guard !filters.isEmpty, filters.count <= 50 else {
            throw DBeaconError.invalid("events", "events must list 1–50 types or patterns (\"*\", \"beacon.*\")", code: "invalid_value")
        }
        for (i, f) in filters.enumerated() where !(f == "*" || EventType.all.contains { $0.rawValue == f }
                                                  || (f.hasSuffix(".*") && EventType.all.contains { $0.rawValue.hasPrefix(String(f.dropLast())) })) {
            throw DBeaconError.invalid("events[\(i)]", "unknown event type \(f)", code: "invalid_value")
        }
        if let owner = principal.userID, try await store.webhooks(owner: owner).count >= Self.maxPerUser {
            throw DBeaconError.conflict("at most \(Self.maxPerUser) webhooks per user", code: "too_many_webhooks")
        }
        _ = try await ssrf.check(url)
        let webhook = Webhook(id: WebhookID.generate().rawValue, owner: principal.userID, scope: parsedScope, url: url,
                              events: filters, description: description, secret: StandardWebhooks.newSecret(), createdAt: clock.now())
        try await store.createWebhook(webhook)
        return webhook
    }

    package func list(by principal: Principal) async throws -> [Webhook] {
        try await store.webhooks(owner: principal.userID)
    }

    /// The endpoint if it belongs to the caller (the admin sees all); otherwise not found.
    package func get(_ id: String, by principal: Principal) async throws -> Webhook {
        guard let w = try await store.webhook(id: id), principal.isAdmin || w.owner == principal.userID else {
            throw DBeaconError.notFound("webhook \(id)")
        }
        return w
    }

    package func delete(_ id: String, by principal: Principal) async throws {
        _ = try await get(id, by: principal)
        try await store.deleteWebhook(id: id)
    }

    /// A new secret; the old one keeps signing (both signatures are sent) for 24 hours.
    package func rotateSecret(_ id: String, by principal: Principal) async throws -> Webhook {
        var w = try await get(id, by: principal)
        w.previousSecret = w.secret
        w.previousSecretExpiresAt = clock.now().adding(seconds: Self.rotationGraceSeconds)
        w.secret = StandardWebhooks.newSecret()
        try await store.updateWebhook(w)
        return w
    }

    /// Turns a disabled endpoint (after HTTP 410) back on; its pending deliveries resume.
    package func enable(_ id: String, by principal: Principal) async throws -> Webhook {
        var w = try await get(id, by: principal)
        _ = try await ssrf.check(w.url)
        w.status = .active
        w.disabledReason = nil
        try await store.updateWebhook(w)
        wake.signal()
        return w
    }

    package func deliveries(_ id: String, after: Int64?, limit: Int, by principal: Principal) async throws -> Page<(Delivery, [DeliveryAttempt])> {
        _ = try await get(id, by: principal)
        return try await store.deliveries(webhook: id, after: after, limit: limit)
    }

    package func redeliver(_ id: String, delivery: Int64, by principal: Principal) async throws {
        _ = try await get(id, by: principal)
        try await store.redeliver(seq: delivery, webhook: id, now: clock.now())
        wake.signal()
    }
}
