/// A webhook endpoint subscribed to events.
package struct Webhook: Sendable, Hashable {
    package enum Scope: String, Sendable { case user, all }
    package enum Status: String, Sendable { case active, disabled }

    package var id: String
    /// The subscribing user; nil for the operator's `scope: all` endpoints.
    package var owner: UserID?
    package var scope: Scope
    package var url: String
    /// Filters: `*`, `beacon.*`, or exact types.
    package var events: [String]
    package var description: String?
    package var secret: String
    /// The secret before the last rotation, still signing until `previousSecretExpiresAt`.
    package var previousSecret: String?
    package var previousSecretExpiresAt: Timestamp?
    package var status: Status
    package var disabledReason: String?
    package var createdAt: Timestamp

    package init(id: String, owner: UserID?, scope: Scope, url: String, events: [String], description: String?,
                 secret: String, previousSecret: String? = nil, previousSecretExpiresAt: Timestamp? = nil,
                 status: Status = .active, disabledReason: String? = nil, createdAt: Timestamp) {
        self.id = id
        self.owner = owner
        self.scope = scope
        self.url = url
        self.events = events
        self.description = description
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousSecretExpiresAt = previousSecretExpiresAt
        self.status = status
        self.disabledReason = disabledReason
        self.createdAt = createdAt
    }

    /// The secrets that sign a delivery at `now` (the previous one during its grace period).
    package func signingSecrets(at now: Timestamp) -> [String] {
        if let previousSecret, let until = previousSecretExpiresAt, now < until { return [secret, previousSecret] }
        return [secret]
    }
}

/// One delivery of one event to one webhook.
package struct Delivery: Sendable {
    package enum Status: String, Sendable { case pending, inFlight = "in_flight", delivered, failed, cancelled }

    package var seq: Int64
    package var event: Event
    package var webhook: Webhook
    package var status: Status
    package var attempts: Int
    package var firstAttemptAt: Timestamp?
    package var nextAttemptAt: Timestamp
    package var lastStatusCode: Int?
    package var lastError: String?
    package var createdAt: Timestamp

    package init(seq: Int64, event: Event, webhook: Webhook, status: Status, attempts: Int, firstAttemptAt: Timestamp?,
                 nextAttemptAt: Timestamp, lastStatusCode: Int?, lastError: String?, createdAt: Timestamp) {
        self.seq = seq
        self.event = event
        self.webhook = webhook
        self.status = status
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.nextAttemptAt = nextAttemptAt
        self.lastStatusCode = lastStatusCode
        self.lastError = lastError
        self.createdAt = createdAt
    }
}

/// One HTTP attempt of a delivery.
package struct DeliveryAttempt: Sendable, Hashable {
    package var attempt: Int
    package var startedAt: Timestamp
    package var durationMs: Int
    package var statusCode: Int?
    package var error: String?

    package init(attempt: Int, startedAt: Timestamp, durationMs: Int, statusCode: Int?, error: String?) {
        self.attempt = attempt
        self.startedAt = startedAt
        self.durationMs = durationMs
        self.statusCode = statusCode
        self.error = error
    }
}

/// What happens to a delivery after an attempt.
package enum DeliveryOutcome: Sendable {
    case delivered
    case retry(at: Timestamp)
    case failed
    /// Not sent: the recipient may no longer see the beacon, or the endpoint is gone.
    case cancelled(String)
}
