import DBeaconCore
import DBeaconServices

/// What `GET /v1/events` and `GET /v1/events/stream` share: where a reader resumes, and one page
/// of events as JSON.
extension EventFeed {
    /// The log position to read after: `raw` is an event id of the caller's log (404 when the
    /// caller has no such event) or a cursor sealed for the caller (404 for one that is not);
    /// `path` names the parameter or header in errors.
    func resumePosition(_ raw: String, path: String, context: AuthenticatedContext) async throws -> Int64 {
        if let id = EventID(raw) {
            guard let position = try await position(after: id, by: context.principal) else {
                throw DBeaconError.notFound("event \(raw.prefix(100))", path: path)
            }
            return position
        }
        // A cursor that does not open for this reader (another reader's, or made up) is answered
        // like someone else's event id: not found.
        if let cursor = try await context.openCursor(raw, key: path) { return cursor }
        throw DBeaconError(.badRequest, code: "invalid_parameter", message: "\(path) must be an event id or a cursor", path: path)
    }

    /// `{"events": […], "next_cursor": …}`: the cursor sealed for its reader.
    func pageJSON(_ page: Page<Event>, context: AuthenticatedContext) async throws -> JSONValue {
        .object(["events": .array(page.items.map(\.json)), "next_cursor": .optional(try await context.cursor(after: page.next))])
    }
}
