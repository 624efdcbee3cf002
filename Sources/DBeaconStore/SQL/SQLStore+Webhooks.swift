package import DBeaconCore
import Foundation

/// Webhook endpoints and the outbox, on either database. Several PostGIS processes deliver
/// from one outbox: a claim takes due rows skipping those another transaction holds
/// (`SQLDialect.lockSkippingLocked`) and marks them in flight with the claiming process, so
/// no delivery is sent twice.
extension SQLStore {
    package func createWebhook(_ w: Webhook) async throws {
        try await write { db, _ in
            try await db.rows("""
                INSERT INTO webhooks(id, owner, scope, url, events, description, secret, previous_secret,
                    previous_secret_expires_at, status, disabled_reason, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                """, Self.webhookArguments(w))
        }
    }

    package func updateWebhook(_ w: Webhook) async throws {
        try await write { db, _ in
            let updated = try await db.rows("""
                UPDATE webhooks SET id = $1, owner = $2, scope = $3, url = $4, events = $5, description = $6, secret = $7,
                    previous_secret = $8, previous_secret_expires_at = $9, status = $10, disabled_reason = $11, created_at = $12
                WHERE id = $13 RETURNING id
                """, Self.webhookArguments(w) + [w.id])
            if updated.isEmpty { throw DBeaconError.notFound("webhook \(w.id)") }
        }
    }

    private static func webhookArguments(_ w: Webhook) -> [any SQLArgument] {
        [w.id, w.owner?.rawValue, w.scope.rawValue, w.url, JSONValue.array(w.events.map(JSONValue.string)).jsonString,
         w.description, w.secret, w.previousSecret, w.previousSecretExpiresAt?.millis, w.status.rawValue, w.disabledReason,
         w.createdAt.millis]
    }

    package func webhook(id: String) async throws -> Webhook? {
        try await read { db in try await db.row("SELECT * FROM webhooks WHERE id = $1", [id]).map { try Self.webhook(from: $0) } }
    }

    package func webhooks(owner: UserID?) async throws -> [Webhook] {
        try await read { db in
            if let owner {
                return try await db.rows("SELECT * FROM webhooks WHERE owner = $1 ORDER BY created_at, id", [owner.rawValue])
                    .map { try Self.webhook(from: $0) }
            }
            return try await db.rows("SELECT * FROM webhooks ORDER BY created_at, id").map { try Self.webhook(from: $0) }
        }
    }

    package func deleteWebhook(id: String) async throws {
        try await write { db, _ in
            if try await db.rows("DELETE FROM webhooks WHERE id = $1 RETURNING id", [id]).isEmpty {
                throw DBeaconError.notFound("webhook \(id)")
            }
        }
    }

    static func webhook(from row: SQLRow, prefix: String = "") throws -> Webhook {
        func c(_ name: String) -> String { prefix + name }
        let events = (try? JSONParser.parse(try row.string(c("events"))))?.arrayValue?.compactMap(\.stringValue) ?? []
        return Webhook(
            id: try row.string(c("id")), owner: try row.optionalString(c("owner")).map(UserID.init(uncheckedRawValue:)),
            scope: Webhook.Scope(rawValue: try row.string(c("scope"))) ?? .user, url: try row.string(c("url")), events: events,
            description: try row.optionalString(c("description")), secret: try row.string(c("secret")),
            previousSecret: try row.optionalString(c("previous_secret")),
            previousSecretExpiresAt: try row.optionalTimestamp(c("previous_secret_expires_at")),
            status: Webhook.Status(rawValue: try row.string(c("status"))) ?? .disabled,
            disabledReason: try row.optionalString(c("disabled_reason")), createdAt: try row.timestamp(c("created_at")))
    }

    // MARK: Outbox

    static var deliveryColumns: String { """
        o.seq AS o_seq, o.status AS o_status, o.attempts AS o_attempts, o.first_attempt_at AS o_first,
        o.next_attempt_at AS o_next, o.last_status_code AS o_code, o.last_error AS o_error, o.created_at AS o_created,
        e.id, e.type, e.recipient, e.beacon_id, e.created_at, e.data,
        w.id AS w_id, w.owner AS w_owner, w.scope AS w_scope, w.url AS w_url, w.events AS w_events,
        w.description AS w_description, w.secret AS w_secret, w.previous_secret AS w_previous_secret,
        w.previous_secret_expires_at AS w_previous_secret_expires_at, w.status AS w_status,
        w.disabled_reason AS w_disabled_reason, w.created_at AS w_created_at
        """ }

    static func delivery(from row: SQLRow) throws -> Delivery {
        Delivery(seq: try row.int64("o_seq"), event: try event(from: row), webhook: try webhook(from: row, prefix: "w_"),
                 status: Delivery.Status(rawValue: try row.string("o_status")) ?? .pending, attempts: try row.int("o_attempts"),
                 firstAttemptAt: try row.optionalTimestamp("o_first"), nextAttemptAt: try row.timestamp("o_next"),
                 lastStatusCode: try row.optionalInt("o_code"), lastError: try row.optionalString("o_error"),
                 createdAt: try row.timestamp("o_created"))
    }

    /// Webhooks of a disabled user wait: their deliveries stay pending, and go out once the
    /// user is enabled again (nothing is lost meanwhile). The operator's endpoints have no owner.
    static func ownerEnabled(_ webhook: String) -> String {
        "NOT EXISTS (SELECT 1 FROM users u WHERE u.id = \(webhook).owner AND u.disabled_at IS NOT NULL)"
    }

    package func claimDueDeliveries(now: Timestamp, limit: Int) async throws -> [Delivery] {
        let claimant = deliveryClaimant
        return try await write { db, _ in
            let claimed = try await db.rows("""
                UPDATE outbox SET status = 'in_flight', updated_at = $1, claimed_by = $3
                WHERE seq IN (
                    SELECT o.seq FROM outbox o JOIN webhooks w ON w.id = o.webhook_id
                    WHERE o.status = 'pending' AND o.next_attempt_at <= $1 AND w.status = 'active' AND \(Self.ownerEnabled("w"))
                    ORDER BY o.next_attempt_at, o.seq LIMIT $2\(db.dialect.lockSkippingLocked("o")))
                RETURNING seq
                """, [now.millis, limit, claimant])
            guard !claimed.isEmpty else { return [] }
            return try await db.rows("""
                SELECT \(Self.deliveryColumns) FROM outbox o
                JOIN events e ON e.seq = o.event_seq JOIN webhooks w ON w.id = o.webhook_id
                WHERE \(db.dialect.contains("o.seq", "$1")) ORDER BY o.next_attempt_at, o.seq
                """, [claimed.map { try $0.int64("seq") }]).map { row in
                var delivery = try Self.delivery(from: row)
                delivery.status = .pending // as it was when claimed
                return delivery
            }
        }
    }

    package func recordDeliveryAttempt(seq: Int64, attempt: DeliveryAttempt, outcome: DeliveryOutcome, disableWebhook: String?) async throws {
        try await write { db, _ in
            // The delivery may be gone meanwhile (its webhook or event erased with its user).
            guard try await db.exists("SELECT 1 FROM outbox WHERE seq = $1\(db.dialect.forUpdate)", [seq]) else { return }
            try await db.rows("""
                INSERT INTO delivery_attempts(outbox_seq, attempt, started_at, duration_ms, status_code, error)
                VALUES ($1, $2, $3, $4, $5, $6)
                """, [seq, attempt.attempt, attempt.startedAt.millis, attempt.durationMs, attempt.statusCode, attempt.error])
            let status: String
            var next: Int64?
            var error = attempt.error
            switch outcome {
            case .delivered: status = "delivered"
            case .retry(let at): status = "pending"; next = at.millis
            case .failed: status = "failed"
            case .cancelled(let reason): status = "cancelled"; error = reason
            }
            let now = attempt.startedAt.millis + Int64(attempt.durationMs)
            try await db.rows("""
                UPDATE outbox SET status = $1, attempts = $2, first_attempt_at = coalesce(first_attempt_at, $3),
                    next_attempt_at = coalesce($4, next_attempt_at), last_status_code = $5, last_error = $6, updated_at = $7,
                    claimed_by = NULL
                WHERE seq = $8
                """, [status, attempt.attempt, attempt.startedAt.millis, next, attempt.statusCode, error, now, seq])
            if let reason = disableWebhook {
                try await db.rows("""
                    UPDATE webhooks SET status = 'disabled', disabled_reason = $1
                    WHERE id = (SELECT webhook_id FROM outbox WHERE seq = $2)
                    """, [reason, seq])
            }
        }
    }

    /// Puts back to pending the deliveries in flight of processes that are gone: their
    /// claimant session no longer exists (or they claimed without one). Deliveries another
    /// running process is sending right now stay with it.
    package func resetInFlightDeliveries() async throws {
        try await write { db, _ in
            try await db.rows("""
                UPDATE outbox SET status = 'pending', claimed_by = NULL
                WHERE status = 'in_flight' AND (claimed_by IS NULL OR claimed_by NOT IN (\(db.dialect.liveClaimants)))
                """)
        }
    }

    package func nextDeliveryDue() async throws -> Timestamp? {
        try await read { db in
            try await db.row("""
                SELECT min(o.next_attempt_at) AS due FROM outbox o JOIN webhooks w ON w.id = o.webhook_id
                WHERE o.status = 'pending' AND w.status = 'active' AND \(Self.ownerEnabled("w"))
                """)?.optionalTimestamp("due")
        }
    }

    package func deliveries(webhook: String, after: Int64?, limit: Int) async throws -> Page<(Delivery, [DeliveryAttempt])> {
        try await read { db in
            let rows = try await db.rows("""
                SELECT \(Self.deliveryColumns) FROM outbox o
                JOIN events e ON e.seq = o.event_seq JOIN webhooks w ON w.id = o.webhook_id
                WHERE o.webhook_id = $1 AND o.seq < $2 ORDER BY o.seq DESC LIMIT $3
                """, [webhook, after ?? Int64.max, limit + 1])
            let page = try rows.prefix(limit).map(Self.delivery(from:))
            var items: [(Delivery, [DeliveryAttempt])] = []
            for d in page {
                let attempts = try await db.rows("SELECT * FROM delivery_attempts WHERE outbox_seq = $1 ORDER BY attempt, seq", [d.seq]).map {
                    DeliveryAttempt(attempt: try $0.int("attempt"), startedAt: try $0.timestamp("started_at"),
                                    durationMs: try $0.int("duration_ms"), statusCode: try $0.optionalInt("status_code"),
                                    error: try $0.optionalString("error"))
                }
                items.append((d, attempts))
            }
            return Page(items: items, next: rows.count > limit ? page.last?.seq : nil)
        }
    }

    package func redeliver(seq: Int64, webhook: String, now: Timestamp) async throws {
        try await write { db, _ in
            let updated = try await db.rows("""
                UPDATE outbox SET status = 'pending', next_attempt_at = $1, updated_at = $1
                WHERE seq = $2 AND webhook_id = $3 AND status != 'in_flight' RETURNING seq
                """, [now.millis, seq, webhook])
            if updated.isEmpty { throw DBeaconError.notFound("delivery \(seq)") }
        }
    }
}
