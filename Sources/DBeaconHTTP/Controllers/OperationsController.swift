import DBeaconCore
import DBeaconStore
import Hummingbird
import NIOCore

/// `/healthz`, `/metrics` and `/openapi.yaml`: unauthenticated operational endpoints.
struct OperationsController {
    let store: any BeaconStore
    let metrics: AppMetrics
    /// Polygons the in-memory index has not prepared yet (0 with the SQL engine).
    let pendingPolygons: @Sendable () -> Int

    func addRoutes(to router: Router<AppRequestContext>) {
        router.get("healthz") { _, _ in
            Response.json(.object(["status": "ok"]))
        }
        router.get("metrics") { _, _ in
            let text = try await metrics.exposition(store: store, pendingPolygons: pendingPolygons())
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }
    }
}
