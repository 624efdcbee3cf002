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
///
/// An idle stream costs nothing but its connection: it waits on the process's `EventNotifier`
/// (one reader of the log for all streams), which wakes it only when an event addressed to its
/// user is committed, and at its next heartbeat. A client that goes away (its connection's
/// input closes, or the connection does) ends the stream at once, freeing its slot; a write
/// that fails ends it too. The connection is closed when the stream ends, so a client that
/// waits for the close reconnects at once.
struct EventStreamController {
    let feed: EventFeed
    /// Ends a stream whose credential stops standing for its caller (a token rotated, a device
    /// revoked, the user disabled or erased; here or on another node).
    let auth: AuthService
    /// The one reader of the log for all streams: wakes a stream when an event for its user is
    /// committed.
    let notifier: EventNotifier
    /// Open streams per user (the admin token counts as one user), at most `maxStreamsPerUser`.
    let streams = StreamCounter()
    /// A comment line this long after the last write keeps proxies from closing the stream.
    let heartbeat: Duration
    /// A stream is closed after this long (and at a graceful shutdown): `EventSource`
    /// reconnects after `retry` and resumes with `Last-Event-ID`, so nothing is lost, and a
    /// stopping server is not held open by its streams.
    let maxDuration: Duration

    /// Streams one user may hold open at once; one more is 429 `too_many_streams` with
    /// `Retry-After: 5`.
    static let maxStreamsPerUser = 5

    /// Open streams per user.
    final class StreamCounter: Sendable {
        private let open = Mutex<[String: Int]>([:])

        /// Takes a slot for `key`: false (and nothing taken) when it holds `max` already.
        func acquire(_ key: String, max: Int) -> Bool {
            open.withLock { o in
                guard o[key, default: 0] < max else { return false }
                o[key, default: 0] += 1
                return true
            }
        }

        /// Gives back a slot of `key`; a key with none left is dropped, so the table holds only
        /// open streams.
        func release(_ key: String) {
            open.withLock { o in
                o[key, default: 1] -= 1
                if o[key] == 0 { o[key] = nil }
            }
        }
    }

    /// Registers `GET /v1/events/stream` on the authenticated `/v1` group.
    func addRoutes(to group: RouterGroup<AuthenticatedContext>) {
        group.get("events/stream", use: stream)
    }

    /// `GET /v1/events/stream`: the stream, or one JSON page for a client that does not accept it
    /// (see the type). A resume point (`after`, `Last-Event-ID`) that is not the caller's is 404
    /// and one of another form 400, before anything is streamed. A HEAD that accepts
    /// `text/event-stream` gets the stream's headers without opening one.
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
        // HEAD (the GET route's, generated): what a stream would be, without opening one.
        if request.method == .head && streaming {
            return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"])
        }
        guard streaming else {
            // Content negotiation: a client that does not accept a stream gets one page, as JSON.
            return .json(try await feed.pageJSON(try await feed.events(by: principal, after: start, limit: try q.limit()), context: context))
        }
        let key = principal.userID?.rawValue ?? "admin"
        guard streams.acquire(key, max: Self.maxStreamsPerUser) else {
            throw DBeaconError.tooManyRequests("at most \(Self.maxStreamsPerUser) open event streams per user", code: "too_many_streams",
                                               retryAfter: 5)
        }
        // The notifier reads the log from here on: every event committed after the first read
        // below is one it will see.
        let from: Int64
        do {
            try await notifier.ready()
            if let start { from = start } else { from = try await feed.latestPosition() }
        } catch {
            streams.release(key)
            throw error
        }
        let feed = self.feed, streams = self.streams, notifier = self.notifier
        let heartbeat = self.heartbeat, maxDuration = self.maxDuration
        let handle = notifier.handle()
        let auth = self.auth
        let watch = context.tokenHash == nil ? nil : auth.watch(context.caller) { notifier.interrupt(handle) }
        let channel = context.channel
        // The client going away (its input closing, or the connection) ends the stream now.
        // (Fails only when the connection is already closed: the stream's first write then ends it.)
        try? await channel.pipeline.addHandler(PeerWatcher { notifier.interrupt(handle) }, position: .first).get()
        // Close the connection once the response ends (`Connection: close` is sent too).
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        let body = ResponseBody { writer in
            defer {
                streams.release(key)
                if let watch { auth.unwatch(watch) }
            }
            var cursor = from
            var notified = from
            let clock = ContinuousClock()
            let opened = clock.now
            var lastWrite = clock.now
            try await writer.write(ByteBuffer(string: "retry: 2000\n: stream open\n\n"))
            try await withGracefulShutdownHandler {
                var read = true
                while clock.now - opened < maxDuration && !handle.isInterrupted {
                    if read {
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
                    }
                    if clock.now - lastWrite >= heartbeat {
                        // Also how a client that vanished without closing is found: the write fails.
                        try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                        lastWrite = clock.now
                    }
                    let deadline = min(lastWrite + heartbeat, opened + maxDuration)
                    let woken = await notifier.wait(for: principal.userID, after: max(cursor, notified), until: deadline, handle: handle)
                    if let woken { notified = max(notified, woken) }
                    read = woken != nil
                }
            } onGracefulShutdown: {
                // Shutting down: end the stream; the client reconnects to another server or later.
                notifier.interrupt(handle)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache", .connection: "close"],
                        body: body)
    }
}

/// Tells the event stream that its client went away: the connection's input closed (the
/// client closed its side or died) or the connection closed. First in the pipeline, it sees
/// the socket's own events and passes everything on.
private final class PeerWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = ByteBuffer
    /// Called when the client went away (possibly more than once: the input closing, then the
    /// connection).
    let gone: @Sendable () -> Void

    init(_ gone: @escaping @Sendable () -> Void) { self.gone = gone }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent { gone() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        gone()
        context.fireChannelInactive()
    }
}
