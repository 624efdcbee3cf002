import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Hummingbird

/// `GET /v1/regions`: what a phone should monitor near the caller (its crossings are reported
/// to `POST /v1/me/region-events`, in `LiveController`).
struct RegionController {
    let regions: RegionService

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("regions", use: list)
    }

    @Sendable func list(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let q = QueryReader(request)
        let point = try q.position()
        var max = RegionService.defaultMax
        if let raw = try q.string("max") {
            guard raw.count <= 12, let n = Int(raw) else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "max must be an integer", path: "max")
            }
            guard (2...RegionService.maxMax).contains(n) else {
                throw DBeaconError.invalid("max", "max is an integer from 2 to \(RegionService.maxMax)", code: "out_of_range")
            }
            max = n
        }
        let found = try await regions.regions(at: point, max: max, tags: try q.tags(), by: context.principal)
        return .json(RegionEncoding.regions(found, max: max))
    }
}
