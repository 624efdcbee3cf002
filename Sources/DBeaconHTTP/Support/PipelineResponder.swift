#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// What `PipelineResponder` answers with: the router's responder, the server's logger and name.
struct PipelineResponderSettings: Sendable {
    let responder: RouterResponder<AppRequestContext>
    let logger: Logger
    let serverName: String?
    /// Bodies larger than this are streamed to the handler by Hummingbird's connection loop.
    let maxBodyBytes = 64 * 1024
}

/// Answers the requests of a connection from the channel pipeline, through the same router
/// responder Hummingbird's connection loop calls, with its request body already collected.
///
/// Hummingbird hands each request to a task reading the connection as an `AsyncSequence` and
/// writing through an async writer: an empty `GET /healthz` spent about 40 % of its server CPU in
/// that bridge. Here a request whose parts have all arrived (a body of at most 64 KiB) runs the
/// responder in a task of its own, and the answer's parts are written to the channel from its event
/// loop. Routing, middleware, errors and the `Date` and `Server` headers are what Hummingbird's loop
/// gives; only the way the parts travel differs.
///
/// A request goes on to Hummingbird's loop instead when it asks for something that loop handles
/// (`Connection: close` or `upgrade`, `Expect`, `Upgrade`), when its body is larger, and while a
/// request passed on earlier has not been answered (answers keep the order of requests). While an
/// answer is under way, what else arrives on the connection (pipelined requests, the end of its
/// input, a quiesce at shutdown, an error) is held and handled once the answer has been written.
final class PipelineResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Between requests, or in one passed on to Hummingbird.
        case idle
        /// A request to answer here: its head came, its body is coming.
        case collecting(HTTPRequest, ByteBuffer?)
        /// Its answer is being worked out or written.
        case answering
    }

    /// Something that arrived while an answer was under way, kept in order.
    private enum Held {
        case read(NIOAny)
        case event(Any)
        case error(any Error)
    }

    private let settings: PipelineResponderSettings
    private var state = State.idle
    /// Requests passed on to Hummingbird whose answer has not ended.
    private var passedOn = 0
    private var held: CircularBuffer<Held> = []
    /// How many of `held` are reads.
    private var heldReads = 0
    /// The channel asked to read while pipelined parts were held: asked again when they are handled.
    private var readRequested = false

    init(settings: PipelineResponderSettings) {
        self.settings = settings
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .answering = state {
            held.append(.read(data))
            heldReads += 1
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            if passedOn == 0, Self.answersHere(head) {
                state = .collecting(head, nil)
            } else {
                passedOn += 1
                context.fireChannelRead(data)
            }
        case .body(var part):
            guard case .collecting(let head, var body) = state else {
                context.fireChannelRead(data)
                return
            }
            if (body?.readableBytes ?? 0) + part.readableBytes > settings.maxBodyBytes {
                // Too large to hold: Hummingbird's loop streams it to the handler.
                state = .idle
                passedOn += 1
                context.fireChannelRead(wrapInboundOut(.head(head)))
                if let body { context.fireChannelRead(wrapInboundOut(.body(body))) }
                context.fireChannelRead(data)
                resume(context: context)
                return
            }
            if body == nil { body = part } else { body!.writeBuffer(&part) }
            state = .collecting(head, body)
        case .end:
            guard case .collecting(let head, let body) = state else {
                context.fireChannelRead(data)
                return
            }
            state = .answering
            answer(head, body: body ?? ByteBuffer(), context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch state {
        case .idle: context.fireUserInboundEventTriggered(event)
        // The end of the input or a quiesce waits for the answer (Hummingbird's loop would close
        // the connection at once, not knowing a request is under way).
        case .collecting, .answering: held.append(.event(event))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch state {
        case .answering:
            held.append(.error(error))
        case .collecting:
            // A malformed request: Hummingbird's loop answers 400 and closes, as for any other.
            state = .idle
            context.fireErrorCaught(error)
            resume(context: context)
        case .idle:
            context.fireErrorCaught(error)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        held.removeAll()
        heldReads = 0
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Hummingbird's answer to a request passed on (or its 400 for a malformed one, which
        // was never passed on: the connection closes after it).
        if case .end = unwrapOutboundIn(data) { passedOn = max(0, passedOn - 1) }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        // Held parts are bounded: a client sending requests ahead of the answers is read no further
        // (until then the connection is read, so the end of its input is seen during a long answer).
        if case .answering = state, heldReads > 0 {
            readRequested = true
        } else {
            context.read()
        }
    }

    /// Whether a request is answered here rather than by Hummingbird's loop.
    private static func answersHere(_ head: HTTPRequest) -> Bool {
        let fields = head.headerFields
        if fields.contains(.expect) || fields.contains(.upgrade) { return false }
        if let connection = fields.value(of: .connection)?.lowercased(),
           connection.contains("close") || connection.contains("upgrade") {
            return false
        }
        return true
    }

    private func answer(_ head: HTTPRequest, body: ByteBuffer, context: ChannelHandlerContext) {
        let out = PipelineAnswer(handler: self, context: context)
        let settings = self.settings
        Task { await settings.respond(to: head, body: body, out: out) }
    }

    /// The answer's last part was written (or the connection failed): what was held goes on.
    fileprivate func answered(context: ChannelHandlerContext) {
        guard case .answering = state else { return }
        state = .idle
        resume(context: context)
    }

    /// Handles what was held, in order, until an answer is under way again, or a request is
    /// being collected and the next thing held is an event (it waits for that request; the
    /// request's own parts go on, and an error ends it).
    private func resume(context: ChannelHandlerContext) {
        var read = false
        loop: while let next = held.first {
            switch (state, next) {
            case (.answering, _), (.collecting, .event): break loop
            default: held.removeFirst()
            }
            switch next {
            case .read(let data):
                read = true
                heldReads -= 1
                channelRead(context: context, data: data)
            case .event(let event): userInboundEventTriggered(context: context, event: event)
            case .error(let error): errorCaught(context: context, error: error)
            }
        }
        // Hummingbird's loop takes what was passed on when a read completes.
        if read { context.fireChannelReadComplete() }
        if readRequested, heldReads == 0 {
            readRequested = false
            context.read()
        }
    }
}

extension PipelineResponderSettings {
    /// What Hummingbird's `Application` does with a request: the responder with a logger naming the
    /// request, 500 for an error no middleware turned into a response, the `Date` and `Server`
    /// headers; then the body written.
    fileprivate func respond(to head: HTTPRequest, body: ByteBuffer, out: PipelineAnswer) async {
        var logger = logger
        logger[metadataKey: "hb.request.id"] = .stringConvertible(RequestID())
        let context = AppRequestContext(source: .init(channel: out.channel, logger: logger))
        var response: Response
        do {
            response = try await responder.respond(to: Request(head: head, body: .init(buffer: body)), context: context)
        } catch {
            logger.debug("Unrecognised Error", metadata: ["error.type": "\(error)"])
            response = Response(status: .internalServerError, body: .init())
        }
        response.headers[.date] = HTTPDate.now
        if let serverName { response.headers[.server] = serverName }
        do {
            try await response.body.write(PipelineBodyWriter(out: out, head: response.head,
                                                             streaming: response.body.contentLength == nil))
        } catch {
            // As when Hummingbird's loop fails to write: the connection goes.
            logger.debug("Response body failed", metadata: ["error.type": "\(error)"])
            out.close()
        }
    }
}

/// One answer's way to its connection: parts are written from the channel's event loop, in as
/// few hops and flushes as the body allows.
private final class PipelineAnswer: @unchecked Sendable {
    let channel: any Channel
    private let loop: any EventLoop
    private let handler: NIOLoopBound<PipelineResponder>
    private let context: NIOLoopBound<ChannelHandlerContext>

    init(handler: PipelineResponder, context: ChannelHandlerContext) {
        channel = context.channel
        loop = context.eventLoop
        self.handler = NIOLoopBound(handler, eventLoop: context.eventLoop)
        self.context = NIOLoopBound(context, eventLoop: context.eventLoop)
    }

    /// Writes and flushes `parts`; with `last`, the held parts of the connection go on after them.
    /// Waits until the channel takes more when it is full (a streamed body).
    func send(_ parts: [HTTPResponsePart], last: Bool) async throws {
        if loop.inEventLoop {
            if let full = deliver(parts, last: last) { try await full.get() }
        } else if last {
            loop.execute { _ = self.deliver(parts, last: true) }
        } else {
            let future = loop.flatSubmit { self.deliver(parts, last: false) ?? self.loop.makeSucceededVoidFuture() }
            try await future.get()
        }
    }

    /// On the event loop. The future of the last write when the channel is full (nil otherwise).
    private func deliver(_ parts: [HTTPResponsePart], last: Bool) -> EventLoopFuture<Void>? {
        let context = self.context.value
        let handler = handler.value
        guard context.channel.isActive else {
            if last { handler.answered(context: context) }
            return context.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        for part in parts.dropLast() { context.write(handler.wrapOutboundOut(part), promise: nil) }
        guard let final = parts.last else { return nil }
        let full = !last && !context.channel.isWritable
        let promise = full ? context.eventLoop.makePromise(of: Void.self) : nil
        context.writeAndFlush(handler.wrapOutboundOut(final), promise: promise)
        if last { handler.answered(context: context) }
        return promise?.futureResult
    }

    func close() {
        loop.execute {
            let context = self.context.value
            context.close(promise: nil)
            self.handler.value.answered(context: context)
        }
    }
}

/// The body's writer: a body of known length goes out with its head and end in one flush (one
/// written in several buffers, 256 KiB or more at a time), a streamed one (no length: an event
/// stream) part by part as written.
private struct PipelineBodyWriter: ResponseBodyWriter {
    let out: PipelineAnswer
    let streaming: Bool
    private var parts: [HTTPResponsePart]
    private var unflushed = 0

    init(out: PipelineAnswer, head: HTTPResponse, streaming: Bool) {
        self.out = out
        self.streaming = streaming
        parts = [.head(head)]
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        // What came before goes first once it is large (a single buffer goes with the end).
        if unflushed >= 256 * 1024 { try await flush() }
        parts.append(.body(buffer))
        unflushed += buffer.readableBytes
        if streaming { try await flush() }
    }

    private mutating func flush() async throws {
        let ready = parts
        parts = []
        unflushed = 0
        try await out.send(ready, last: false)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        parts.append(.end(trailingHeaders))
        try await out.send(parts, last: true)
    }
}

/// The `Date` header's value (RFC 9110 §5.6.7), formatted once a second.
package enum HTTPDate {
    private static let cache = NIOLockedValueBox<(second: Int, text: String)>((-1, ""))
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    package static var now: String {
        let second = time(nil)
        return cache.withLockedValue { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    /// IMF-fixdate of `second` (seconds since 1970).
    package static func format(_ second: Int) -> String {
        var t = time_t(second)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
