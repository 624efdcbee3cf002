package import DBeaconCore

/// Webhook endpoints and the delivery outbox.
package protocol WebhookStore: Sendable {
    func createWebhook(_ webhook: Webhook) async throws
    func webhook(id: String) async throws -> Webhook?
    /// The endpoints of `owner`, or all when nil.
    func webhooks(owner: UserID?) async throws -> [Webhook]
    func deleteWebhook(id: String) async throws
    func updateWebhook(_ webhook: Webhook) async throws

    /// Marks up to `limit` due deliveries of active endpoints as in flight and returns them.
    func claimDueDeliveries(now: Timestamp, limit: Int) async throws -> [Delivery]
    /// Records an attempt and what follows from it; `disableWebhook` turns the endpoint off (HTTP 410).
    func recordDeliveryAttempt(seq: Int64, attempt: DeliveryAttempt, outcome: DeliveryOutcome, disableWebhook: String?) async throws
    /// Puts deliveries left in flight by a stopped process back to pending (their attempts are kept).
    func resetInFlightDeliveries() async throws
    /// When the next pending delivery is due, if any.
    func nextDeliveryDue() async throws -> Timestamp?
    /// Deliveries of a webhook, newest first, with their attempts.
    func deliveries(webhook: String, after: Int64?, limit: Int) async throws -> Page<(Delivery, [DeliveryAttempt])>
    /// Schedules a delivery again now (keeping its id and attempt history).
    func redeliver(seq: Int64, webhook: String, now: Timestamp) async throws
}

/// Everything DBeacon stores.
package typealias DBeaconStore = BeaconStore & EventStore & WebhookStore & TagStore & VisitStore
