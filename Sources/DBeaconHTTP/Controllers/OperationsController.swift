import DBeaconCore
import DBeaconServices
import DBeaconStore
import Foundation
import Hummingbird
import NIOCore

/// `/healthz`, `/metrics` and `/openapi.yaml`: operational endpoints. `/metrics` carries
/// operator data (counts of every beacon, private ones included), so it needs the admin token
/// or the metrics token (`--metrics-token`); the others are open.
struct OperationsController {
    let store: any BeaconStore
    let metrics: AppMetrics
    let auth: AuthService
    /// `--metrics-token`: a token that may read `/metrics` only (for a Prometheus scraper).
    let metricsToken: String?
    /// Polygons the in-memory index has not prepared yet (0 with the SQL engine).
    let pendingPolygons: @Sendable () -> Int

    func addRoutes(to router: Router<AppRequestContext>) {
        router.get("healthz") { _, _ in
            Response.json(.object(["status": "ok"]))
        }
        router.get("metrics") { request, _ in
            try await authorizeMetrics(request)
            let text = try await metrics.exposition(store: store, pendingPolygons: pendingPolygons())
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

    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
