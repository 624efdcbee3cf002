import DBeaconCore
import DBeaconHTTP
import DBeaconKit
import Foundation
import HTTPTypes
import OpenAPIRuntime

/// The API as the CLI uses it: DBeaconKit's typed client (generated from `schema/openapi.yaml`,
/// the one apps use), over HTTP to a server (`--server`) or to the same router built in this
/// process on the database file (`--db`). Every command is written once, against the document's
/// operations and schemas; `--json` prints the API's own bytes for the last call (`answer`).
struct APIClient: Sendable {
    /// The generated client.
    let kit: Client
    /// The bytes of the last answer (what `--json` prints).
    let answers: AnswerRecorder
    /// The server's URL in HTTP mode (for the message when it cannot be reached).
    let server: String?

    init(transport: any ClientTransport, token: String?, server: String?) {
        let answers = AnswerRecorder()
        // The server's root; an in-process call ignores it.
        let url = server.flatMap { URL(string: $0.hasSuffix("/") ? String($0.dropLast()) : $0) } ?? URL(string: "http://localhost")!
        kit = Client.dbeacon(serverURL: url, token: token, transport: transport, middlewares: [AnswerMiddleware(answers: answers)])
        self.answers = answers
        self.server = server
    }

    /// Runs one operation of the generated client; what went wrong comes out as the API said it
    /// (`DBeaconError` with its code, message and path), a server that cannot be reached as
    /// such, an answer that breaks the document as `unexpected_answer`.
    func call<T: Sendable>(_ operation: (Client) async throws -> T) async throws -> T {
        do {
            return try await operation(kit)
        } catch let error as ClientError {
            if let error = error.underlyingError as? DBeaconError { throw error }
            if let server, error.response == nil { throw HTTPTransport.unreachable(server, error.underlyingError) }
            throw DBeaconError(.internal, code: "unexpected_answer",
                               message: "the answer to \(error.operationID) does not follow the API document: \(error.underlyingError)")
        }
    }

    /// The last answer as the API wrote it.
    var answer: String { String(decoding: answers.last, as: UTF8.self) }

    /// The last answer as JSON (for the few commands that print it whole).
    var answerJSON: JSONValue { (try? JSONParser.parse(answers.last)) ?? .null }
}

/// Keeps the bytes of the last answer.
final class AnswerRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var bytes: [UInt8] = []

    var last: [UInt8] {
        get { lock.withLock { bytes } }
        set { lock.withLock { bytes = newValue } }
    }
}

/// Reads every answer whole (so `--json` can print it), and turns an error status into the
/// `DBeaconError` its body carries (`{"error":{"code","message","path"}}`), so a command only
/// handles the answers of success.
struct AnswerMiddleware: ClientMiddleware {
    let answers: AnswerRecorder

    func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        let (response, body) = try await next(request, body, baseURL)
        var bytes: [UInt8] = []
        if let body { bytes = try await [UInt8](collecting: body, upTo: 1 << 30) }
        guard (200..<300).contains(response.status.code) else {
            throw DBeaconError.fromAPI(status: response.status.code, body: bytes.isEmpty ? nil : try? JSONParser.parse(bytes))
        }
        answers.last = bytes
        return (response, bytes.isEmpty ? nil : HTTPBody(bytes))
    }
}

extension DBeaconError.Kind {
    /// The kind an HTTP error status stands for: the inverse of the server's one mapping
    /// (`Kind.status`), `internal` for a status no kind has.
    init(status: Int) {
        self = Self.allCases.first { $0.status.code == status } ?? .internal
    }
}

extension DBeaconError {
    /// The error an API answer carries (`{"error":{"code","message","path"}}`).
    static func fromAPI(status: Int, body: JSONValue?) -> DBeaconError {
        let error = body?["error"]
        return DBeaconError(Kind(status: status), code: error?["code"]?.stringValue ?? "http_\(status)",
                            message: error?["message"]?.stringValue ?? "HTTP \(status)", path: error?["path"]?.stringValue)
    }

    /// A file given to a command that is not the JSON its operation takes.
    static func unreadable(_ file: String, as what: String, _ error: any Error) -> DBeaconError {
        let detail: String
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            detail = "\(Self.path(context.codingPath + [key])) is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
             DecodingError.dataCorrupted(let context):
            detail = "\(Self.path(context.codingPath)): \(context.debugDescription)"
        default:
            detail = "\(error)"
        }
        return DBeaconError(.unprocessable, code: "invalid_file", message: "\(file) is not \(what): \(detail)")
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingPrefix(".").description
    }
}
