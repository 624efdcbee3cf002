import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A real HTTP server on loopback that records webhook requests and answers with scripted
/// statuses (then 200 once the script is used up).
final class WebhookReceiver: Sendable {
    struct NotStarted: Error {}

    struct Received: Sendable {
        let headers: [String: String]
        let body: String
        let path: String
    }

    private let state = Mutex<(received: [Received], script: [(Int, [String: String])], port: Int?)>(([], [], nil))
    private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)

    var received: [Received] { state.withLock { $0.received } }
    var port: Int { state.withLock { $0.port } ?? 0 }
    var url: String { "http://127.0.0.1:\(port)/hook" }

    /// The next responses, in order: (status, extra headers).
    func script(_ responses: [(Int, [String: String])]) {
        state.withLock { $0.script = responses }
    }

    static func start() async throws -> WebhookReceiver {
        let receiver = WebhookReceiver()
        let router = Router()
        router.post("**") { request, context -> Response in
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let (status, extra): (Int, [String: String]) = receiver.state.withLock { s in
                s.received.append(Received(headers: headers, body: String(buffer: body), path: request.uri.path))
                return s.script.isEmpty ? (200, [:]) : s.script.removeFirst()
            }
            var fields = HTTPFields()
            for (k, v) in extra { if let name = HTTPField.Name(k) { fields[name] = v } }
            return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: "ok")))
        }
        var logger = Logger(label: "receiver")
        logger.logLevel = .critical
        let (started, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        // A server that ends (cannot bind, say) ends the wait for its port too.
        receiver.task.withLock { $0 = Task { defer { continuation.finish() }; try await app.runService(gracefulShutdownSignals: []) } }
        for await port in started {
            receiver.state.withLock { $0.port = port }
            break
        }
        guard receiver.state.withLock({ $0.port }) != nil else { throw NotStarted() }
        return receiver
    }

    func stop() {
        task.withLock { $0?.cancel() }
    }
}
