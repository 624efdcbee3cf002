package import DBeaconCore
import Foundation
import GRDB

extension SpatiaLiteStore: WebhookStore {
    package func createWebhook(_ w: Webhook) async throws {
        try await write { db, _ in
            try db.execute(sql: """
                INSERT INTO webhooks(id, owner, scope, url, events, description, secret, previous_secret,
                    previous_secret_expires_at, status, disabled_reason, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: Self.webhookArguments(w))
        }
    }

    package func updateWebhook(_ w: Webhook) async throws {
        try await write { db, _ in
            var args = Self.webhookArguments(w)
            args += [w.id]
            try db.execute(sql: """
                UPDATE webhooks SET id = ?, owner = ?, scope = ?, url = ?, events = ?, description = ?, secret = ?,
                    previous_secret = ?, previous_secret_expires_at = ?, status = ?, disabled_reason = ?, created_at = ?
                WHERE id = ?
                """, arguments: args)
            if db.changesCount == 0 { throw DBeaconError.notFound("webhook \(w.id)") }
        }
    }

    private static func webhookArguments(_ w: Webhook) -> StatementArguments {
        [w.id, w.owner?.rawValue, w.scope.rawValue, w.url, JSONValue.array(w.events.map(JSONValue.string)).jsonString,
         w.description, w.secret, w.previousSecret, w.previousSecretExpiresAt?.millis, w.status.rawValue, w.disabledReason,
         w.createdAt.millis]
    }

    package func webhook(id: String) async throws -> Webhook? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM webhooks WHERE id = ?", arguments: [id]).map { Self.webhook(from: $0) }
        }
    }

    package func webhooks(owner: UserID?) async throws -> [Webhook] {
        try await read { db in
            if let owner {
                return try Row.fetchAll(db, sql: "SELECT * FROM webhooks WHERE owner = ? ORDER BY created_at, id",
                                        arguments: [owner.rawValue]).map { Self.webhook(from: $0) }
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM webhooks ORDER BY created_at, id").map { Self.webhook(from: $0) }
        }
    }

    package func deleteWebhook(id: String) async throws {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM webhooks WHERE id = ?", arguments: [id])
            if db.changesCount == 0 { throw DBeaconError.notFound("webhook \(id)") }
        }
    }

    static func webhook(from row: Row, prefix: String = "") -> Webhook {
        func c(_ name: String) -> String { prefix + name }
        let events = (try? JSONParser.parse(row[c("events")] as String))?.arrayValue?.compactMap(\.stringValue) ?? []
        return Webhook(
            id: row[c("id")], owner: (row[c("owner")] as String?).map(UserID.init(uncheckedRawValue:)),
            scope: Webhook.Scope(rawValue: row[c("scope")]) ?? .user, url: row[c("url")], events: events,
            description: row[c("description")], secret: row[c("secret")], previousSecret: row[c("previous_secret")],
            previousSecretExpiresAt: (row[c("previous_secret_expires_at")] as Int64?).map(Timestamp.init(millis:)),
            status: Webhook.Status(rawValue: row[c("status")]) ?? .disabled, disabledReason: row[c("disabled_reason")],
            createdAt: Timestamp(millis: row[c("created_at")]))
    }

    // MARK: Outbox

    static let deliveryColumns = """
        o.seq AS o_seq, o.status AS o_status, o.attempts AS o_attempts, o.first_attempt_at AS o_first,
        o.next_attempt_at AS o_next, o.last_status_code AS o_code, o.last_error AS o_error, o.created_at AS o_created,
        e.id, e.type, e.recipient, e.beacon_id, e.created_at, e.data,
        w.id AS w_id, w.owner AS w_owner, w.scope AS w_scope, w.url AS w_url, w.events AS w_events,
        w.description AS w_description, w.secret AS w_secret, w.previous_secret AS w_previous_secret,
        w.previous_secret_expires_at AS w_previous_secret_expires_at, w.status AS w_status,
        w.disabled_reason AS w_disabled_reason, w.created_at AS w_created_at
        """

    static func delivery(from row: Row) -> Delivery {
        Delivery(seq: row["o_seq"], event: event(from: row), webhook: webhook(from: row, prefix: "w_"),
                 status: Delivery.Status(rawValue: row["o_status"]) ?? .pending, attempts: row["o_attempts"],
                 firstAttemptAt: (row["o_first"] as Int64?).map(Timestamp.init(millis:)),
                 nextAttemptAt: Timestamp(millis: row["o_next"]), lastStatusCode: row["o_code"], lastError: row["o_error"],
                 createdAt: Timestamp(millis: row["o_created"]))
    }

    package func claimDueDeliveries(now: Timestamp, limit: Int) async throws -> [Delivery] {
        try await write { db, _ in
            let rows = try Row.fetchAll(db, sql: """
                SELECT \(Self.deliveryColumns) FROM outbox o
                JOIN events e ON e.seq = o.event_seq JOIN webhooks w ON w.id = o.webhook_id
                WHERE o.status = 'pending' AND o.next_attempt_at <= ? AND w.status = 'active'
                ORDER BY o.next_attempt_at, o.seq LIMIT ?
                """, arguments: [now.millis, limit])
            let deliveries = rows.map(Self.delivery(from:))
            let claim = try db.cachedStatement(sql: "UPDATE outbox SET status = 'in_flight', updated_at = ? WHERE seq = ?")
            for d in deliveries { try claim.execute(arguments: [now.millis, d.seq]) }
            return deliveries
        }
    }

    package func recordDeliveryAttempt(seq: Int64, attempt: DeliveryAttempt, outcome: DeliveryOutcome, disableWebhook: String?) async throws {
        try await write { db, _ in
            try db.execute(sql: """
                INSERT INTO delivery_attempts(outbox_seq, attempt, started_at, duration_ms, status_code, error)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [seq, attempt.attempt, attempt.startedAt.millis, attempt.durationMs, attempt.statusCode, attempt.error])
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
            try db.execute(sql: """
                UPDATE outbox SET status = ?, attempts = ?, first_attempt_at = coalesce(first_attempt_at, ?),
                    next_attempt_at = coalesce(?, next_attempt_at), last_status_code = ?, last_error = ?, updated_at = ?
                WHERE seq = ?
                """, arguments: [status, attempt.attempt, attempt.startedAt.millis, next, attempt.statusCode, error, now, seq])
            if let reason = disableWebhook {
                try db.execute(sql: """
                    UPDATE webhooks SET status = 'disabled', disabled_reason = ?
                    WHERE id = (SELECT webhook_id FROM outbox WHERE seq = ?)
                    """, arguments: [reason, seq])
            }
        }
    }

    package func resetInFlightDeliveries() async throws {
        try await write { db, _ in
            try db.execute(sql: "UPDATE outbox SET status = 'pending' WHERE status = 'in_flight'")
        }
    }

    package func nextDeliveryDue() async throws -> Timestamp? {
        try await read { db in
            try Int64.fetchOne(db, sql: """
                SELECT min(o.next_attempt_at) FROM outbox o JOIN webhooks w ON w.id = o.webhook_id
                WHERE o.status = 'pending' AND w.status = 'active'
                """).map(Timestamp.init(millis:))
        }
    }

    package func deliveries(webhook: String, after: Int64?, limit: Int) async throws -> Page<(Delivery, [DeliveryAttempt])> {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT \(Self.deliveryColumns) FROM outbox o
                JOIN events e ON e.seq = o.event_seq JOIN webhooks w ON w.id = o.webhook_id
                WHERE o.webhook_id = ? AND o.seq < ? ORDER BY o.seq DESC LIMIT ?
                """, arguments: [webhook, after ?? Int64.max, limit + 1])
            let page = rows.prefix(limit).map(Self.delivery(from:))
            var items: [(Delivery, [DeliveryAttempt])] = []
            for d in page {
                let attempts = try Row.fetchAll(db, sql: "SELECT * FROM delivery_attempts WHERE outbox_seq = ? ORDER BY attempt, seq",
                                                arguments: [d.seq]).map {
                    DeliveryAttempt(attempt: $0["attempt"], startedAt: Timestamp(millis: $0["started_at"]), durationMs: $0["duration_ms"],
                                    statusCode: $0["status_code"], error: $0["error"])
                }
                items.append((d, attempts))
            }
            return Page(items: items, next: rows.count > limit ? page.last?.seq : nil)
        }
    }

    package func redeliver(seq: Int64, webhook: String, now: Timestamp) async throws {
        try await write { db, _ in
            try db.execute(sql: """
                UPDATE outbox SET status = 'pending', next_attempt_at = ?, updated_at = ?
                WHERE seq = ? AND webhook_id = ? AND status != 'in_flight'
                """, arguments: [now.millis, now.millis, seq, webhook])
            if db.changesCount == 0 { throw DBeaconError.notFound("delivery \(seq)") }
        }
    }
}
