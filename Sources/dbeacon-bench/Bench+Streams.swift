import AsyncHTTPClient
import DBeaconCore
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Many idle event streams on one server: what they cost in CPU, and what they do to
/// `GET /v1/nearby` beside them.
extension BenchRun {
    func streams(server process: Process, base: String, wrk: String, script: String, into result: inout BenchResult) async throws {
        let n = command.streams
        guard n > 0 else { return }
        let pid = process.processIdentifier
        // The server at rest first (its background services and the notifier's one query).
        result.idleCPUPercent = try await cpuPercent(pid: pid, seconds: command.duration)
        log(String(format: "server idle: %.1f %% of a core", result.idleCPUPercent ?? 0))

        // Five streams per user at most: the city's users, and more made through the API.
        let users = (n + 4) / 5
        var tokens = (0..<min(users, BenchCity.userCount)).map(BenchCity.token)
        let tag = UInt64.random(in: 0..<(1 << 40))
        while tokens.count < users {
            var request = HTTPClientRequest(url: base + "/v1/users")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer bench-admin-token")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"name":"stream-\#(tag)-\#(tokens.count)"}"#))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 16)
            guard response.status == .created, let token = try JSONParser.parse(String(buffer: body))["token"]?.stringValue else {
                throw BenchError("creating a stream user: \(response.status) \(String(buffer: body))")
            }
            tokens.append(token)
        }

        let opened = monotonicNanos()
        let counter = StreamCounter()
        var channels: [any Channel] = []
        channels.reserveCapacity(n)
        defer { for c in channels { c.close(promise: nil) } }
        for i in 0..<n {
            channels.append(try await Self.openStream(port: command.port, token: tokens[i / 5], counter: counter))
        }
        while counter.open.load(ordering: .relaxed) < n && seconds(since: opened) < 120 {
            try await Task.sleep(for: .milliseconds(50))
        }
        let open = counter.open.load(ordering: .relaxed)
        result.streams = open
        result.streamsOpenSec = seconds(since: opened)
        log(String(format: "%d of %d streams open in %.1f s (%d refused)", open, n, result.streamsOpenSec ?? 0,
                   counter.refused.load(ordering: .relaxed)))
        if let rss = residentBytes(pid: pid) { log("server resident with the streams: \(rss >> 20) MiB") }

        result.streamsCPUPercent = try await cpuPercent(pid: pid, seconds: command.duration)
        log(String(format: "server with %d idle streams: %.1f %% of a core", open, result.streamsCPUPercent ?? 0))

        let (output, parsed) = try load(wrk, script, base)
        result.httpWithStreams = parsed.rate
        result.httpWithStreamsP99ms = parsed.p99
        if parsed.errors > 0 { log("wrk reported \(parsed.errors) errors beside the streams:\n\(output)") }
        let still = counter.open.load(ordering: .relaxed) - counter.closed.load(ordering: .relaxed)
        log(String(format: "HTTP nearby beside %d streams: %.0f req/s, p99 %.2f ms (%d streams still open)",
                   open, parsed.rate ?? 0, parsed.p99 ?? 0, still))
    }

    /// The server's CPU time over `seconds`, as a percentage of one core (/proc/PID/stat).
    func cpuPercent(pid: Int32, seconds: Double) async throws -> Double? {
        func ticks() -> Double? {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the command: state is field 3, utime 14 and stime 15 (1-based, whole line).
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
            return user + system
        }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard let before = ticks() else { return nil }
        let start = monotonicNanos()
        try await Task.sleep(for: .seconds(seconds))
        guard let after = ticks() else { return nil }
        return (after - before) / hz / (Double(monotonicNanos() - start) / 1e9) * 100
    }

    final class StreamCounter: Sendable {
        let open = Atomic(0)
        let refused = Atomic(0)
        let closed = Atomic(0)
    }

    /// Counts a stream as open when its first comment arrives; reads and drops everything else.
    final class StreamReader: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let counter: StreamCounter
        let seen = Atomic(false)
        init(counter: StreamCounter) { self.counter = counter }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !seen.load(ordering: .relaxed) else { return }
            let text = String(buffer: unwrapInboundIn(data))
            if text.contains(": stream open") {
                seen.store(true, ordering: .relaxed)
                counter.open.add(1, ordering: .relaxed)
            } else if text.hasPrefix("HTTP/1.1 4") || text.hasPrefix("HTTP/1.1 5") {
                seen.store(true, ordering: .relaxed)
                counter.refused.add(1, ordering: .relaxed)
            }
        }

        func channelInactive(context: ChannelHandlerContext) { counter.closed.add(1, ordering: .relaxed) }
    }

    static func openStream(port: Int, token: String, counter: StreamCounter) async throws -> any Channel {
        let reader = StreamReader(counter: counter)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { ch in ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(reader) } }
            .connect(host: "127.0.0.1", port: port).get()
        let request = "GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
            + "Accept: text/event-stream\r\n\r\n"
        try await channel.writeAndFlush(ByteBuffer(string: request)).get()
        return channel
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
