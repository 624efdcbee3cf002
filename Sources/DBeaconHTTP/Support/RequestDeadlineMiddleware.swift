import DBeaconCore
import DBeaconStore
import Hummingbird

/// On PostgreSQL, bounds the time to an answer of every request (`--db-timeout` + 1 s): one database call
/// already answers within the deadline (`DatabaseDeadline`), but a request makes several, so the
/// whole is bounded too: each call is bounded by what is left of the request's time
/// (`DatabaseDeadline.request`), and a call past it is answered 503 `database_unavailable` with
/// `Retry-After` at once (a write may have committed just before: read it back, or retry with
/// `If-Match`). Imports are bulk work and are not bounded; a stream's answer starts within the
/// bound and then runs on.
///
/// (The bound is a task-local instant, read by the calls themselves: the request's handler
/// used to run in a child task beside a sleeping one, two tasks and a timer for every request,
/// which cost a PostgreSQL node 15 % of its fixes.)
struct RequestDeadlineMiddleware<Context: RequestContext>: RouterMiddleware {
    let seconds: Double

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.uri.path.hasSuffix("/beacons/import") { return try await next(request, context) }
        return try await DatabaseDeadline.$request.withValue(.now + .milliseconds(Int64(seconds * 1000))) {
            try await next(request, context)
        }
    }
}
