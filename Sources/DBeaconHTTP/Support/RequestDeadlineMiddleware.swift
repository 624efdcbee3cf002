import DBeaconCore
import Hummingbird

/// On PostgreSQL, bounds the time to an answer of every request (`--db-timeout` + 1 s): one database call
/// already answers within the deadline (`DatabaseDeadline`), but a request makes several, so the
/// whole is bounded too. Past the bound the request is cancelled and answered 503
/// `database_unavailable` with `Retry-After` (a write may have committed just before: read it
/// back, or retry with `If-Match`). Imports are bulk work and are not bounded; a stream's
/// answer starts within the bound and then runs on.
struct RequestDeadlineMiddleware<Context: RequestContext>: RouterMiddleware {
    let seconds: Double

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.uri.path.hasSuffix("/beacons/import") { return try await next(request, context) }
        let seconds = self.seconds
        return try await withoutActuallyEscaping(next) { next in
            let handler = UncheckedHandler(next)
            return try await withThrowingTaskGroup(of: Response?.self) { group in
                group.addTask { try await handler.call(request, context) }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else {
                    throw DBeaconError(.unavailable, code: "database_unavailable",
                                       message: "no answer within \(Int(seconds)) s: the database is slow or unreachable; retry shortly")
                }
                return response
            }
        }
    }
}

/// The router's `next`, carried into a child task: it runs there while the middleware waits
/// for it (or cancels it), never after the middleware has returned.
private struct UncheckedHandler<Context: RequestContext>: @unchecked Sendable {
    let next: (Request, Context) async throws -> Response
    init(_ next: @escaping (Request, Context) async throws -> Response) { self.next = next }
    func call(_ request: Request, _ context: Context) async throws -> Response { try await next(request, context) }
}
