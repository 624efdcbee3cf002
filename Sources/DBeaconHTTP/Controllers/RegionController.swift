import DBeaconAPI
import DBeaconCore
import DBeaconServices
import Hummingbird

/// `GET /v1/regions`: what a phone should monitor near the caller (its crossings are reported
/// to `POST /v1/me/region-events`, in `LiveController`).
struct RegionController {
    /// The region service: which regions near a point a phone should monitor.
    let regions: RegionService

    /// Registers `GET /v1/regions` on the authenticated `/v1` group.
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("regions", use: list)
    }

    /// `GET /v1/regions?lat=&lon=`: at most `max` regions (default `RegionService.defaultMax`: 20,
    /// what iOS monitors at once) for a phone at the point: circles enclosing nearby beacons'
    /// perimeters (with any of the `tag`s), then their iBeacon entries, last a `refresh` circle.
    /// `max` is 2…`RegionService.maxMax`: 400 when not an integer, 422 when out of range.
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
