package import DBeaconCore
import DBeaconGeo
package import Hummingbird
import NIOCore

extension Response {
    /// A JSON response.
    package static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(bytes: JSONWriter.serialize(value), status: status, headers: headers)
    }

    /// A response of already-serialised JSON.
    package static func json(bytes: [UInt8], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A Feature with its `ETag`.
    package static func feature(_ beacon: Beacon, status: HTTPResponse.Status = .ok) -> Response {
        json(BeaconFeatureCodec.encode(beacon), status: status, headers: [.eTag: "\"\(beacon.version)\""])
    }
}

extension Request {
    /// Collects the body (at most `limit` bytes: 413 beyond) and parses it as JSON.
    package mutating func jsonBody(limit: Int) async throws -> JSONValue {
        if let length = headers[.contentLength].flatMap(Int.init), length > limit {
            throw DBeaconError(.payloadTooLarge, code: "body_too_large",
                               message: "the request body exceeds the limit of \(limit) bytes")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(upTo: limit)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw DBeaconError(.payloadTooLarge, code: "body_too_large",
                               message: "the request body exceeds the limit of \(limit) bytes")
        }
        guard buffer.readableBytes > 0 else {
            throw DBeaconError(.badRequest, code: "missing_body", message: "a JSON request body is required")
        }
        return try JSONParser.parse(buffer.readableBytesView)
    }

    /// The version named by `If-Match` (`"3"`, `W/"3"`, `3`), nil when absent or `*`.
    package func ifMatchVersion() throws -> Int? {
        guard var value = headers[.ifMatch]?.trimmingSpaces else { return nil }
        if value == "*" { return nil }
        if value.hasPrefix("W/") { value = value.dropFirst(2) }
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
        guard let version = Int(value) else {
            throw DBeaconError(.badRequest, code: "invalid_if_match", message: "If-Match must be an ETag such as \"3\"", path: "If-Match")
        }
        return version
    }
}
