import DBeaconCore
import DBeaconServices
import Hummingbird

/// `/v1/webhooks…`: registration, listing, secret rotation, deliveries, redelivery.
struct WebhookController {
    /// The webhook service: endpoints (with the SSRF check on their URLs), secrets and deliveries.
    let webhooks: WebhookService
    /// Bodies of `POST /v1/webhooks` may be this large; beyond, 413 `body_too_large`.
    let maxBodyBytes: Int

    /// Registers the webhook routes on the authenticated `/v1` group. An endpoint that is not the
    /// caller's is 404, as one that does not exist (the admin token sees all).
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.post("webhooks", use: create)
        group.get("webhooks", use: list)
        group.get("webhooks/:id", use: get)
        group.delete("webhooks/:id", use: delete)
        group.post("webhooks/:id/rotate-secret", use: rotate)
        group.post("webhooks/:id/enable", use: enable)
        group.get("webhooks/:id/deliveries", use: deliveries)
        group.post("webhooks/:id/deliveries/:delivery/redeliver", use: redeliver)
    }

    /// An endpoint as the API shows it; `secret` only when asked (the answer to its creation),
    /// never in lists.
    static func encode(_ w: Webhook, secret: Bool = false) -> JSONValue {
        var o = JSONObject([
            ("id", .string(w.id)), ("url", .string(w.url)), ("events", .array(w.events.map(JSONValue.string))),
            ("scope", .string(w.scope.rawValue)), ("owner", .optional(w.owner?.rawValue)), ("description", .optional(w.description)),
            ("status", .string(w.status.rawValue)), ("disabled_reason", .optional(w.disabledReason)),
            ("created_at", .string(w.createdAt.rfc3339)),
        ])
        if secret { o["secret"] = .string(w.secret) }
        return .object(o)
    }

    /// `POST /v1/webhooks` `{"url","events"?,"scope"?,"description"?}`: registers an endpoint for
    /// the caller's events (`scope: user`) or, with the admin token, for every event (`scope: all`,
    /// 403 for a user). 201 with the endpoint, its signing `secret` (shown only here) and
    /// `Location`; 409 `too_many_webhooks` past the per-user limit, 422 for a URL the SSRF check
    /// refuses.
    @Sendable func create(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        var request = request
        let body = try ObjectReader(try await request.jsonBody(limit: maxBodyBytes))
        let w = try await webhooks.create(url: try body.string("url", maxLength: 2048),
                                          events: try body.optionalStringArray("events", maxCount: 50, maxLength: 64),
                                          scope: try body.optionalString("scope", maxLength: 10),
                                          description: try body.optionalString("description", maxLength: 500),
                                          by: context.principal)
        return .json(Self.encode(w, secret: true), status: .created, headers: [.location: "/v1/webhooks/\(w.id)"])
    }

    /// `GET /v1/webhooks`: `{"webhooks": […]}`, the caller's endpoints (all of them for the admin
    /// token), without secrets.
    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(.object(["webhooks": .array(try await webhooks.list(by: context.principal).map { Self.encode($0) })]))
    }

    /// `GET /v1/webhooks/{id}`: one endpoint, without its secret.
    @Sendable func get(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(Self.encode(try await webhooks.get(try context.parameters.require("id"), by: context.principal)))
    }

    /// `DELETE /v1/webhooks/{id}`: removes the endpoint. 204.
    @Sendable func delete(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        try await webhooks.delete(try context.parameters.require("id"), by: context.principal)
        return Response(status: .noContent)
    }

    /// `POST /v1/webhooks/{id}/rotate-secret`: a new signing secret; the previous one keeps signing
    /// beside it until `previous_secret_expires_at` (24 hours).
    @Sendable func rotate(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let w = try await webhooks.rotateSecret(try context.parameters.require("id"), by: context.principal)
        return .json(.object([
            "id": .string(w.id), "secret": .string(w.secret),
            "previous_secret_expires_at": .optional(w.previousSecretExpiresAt?.rfc3339),
        ]))
    }

    /// `POST /v1/webhooks/{id}/enable`: turns an endpoint disabled by a 410 answer back on (its URL
    /// is checked again); its pending deliveries resume.
    @Sendable func enable(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        .json(Self.encode(try await webhooks.enable(try context.parameters.require("id"), by: context.principal)))
    }

    /// `GET /v1/webhooks/{id}/deliveries`: the endpoint's deliveries, a page at a time, each with
    /// its attempt log; `next_attempt_at` only while one is pending.
    @Sendable func deliveries(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let page = try await webhooks.deliveries(try context.parameters.require("id"), after: try await context.position(of: try q.string("cursor")), limit: try q.limit(),
                                                 by: context.principal)
        return .json(.object([
            "deliveries": .array(page.items.map { d, attempts in
                .object(JSONObject([
                    ("id", .string("dlv_\(d.seq)")), ("event_id", .string(d.event.id.rawValue)),
                    ("event_type", .string(d.event.type.rawValue)), ("status", .string(d.status.rawValue)),
                    ("attempts", .int(d.attempts)),
                    ("next_attempt_at", d.status == .pending ? .string(d.nextAttemptAt.rfc3339) : .null),
                    ("last_status_code", .int(d.lastStatusCode)), ("last_error", .optional(d.lastError)),
                    ("created_at", .string(d.createdAt.rfc3339)),
                    ("attempt_log", .array(attempts.map { a in
                        .object(JSONObject([
                            ("attempt", .int(a.attempt)), ("started_at", .string(a.startedAt.rfc3339)),
                            ("duration_ms", .int(a.durationMs)), ("status_code", .int(a.statusCode)), ("error", .optional(a.error)),
                        ]))
                    })),
                ]))
            }),
            "next_cursor": .optional(try await context.cursor(after: page.next)),
        ]))
    }

    /// `POST /v1/webhooks/{id}/deliveries/{delivery}/redeliver`: queues a delivery (`dlv_<seq>`)
    /// again. 202 `{"id","status":"pending"}`; 404 for a delivery id of another form.
    @Sendable func redeliver(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let raw = try context.parameters.require("delivery")
        guard raw.hasPrefix("dlv_"), let seq = Int64(raw.dropFirst(4)) else { throw DBeaconError.notFound("delivery \(raw)") }
        try await webhooks.redeliver(try context.parameters.require("id"), delivery: seq, by: context.principal)
        return .json(.object(["id": .string(raw), "status": "pending"]), status: .accepted)
    }
}
