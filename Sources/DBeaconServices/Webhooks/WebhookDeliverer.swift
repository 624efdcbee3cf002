import AsyncHTTPClient
import DBeaconCore
package import DBeaconStore
import Foundation
package import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// Delivers the outbox to webhook endpoints (Standard Webhooks), as a background service.
///
/// A delivery is claimed (in flight), sent once, and its outcome recorded: 2xx delivered;
/// anything else (3xx included: redirects are not followed), a timeout or a refused connection
/// is retried on the schedule (seconds after the first attempt, plus up to 10% jitter of the
/// gap, never earlier than `Retry-After` on 429/503); after the last attempt it has failed.
/// 410 disables the endpoint. Before each attempt the recipient's right to see the beacon is
/// checked again, and the URL's host is resolved and checked again and the connection goes
/// to the checked address. At start-up, deliveries left in flight by a stopped process become
/// pending again with their attempt count.
package struct WebhookDeliverer: Service {
    package let store: any DBeaconStore
    /// The event log's visibility rule, applied again before each attempt.
    package let feed: EventFeed
    package let ssrf: SSRFGuard
    package let clock: any WallClock
    package let schedule: [Double]
    package let wake: WakeSignal
    package let logger: Logger
    package var timeout: Duration = .seconds(15)
    package var concurrency = 16

    package init(feed: EventFeed, ssrf: SSRFGuard, clock: any WallClock, schedule: [Double], wake: WakeSignal, logger: Logger) {
        self.store = feed.store
        self.feed = feed
        self.ssrf = ssrf
        self.clock = clock
        self.schedule = schedule.isEmpty ? [0] : schedule
        self.wake = wake
        self.logger = logger
    }

    package func run() async throws {
        try await store.resetInFlightDeliveries()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let sent = try await runOnce()
                    if sent == 0 {
                        // The claim just made is a commit, and on PostgreSQL every commit wakes
                        // this loop: forget that signal, or an idle server claims nothing in a
                        // tight loop. A delivery committed meanwhile is due by now, so
                        // `sleepTime` (read after this) sleeps only 10 ms.
                        wake.clear()
                        await wake.wait(timeout: try await sleepTime())
                    }
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("webhook delivery loop failed", metadata: ["error": "\(error)"])
                    await wake.wait(timeout: .seconds(1))
                }
            }
        }
    }

    private func sleepTime() async throws -> Duration {
        guard let next = try await store.nextDeliveryDue() else { return .seconds(5) }
        let ms = max(10, min(5000, next.millis - clock.now().millis))
        return .milliseconds(ms)
    }

    /// Sends every delivery due now; returns how many were attempted.
    @discardableResult
    package func runOnce() async throws -> Int {
        let due = try await store.claimDueDeliveries(now: clock.now(), limit: concurrency)
        guard !due.isEmpty else { return 0 }
        await withTaskGroup(of: Void.self) { group in
            for delivery in due { group.addTask { await deliver(delivery) } }
        }
        return due.count
    }

    private func deliver(_ d: Delivery) async {
        let attempt = d.attempts + 1
        let started = clock.now()
        let clockStart = ContinuousClock.now
        func elapsedMs() -> Int {
            let elapsed = (ContinuousClock.now - clockStart).components
            return Int(elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000)
        }
        do {
            var event = d.event
            if d.webhook.scope == .user {
                guard let readable = try await feed.readable([d.event], for: d.event.recipient).first else {
                    let reason = "the recipient may no longer see the beacon"
                    try await store.recordDeliveryAttempt(seq: d.seq, attempt: DeliveryAttempt(attempt: d.attempts, startedAt: started,
                        durationMs: 0, statusCode: nil, error: nil), outcome: .cancelled(reason), disableWebhook: nil)
                    return
                }
                event = readable
            }
            var statusCode: Int?
            var failure: String?
            var retryAfter: Double?
            do {
                let target = try await ssrf.check(d.webhook.url)
                let response = try await send(d, event: event, to: target, at: started)
                statusCode = response.status
                retryAfter = response.retryAfter
            } catch let e as DBeaconError {
                failure = e.message
            } catch {
                failure = Self.describe(error)
            }
            let outcome: DeliveryOutcome
            var disable: String?
            if let code = statusCode, (200..<300).contains(code) {
                outcome = .delivered
            } else if statusCode == 410 {
                outcome = .failed
                disable = "the endpoint answered 410 Gone"
            } else {
                outcome = nextOutcome(d, attempt: attempt, now: clock.now(), retryAfter: (statusCode == 429 || statusCode == 503) ? retryAfter : nil)
            }
            if failure == nil, let code = statusCode, !(200..<300).contains(code) { failure = "HTTP \(code)" }
            try await store.recordDeliveryAttempt(seq: d.seq, attempt: DeliveryAttempt(attempt: attempt, startedAt: started,
                durationMs: elapsedMs(), statusCode: statusCode, error: failure), outcome: outcome, disableWebhook: disable)
            logger.debug("webhook delivery", metadata: ["webhook": "\(d.webhook.id)", "event": "\(d.event.id)",
                                                        "attempt": "\(attempt)", "status": "\(statusCode.map(String.init) ?? failure ?? "")"])
        } catch {
            logger.error("recording a webhook delivery failed", metadata: ["error": "\(error)", "delivery": "\(d.seq)"])
        }
    }

    /// Retry on the schedule (with jitter), not before `Retry-After`; failed after the last attempt.
    func nextOutcome(_ d: Delivery, attempt: Int, now: Timestamp, retryAfter: Double?) -> DeliveryOutcome {
        guard attempt < schedule.count else { return .failed }
        let first = d.firstAttemptAt ?? now
        let gap = schedule[attempt] - schedule[attempt - 1]
        var next = first.adding(seconds: schedule[attempt] + Double.random(in: 0...max(0, gap * 0.1)))
        if let retryAfter { next = max(next, now.adding(seconds: min(retryAfter, 86_400))) }
        return .retry(at: max(next, now))
    }

    private struct SendResult {
        var status: Int
        var retryAfter: Double?
    }

    private func send(_ d: Delivery, event: Event, to target: WebhookTarget, at: Timestamp) async throws -> SendResult {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow,
                                                     timeout: .init(connect: .seconds(5), read: .seconds(15)))
        if !target.hostIsLiteral, let address = target.addresses.first {
            configuration.dnsOverride = [target.host: address]
        }
        let client = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
        do {
            let body = JSONWriter.serialize(event.json)
            var request = HTTPClientRequest(url: d.webhook.url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "DBeacon-Webhooks/1.0")
            for (name, value) in StandardWebhooks.headers(secrets: d.webhook.signingSecrets(at: at), id: d.event.id.rawValue,
                                                          timestamp: Int(at.seconds), body: body) {
                request.headers.add(name: name, value: value)
            }
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(request, timeout: .seconds(Int64(timeout.components.seconds)))
            // The body is drained so the connection can close cleanly; only the status counts,
            // so a receiver that sends a broken or huge body has still answered.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let retryAfter = response.headers.first(name: "Retry-After").flatMap(Self.parseRetryAfter)
            try await client.shutdown()
            return SendResult(status: Int(response.status.code), retryAfter: retryAfter)
        } catch {
            // The request's error is the one to report; a client that also fails to shut down
            // has nothing left to release.
            try? await client.shutdown()
            throw error
        }
    }

    /// `Retry-After` as seconds (delta or HTTP date).
    static func parseRetryAfter(_ value: String) -> Double? {
        if let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return max(0, date.timeIntervalSinceNow)
    }

    static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("connectTimeout") || text.contains("deadlineExceeded") || text.contains("readTimeout") { return "timeout" }
        if text.contains("connectionRefused") || text.contains("Connection refused") { return "connection refused" }
        return String(text.prefix(300))
    }
}
