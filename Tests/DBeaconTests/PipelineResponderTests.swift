import DBeaconCore
import DBeaconHTTP
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// Requests are answered from the channel pipeline (`PipelineResponder`) or by Hummingbird's
/// connection loop (a large body, `Connection: close`, `Expect`); on a real connection, whichever
/// path each takes, the answers come in the order of the requests, with the same headers.
@Suite(.bounded) struct PipelineResponderTests {
    @Test(arguments: Backend.all) func pipelinedRequestsAreAnsweredInOrderWhicheverPathTheyTake(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        let (owner, _) = try await h.user("owner")
        let (_, ann) = try await h.user("ann")
        let square = try await h.beacon(feature(name: "square", perimeter: circle(100)), owner: owner)
        try await h.app().test(.live) { client in
            let port = try #require(client.port)
            let connection = try await RawStream.connect(port: port)
            func post(_ json: String, extra: String = "") -> String {
                "POST /v1/me/location HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(ann)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(json.utf8.count)\r\n\(extra)\r\n\(json)"
            }
            // A body over 64 KiB goes to Hummingbird's loop, streamed (JSON padded with spaces).
            let large = #"{"lat": 48.7784, "lon": 9.18, "accuracy_m": 5, "timestamp": "2026-11-21T11:59:30Z"}"#
                + String(repeating: " ", count: 70_000)
            // All four in one write: the second and fourth go to Hummingbird's loop, the first and
            // third are answered in the pipeline, and each must wait for the one before.
            try await connection.send(
                post(#"{"lat": 48.7784, "lon": 9.18, "accuracy_m": 5, "timestamp": "2026-11-21T11:59:00Z"}"#)
                    + post(large)
                    + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    + "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(ann)\r\nConnection: close\r\n\r\n")
            try await connection.waitForClose(within: .seconds(20))
            let answers = RawResponse.parse(connection.text)
            try #require(answers.count == 4, "\(connection.text.prefix(2000))")
            #expect(answers.map(\.status) == [200, 200, 200, 200], "\(connection.text.prefix(2000))")
            let first = try JSONParser.parse(Array(answers[0].body.utf8))
            #expect(first["inside"] == [.string(square.id.rawValue)] && first["events"]?.arrayValue?.count == 1)
            let second = try JSONParser.parse(Array(answers[1].body.utf8))
            #expect(second["accepted"] == 1 && second["events"] == [])
            #expect(answers[2].body == #"{"status":"ok"}"#)
            let events = try JSONParser.parse(Array(answers[3].body.utf8))
            #expect(events["events"]?.arrayValue?.count == 1)
            for answer in answers {
                #expect(answer.headers["server"] == "dbeacon")
                #expect(answer.headers["date"]?.hasSuffix(" GMT") == true)
                #expect(answer.headers["content-type"] == "application/json")
            }
        }
    }

    /// The `Date` header the pipeline writes (Hummingbird's own cache is not public): the
    /// IMF-fixdate of RFC 9110 §5.6.7, checked against Foundation's formatter.
    @Test func theDateHeaderIsAnIMFFixdate() {
        let reference = DateFormatter()
        reference.locale = Locale(identifier: "en_US_POSIX")
        reference.timeZone = TimeZone(identifier: "GMT")
        reference.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")  // RFC 9110's example
        var g = SeededGenerator(seed: 59)
        for _ in 0..<500 {
            let second = Int.random(in: 0...4_102_444_800, using: &g)  // up to 2100
            #expect(HTTPDate.format(second) == reference.string(from: Date(timeIntervalSince1970: TimeInterval(second))))
        }
        let now = Int(Date().timeIntervalSince1970)
        #expect([now, now + 1].map(HTTPDate.format).contains(HTTPDate.now))
    }

    /// A client that closes its side after sending still gets its answer, then the close; a
    /// malformed request after an answered one gets Hummingbird's 400 after that answer.
    @Test(arguments: Backend.all) func halfClosedAndMalformedConnections(_ backend: Backend) async throws {
        let h = try await TestHarness.make(backend: backend)
        try await h.app().test(.live) { client in
            let port = try #require(client.port)
            let halfClosed = try await RawStream.connect(port: port)
            try await halfClosed.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            try await halfClosed.channel.close(mode: .output)
            try await halfClosed.waitForClose(within: .seconds(10))
            #expect(RawResponse.parse(halfClosed.text).map(\.body) == [#"{"status":"ok"}"#], "\(halfClosed.text)")

            let malformed = try await RawStream.connect(port: port)
            try await malformed.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nNOT HTTP\r\n\r\n")
            try await malformed.waitForClose(within: .seconds(10))
            let answers = RawResponse.parse(malformed.text)
            #expect(answers.map(\.status) == [200, 400], "\(malformed.text)")
        }
    }
}

/// Responses with a `Content-Length`, read back off a raw connection's text.
struct RawResponse {
    let status: Int
    /// Lowercased names.
    let headers: [String: String]
    let body: String

    static func parse(_ text: String) -> [RawResponse] {
        var bytes = Substring(text).utf8[...]
        var responses: [RawResponse] = []
        let separator = Array("\r\n\r\n".utf8)
        while let end = bytes.firstRange(of: separator) {
            let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            let rest = bytes[end.upperBound...]
            let body = rest.prefix(length)
            responses.append(RawResponse(status: status, headers: headers, body: String(decoding: body, as: UTF8.self)))
            bytes = rest.dropFirst(length)
        }
        return responses
    }
}
