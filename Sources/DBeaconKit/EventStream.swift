import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Why `Client.events(after:)` stopped.
public enum DBeaconEventStreamError: Error, Sendable, Equatable {
    /// The server refused the stream (401, 403, 404: a bad token, or an `after` id that is not the caller's).
    case refused(statusCode: Int)
    /// An event's data did not decode as `Components.Schemas.Event` (a server bug, not skipped silently).
    case malformedEvent(String)
}

extension Client {
    /// The caller's events, live: `GET /v1/events/stream` as Server-Sent Events, decoded.
    ///
    /// The server ends each stream after a while (and at shutdown); this reconnects after the
    /// `retry` the server asked for, sending `Last-Event-ID` with the id of the last event
    /// received, so the log resumes exactly there and nothing is lost or repeated. A 429 (too
    /// many open streams) or a connection failure is retried after `retryDelay`, doubling up to
    /// a minute. Pass `after` (an event id saved from an earlier run) to resume across launches;
    /// without it the stream starts with the next event. Cancel the consuming task to stop.
    public func events(after: String? = nil, retryDelay: Duration = .seconds(2))
        -> AsyncThrowingStream<Components.Schemas.Event, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var lastEventID = after
                var delay = retryDelay
                let decoder = DBeaconDateTranscoder.jsonDecoder()
                while !Task.isCancelled {
                    var wait = delay
                    do {
                        let output = try await self.streamEvents(headers: .init(lastEventID: lastEventID,
                                                                               accept: [.init(contentType: .textEventStream)]))
                        switch output {
                        case .ok(let ok):
                            guard case .textEventStream(let body) = ok.body else { break }
                            delay = retryDelay
                            for try await message in body.asDecodedServerSentEvents() {
                                if let retry = message.retry { wait = .milliseconds(retry) }
                                guard let data = message.data, !data.isEmpty else { continue }
                                let event = try decoder.decode(Components.Schemas.Event.self, from: Data(data.utf8))
                                lastEventID = message.id ?? event.id
                                continuation.yield(event)
                            }
                            // The server ended this stream: reconnect after its `retry`, resuming.
                            wait = min(wait, delay)
                        case .tooManyRequests:
                            delay = min(delay * 2, .seconds(60))
                        case .unauthorized, .forbidden, .notFound:
                            throw DBeaconEventStreamError.refused(statusCode: output.statusCode)
                        default:
                            delay = min(delay * 2, .seconds(60))
                        }
                    } catch let error as DBeaconEventStreamError {
                        continuation.finish(throwing: error)
                        return
                    } catch let error as DecodingError {
                        continuation.finish(throwing: DBeaconEventStreamError.malformedEvent("\(error)"))
                        return
                    } catch {
                        if Task.isCancelled { break }
                        delay = min(delay * 2, .seconds(60)) // connection trouble: back off
                    }
                    try? await Task.sleep(for: wait)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension Operations.StreamEvents.Output {
    var statusCode: Int {
        switch self {
        case .ok: 200
        case .badRequest: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .tooManyRequests: 429
        case .undocumented(let code, _): code
        }
    }
}
