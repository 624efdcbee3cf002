import AsyncHTTPClient
import DBeaconCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

/// Live events for apps (issue 14.2): `GET /v1/events/stream` as Server-Sent Events over a
/// real HTTP connection: new events arrive as they are written, `Last-Event-ID` resumes from
/// the log, visibility applies, and open streams per user are bounded.
@Suite(.bounded) struct EventStreamTests {
    /// Reads an open stream until `count` events arrived (or the deadline); returns (id, type) pairs.
    static func read(_ response: HTTPClientResponse, events count: Int) async throws -> [(id: String, type: String)] {
        var text = ""
        var found: [(String, String)] = []
        for try await chunk in response.body {
            text += String(buffer: chunk)
            while let end = text.range(of: "\n\n") {
                let block = String(text[..<end.lowerBound])
                text.removeSubrange(..<end.upperBound)
                var id = "", type = ""
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                    if line.hasPrefix("event: ") { type = String(line.dropFirst(7)) }
                }
                if !id.isEmpty { found.append((id, type)) }
            }
            if found.count >= count { break }
        }
        return found
    }

    /// Opens a stream. The client's deadline covers the body too, so it is long: a test bounds
    /// its own waits for events (`within:`), and on a loaded machine a stream's test may take
    /// longer than a few seconds from open to end.
    static func open(_ port: Int, token: String, lastEventID: String? = nil, accept: String = "text/event-stream") async throws
        -> HTTPClientResponse {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/events/stream")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: accept)
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        return try await HTTPClient.shared.execute(request, timeout: .seconds(180))
    }

    @Test(arguments: Backend.all) func eventsArriveLiveAndResume(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, ownerToken) = try await h.user("owner")
        let (_, ann) = try await h.user("ann")
        let (_, bob) = try await h.user("bob")
        let kiosk = try await h.beacon(feature(name: "kiosk"), owner: owner)
        try await h.app().test(.live) { client in
            let port = try #require(client.port)
            _ = try await client.call(.post, "/v1/beacons/\(kiosk.id)/followers", token: ann)
            // Without Accept: text/event-stream, content negotiation gives one page of JSON (none yet).
            let plain = try await client.call(.get, "/v1/events/stream", token: ann)
            #expect(plain.status == .ok && plain.json?["events"] == [])

            let stream = try await Self.open(port, token: ann)
            #expect(stream.status == .ok && stream.headers["Content-Type"].first == "text/event-stream")
            // Two edits after the stream opened arrive on it, in order, with their ids.
            for name in ["kiosk 1", "kiosk 2"] {
                #expect(try await client.call(.patch, "/v1/beacons/\(kiosk.id)", token: ownerToken,
                                              json: ["properties": ["name": .string(name)]]).status == .ok)
            }
            let live = try await Self.read(stream, events: 2)
            #expect(live.map(\.type) == ["beacon.updated", "beacon.updated"])
            #expect(live.allSatisfy { $0.id.hasPrefix("evt_") })
            // Reconnecting with Last-Event-ID of the first resumes after it: the second arrives again.
            let resumed = try await Self.read(try await Self.open(port, token: ann, lastEventID: live[0].id), events: 1)
            #expect(resumed.map(\.id) == [live[1].id])
            // Someone else's event id is not a resume point (as GET /v1/events?after=).
            let owners = try await Self.open(port, token: ownerToken, lastEventID: live[0].id)
            #expect(owners.status == .notFound)

            // At most five open streams per user (bob has none open yet).
            var open: [HTTPClientResponse] = []
            for _ in 0..<5 { open.append(try await Self.open(port, token: bob)) }
            #expect(open.allSatisfy { $0.status == .ok })
            let sixth = try await Self.open(port, token: bob)
            #expect(sixth.status == .tooManyRequests && sixth.headers["Retry-After"].first != nil)
        }
    }

    /// Idle streams wait on the process's notifier (no poll of their own) and are woken by
    /// their events only; a client that goes away frees its slot at once (no heartbeat needed:
    /// the default 15 s here); the server closes the connection when a stream ends.
    @Test(arguments: Backend.all) func idleStreamsWakeOnTheirEventsAndEndCleanly(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend) { $0.eventStreamMaxSeconds = 20 }
        let (owner, ownerToken) = try await h.user("owner")
        let (_, bob) = try await h.user("bob")
        let (_, ann) = try await h.user("ann")
        let kiosk = try await h.beacon(feature(name: "kiosk"), owner: owner)
        try await h.app().test(.live) { client in
            let port = try #require(client.port)
            _ = try await client.call(.post, "/v1/beacons/\(kiosk.id)/followers", token: bob)
            var bobs: [RawStream] = []
            for _ in 0..<5 { bobs.append(try await RawStream.open(port: port, token: bob)) }
            let anns = try await RawStream.open(port: port, token: ann)
            for s in bobs + [anns] { try await s.waitFor(": stream open") }
            #expect(bobs[0].text.contains("connection: close") || bobs[0].text.contains("Connection: close"))
            let sixth = try await Self.open(port, token: bob)
            #expect(sixth.status == .tooManyRequests)

            // An edit of the kiosk reaches bob's five streams, not ann's (she does not follow it).
            #expect(try await client.call(.patch, "/v1/beacons/\(kiosk.id)", token: ownerToken,
                                          json: ["properties": ["name": "kiosk 1"]]).status == .ok)
            for s in bobs { try await s.waitFor("event: beacon.updated") }
            #expect(!anns.text.contains("event:"))

            // Bob closes one stream: the slot is free again at once, long before a heartbeat.
            let closedAt = ContinuousClock.now
            try await bobs[0].channel.close()
            var reopened: HTTPClientResponse?
            while ContinuousClock.now - closedAt < .seconds(10) {
                let r = try await Self.open(port, token: bob)
                if r.status == .ok { reopened = r; break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(reopened != nil && ContinuousClock.now - closedAt < .seconds(10),
                    "the slot of a closed stream is freed long before a heartbeat (15 s) would find it")

            // Streams end after eventStreamMaxSeconds (20 s here) and the server closes the
            // connection right after the last chunk (before, it waited for the client).
            try await anns.waitForClose(within: .seconds(60))
            #expect(anns.text.hasSuffix("0\r\n\r\n"), "the chunked body was ended before the close")
        }
    }
}

/// A stream read off a bare TCP connection (to see the close and the raw response).
final class RawStream: Sendable {
    let channel: any Channel
    let collector: Collector

    final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received = Mutex("")
        let closed = Atomic(false)
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            received.withLock { $0 += String(buffer: buffer) }
        }
        func channelInactive(context: ChannelHandlerContext) { closed.store(true, ordering: .releasing) }
    }

    private init(channel: any Channel, collector: Collector) {
        self.channel = channel
        self.collector = collector
    }

    var text: String { collector.received.withLock { $0 } }

    static func open(port: Int, token: String) async throws -> RawStream {
        let stream = try await connect(port: port)
        try await stream.send("GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
            + "Accept: text/event-stream\r\n\r\n")
        return stream
    }

    /// A bare connection to the server, nothing sent yet.
    static func connect(port: Int) async throws -> RawStream {
        let collector = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { ch in ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(collector) } }
            .connect(host: "127.0.0.1", port: port).get()
        return RawStream(channel: channel, collector: collector)
    }

    /// Sends `text` as it is, in one write.
    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    func waitFor(_ fragment: String, within limit: Duration = .seconds(10)) async throws {
        let start = ContinuousClock.now
        while !text.contains(fragment) {
            guard ContinuousClock.now - start < limit else {
                Issue.record("no \(fragment) within \(limit): \(text)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func waitForClose(within limit: Duration) async throws {
        let start = ContinuousClock.now
        while !collector.closed.load(ordering: .acquiring) {
            guard ContinuousClock.now - start < limit else {
                Issue.record("the server did not close the connection within \(limit)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
