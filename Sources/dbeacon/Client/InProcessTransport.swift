import DBeaconCore
import DBeaconApp
import DBeaconHTTP
import DBeaconServices
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import OpenAPIRuntime

/// The API answered in this process: the server's own router, built on the database file,
/// called without a network and without a token, as the operator or as one user (`--as`).
/// So the CLI on a file does exactly what the API does (same checks, same JSON), and the
/// server sees the CLI's writes to its file through the change log (`RemoteChangePoller`).
struct InProcessTransport: ClientTransport {
    let services: AppServices
    let responder: RouterResponder<AppRequestContext>
    let principal: Principal
    let logger: Logger

    /// Opens the database (migrating it when needed) and builds the router on it.
    static func open(path: String) async throws -> AppServices {
        var config = AppConfig()
        config.databasePath = path
        config.followRemoteChanges = false
        // A server's current snapshot spares reading every beacon; the CLI never writes one.
        config.indexSnapshots.mode = .read
        config.rateLimits = .off
        config.maxBodyBytes = config.maxImportBytes
        return try await AppServices.make(config, logger: logger)
    }

    static var logger: Logger {
        var logger = Logger(label: "dbeacon")
        logger.logLevel = .warning
        return logger
    }

    init(services: AppServices, principal: Principal) {
        self.services = services
        self.responder = buildRouter(services).buildResponder()
        self.principal = principal
        self.logger = Self.logger
    }

    /// A user named by id or by (unique) name.
    static func user(_ nameOrID: String, in services: AppServices) async throws -> UserID {
        if let id = UserID(nameOrID), try await services.store.user(id: id) != nil { return id }
        let users = try await services.store.users(named: nameOrID)
        guard let user = users.first else {
            throw DBeaconError.notFound("user \(nameOrID) (create one with: dbeacon user add \(nameOrID))")
        }
        guard users.count == 1 else { throw DBeaconError.conflict("several users are named \(nameOrID); use the id") }
        return user.id
    }

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        var head = request
        head.scheme = "http"
        head.authority = "localhost"
        var bytes: [UInt8] = []
        if let body { bytes = try await [UInt8](collecting: body, upTo: 1 << 30) }
        var context = AppRequestContext(source: ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: logger))
        context.principal = principal
        let response = try await responder.respond(to: Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: bytes))),
                                                   context: context)
        let collected = Collected()
        try await response.body.write(Collector(into: collected))
        let answer = Array(collected.buffer.readableBytesView)
        return (HTTPResponse(status: response.status, headerFields: response.headers), answer.isEmpty ? nil : HTTPBody(answer))
    }
}

/// The bytes of a response body.
private final class Collected: @unchecked Sendable {
    var buffer = ByteBuffer()
}

private struct Collector: ResponseBodyWriter {
    let into: Collected

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        into.buffer.writeBuffer(&buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
