import DBeaconCore
import DBeaconServices
import Foundation
import Hummingbird
import NIOCore

/// `/healthz`, `/metrics` and `/openapi.yaml`: operational endpoints. `/metrics` carries
/// operator data (counts of every beacon, private ones included), so it needs the admin token
/// or the metrics token (`--metrics-token`); the others are open.
struct OperationsController {
    /// The database, the change feed, the index's pending polygons, as this node sees them.
    let health: NodeHealth
    /// The counters `/metrics` exposes, shared with `MetricsMiddleware`.
    let metrics: AppMetrics
    /// Recognises the admin token for `/metrics`.
    let auth: AuthService
    /// `--metrics-token`: a token that may read `/metrics` only (for a Prometheus scraper).
    let metricsToken: String?
    /// How long `/readyz` waits for the database.
    let readinessSeconds: Double

    /// Registers the operational routes at the root, outside `/v1` and its bearer authentication:
    /// `/healthz` (liveness: 200 `{"status":"ok"}` whenever the process answers), `/readyz`,
    /// `/metrics` (Prometheus text format 0.0.4) and `/openapi.yaml` (the embedded
    /// `OpenAPIDocument`).
    func addRoutes(to router: Router<AppRequestContext>) {
        router.get("healthz") { _, _ in
            Response.json(.object(["status": "ok"]))
        }
        // Readiness: 200 only while this node can serve current answers; a load balancer
        // drains it otherwise (503 with `Retry-After`).
        router.get("readyz") { _, _ in
            let database = await health.databaseAnswers(within: readinessSeconds)
            let feed = health.feed
            let feedState = feed.map { $0.isCatchingUp ? "catching_up" : $0.isConnected ? "connected" : "disconnected" } ?? "none"
            var reasons: [String] = []
            if !database { reasons.append("the database does not answer") }
            if let feed, !feed.isCurrent { reasons.append("the change feed is \(feedState.replacingOccurrences(of: "_", with: " "))") }
            let body: JSONValue = .object(JSONObject([
                ("status", .string(reasons.isEmpty ? "ready" : "not_ready")), ("database", .string(database ? "ok" : "unreachable")),
                ("change_feed", .string(feedState)),
            ]))
            guard reasons.isEmpty else {
                return Response.json(body, status: .serviceUnavailable, headers: [.retryAfter: "2"])
            }
            return Response.json(body)
        }
        router.get("metrics") { request, _ in
            try await authorizeMetrics(request)
            let text = try await metrics.exposition(health)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }
    }

    /// The admin token, or the metrics token; 401 otherwise (the same answer for a missing
    /// and a wrong token).
    private func authorizeMetrics(_ request: Request) async throws {
        let header = request.headers[.authorization] ?? ""
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw DBeaconError.unauthorized("/metrics needs Authorization: Bearer <admin token or metrics token>")
        }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        if let metricsToken, Self.constantTimeEqual(token, metricsToken) { return }
        if try await auth.authenticate(token: token) == .admin { return }
        throw DBeaconError.unauthorized("/metrics needs the admin token or the metrics token")
    }

    /// Compares two tokens in a time that depends on their lengths only, so timing does not reveal
    /// the metrics token byte by byte.
    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
