import DBeaconCore
import DBeaconServices
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// `GET /v1/events/stream`: the caller's events as Server-Sent Events, for apps and browsers
/// (webhooks suit servers). Each event is `id: evt_…`, `event: <type>`, `data: <event JSON>`,
/// with the same visibility rule as `GET /v1/events` applied as of its delivery; a comment
/// line every 15 s keeps proxies from closing an idle stream. `Last-Event-ID` (sent again by
/// `EventSource` when it reconnects) or `?after=` resumes from the log; without either the
/// stream starts with the next event. At most `maxStreamsPerUser` open streams per user (429).
/// A request that does not accept `text/event-stream` gets one page of events as JSON.
struct EventStreamController {
    let feed: EventFeed
    let streams = StreamCounter()

    static let maxStreamsPerUser = 5
    static let heartbeat: Duration = .seconds(15)
    static let poll: Duration = .milliseconds(250)
    /// A stream is closed after this long (and at a graceful shutdown): `EventSource`
    /// reconnects after `retry` and resumes with `Last-Event-ID`, so nothing is lost, and a
    /// stopping server is not held open by its streams.
    static let maxDuration: Duration = .seconds(60)

    /// Open streams per user.
    final class StreamCounter: Sendable {
        private let open = Mutex<[String: Int]>([:])

        func acquire(_ key: String, max: Int) -> Bool {
            open.withLock { o in
                guard o[key, default: 0] < max else { return false }
                o[key, default: 0] += 1
                return true
            }
        }

        func release(_ key: String) {
            open.withLock { o in
                o[key, default: 1] -= 1
                if o[key] == 0 { o[key] = nil }
            }
        }
    }

    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("events/stream", use: stream)
    }

    @Sendable func stream(_ request: Request, context: AuthenticatedContext) async throws -> Response {
        let streaming = (request.headers[.accept] ?? "").lowercased().contains("text/event-stream")
        let principal = context.principal
        var start: Int64?
        let q = QueryReader(request)
        // Both resume points are checked (the header wins when both are given).
        var resume: [(raw: String, path: String)] = []
        if let after = try q.string("after") { resume.append((after, "after")) }
        if let header = request.headers[HTTPField.Name("Last-Event-ID")!] { resume.append((header, "Last-Event-ID")) }
        for (raw, path) in resume { start = try await feed.resumePosition(raw, path: path, context: context) }
        guard streaming else {
            // Content negotiation: a client that does not accept a stream gets one page, as JSON.
            return .json(try await feed.pageJSON(try await feed.events(by: principal, after: start, limit: try q.limit()), context: context))
        }
        let key = principal.userID?.rawValue ?? "admin"
        guard streams.acquire(key, max: Self.maxStreamsPerUser) else {
            throw DBeaconError.tooManyRequests("at most \(Self.maxStreamsPerUser) open event streams per user", code: "too_many_streams",
                                               retryAfter: 5)
        }
        let from: Int64
        if let start { from = start } else { from = try await feed.latestPosition() }
        let feed = self.feed, streams = self.streams
        let body = ResponseBody { writer in
            defer { streams.release(key) }
            var cursor = from
            let clock = ContinuousClock()
            let opened = clock.now
            var lastWrite = clock.now
            try await writer.write(ByteBuffer(string: "retry: 2000\n: stream open\n\n"))
            let stopping = Atomic(false)
            try await withGracefulShutdownHandler {
            while clock.now - opened < Self.maxDuration && !stopping.load(ordering: .relaxed) {
                let page = try await feed.events(by: principal, after: cursor, limit: 100)
                if let last = page.items.last {
                    var text = ""
                    for event in page.items {
                        text += "id: \(event.id.rawValue)\nevent: \(event.type.rawValue)\ndata: \(JSONWriter.string(event.json))\n\n"
                    }
                    try await writer.write(ByteBuffer(string: text))
                    lastWrite = clock.now
                    cursor = try await feed.position(after: last.id, by: principal) ?? cursor
                }
                if let next = page.next { cursor = max(cursor, next); continue }
                if clock.now - lastWrite >= Self.heartbeat {
                    try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                    lastWrite = clock.now
                }
                try await Task.sleep(for: Self.poll)
            }
            } onGracefulShutdown: {
                // Shutting down: end the stream; the client reconnects to another server or later.
                stopping.store(true, ordering: .relaxed)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
    }
}
