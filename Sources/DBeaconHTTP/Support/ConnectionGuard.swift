import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Limits on connections, so idle or slow clients cannot take the server down: how long a
/// request head and a request body may take, how many connections one client address and
/// all clients together may hold.
package struct ConnectionLimits: Sendable {
    /// Seconds a connection may take to deliver a complete request head, counted from the
    /// connection's start or the previous response (the keep-alive idle time too).
    package var headerTimeoutSeconds = 10.0
    /// Seconds a request body may take to arrive once its head did.
    package var bodyTimeoutSeconds = 30.0
    /// Open connections at most; beyond, new ones wait in the listen backlog. At start-up it
    /// is also held below the process's descriptor limit.
    package var maxConnections = 10_000
    /// Open connections per client address; beyond, a new one is closed at once.
    package var maxConnectionsPerClient = 256

    package init() {}
}

/// Counts open connections per client address, across all event loops.
package final class ClientConnectionCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var open: [String: Int] = [:]
    package let maxPerClient: Int
    /// Called when a connection is refused for its client's count.
    let refused: @Sendable () -> Void

    package init(maxPerClient: Int, refused: @escaping @Sendable () -> Void = {}) {
        self.maxPerClient = maxPerClient
        self.refused = refused
    }

    /// Registers a connection; false (and nothing registered) when the client has too many.
    func open(_ client: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let n = open[client, default: 0]
        guard maxPerClient <= 0 || n < maxPerClient else { return false }
        open[client] = n + 1
        return true
    }

    func close(_ client: String) {
        lock.lock()
        defer { lock.unlock() }
        let n = open[client, default: 1] - 1
        open[client] = n > 0 ? n : nil
    }

    /// Connections open now (all clients).
    package var total: Int {
        lock.lock()
        defer { lock.unlock() }
        return open.values.reduce(0, +)
    }
}

/// One per connection, after HTTP decoding: closes a connection whose client already holds
/// too many, whose request head does not arrive in time (slowloris, idle keep-alive), or whose
/// body trickles in too slowly. While a request is being handled no deadline runs (a handler
/// may take long, a response may stream).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limits: ConnectionLimits
    private let counter: ClientConnectionCounter
    private var client: String?
    /// When the connection is closed unless something happens first (nil: no deadline runs).
    private var due: NIODeadline?
    /// The pending timer, if any (it may fire before `due`, and then sleeps again).
    private var timer: Scheduled<Void>?

    init(limits: ConnectionLimits, counter: ClientConnectionCounter) {
        self.limits = limits
        self.counter = counter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        guard counter.open(address) else {
            counter.refused()
            context.close(promise: nil)
            return
        }
        client = address
        arm(context, seconds: limits.headerTimeoutSeconds)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        if let client { counter.close(client) }
        client = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: arm(context, seconds: limits.bodyTimeoutSeconds)
        case .body: break
        case .end: disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context, seconds: limits.headerTimeoutSeconds) }
        context.write(data, promise: promise)
    }

    /// Sets the deadline `seconds` from now. A timer is scheduled only when none is pending:
    /// when it fires it closes the connection if the deadline then set has passed, or sleeps
    /// again until it (a keep-alive connection answering requests back to back moves its
    /// deadline twice a request; scheduling and cancelling a task each time cost 1.5 % of a
    /// location fix through HTTP).
    private func arm(_ context: ChannelHandlerContext, seconds: Double) {
        guard seconds > 0 else {
            due = nil
            return
        }
        due = .now() + .milliseconds(Int64(seconds * 1000))
        if timer == nil { schedule(context.channel, context.eventLoop, at: due!) }
    }

    private func schedule(_ channel: any Channel, _ loop: any EventLoop, at when: NIODeadline) {
        // The handler lives on its event loop, where the task runs too; cancelled when the
        // connection goes (`stop`), so the reference does not outlive it.
        let bound = NIOLoopBound(self, eventLoop: loop)
        timer = loop.scheduleTask(deadline: when) {
            let handler = bound.value
            handler.timer = nil
            guard let due = handler.due else { return }  // disarmed meanwhile
            if due <= .now() {
                channel.close(promise: nil)
            } else {
                handler.schedule(channel, loop, at: due)
            }
        }
    }

    /// No deadline until the next `arm` (the timer, if pending, finds none and stops).
    private func disarm() {
        due = nil
    }

    /// Stops the timer for good (the connection is gone).
    private func stop() {
        due = nil
        timer?.cancel()
        timer = nil
    }
}
