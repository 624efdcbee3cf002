package import DBeaconCore
import DBeaconAPI
import DBeaconGeo
package import DBeaconServices
package import Hummingbird
package import HTTPTypes
import NIOCore

extension Response {
    /// A JSON response.
    package static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(bytes: JSONWriter.serialize(value), status: status, headers: headers)
    }

    /// A response of already-serialised JSON.
    package static func json(bytes: [UInt8], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(buffer: ByteBuffer(bytes: bytes), status: status, headers: headers)
    }

    /// A response of JSON already in a buffer.
    package static func json(buffer: ByteBuffer, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: buffer))
    }

    /// A nearby answer (`NearbyEncoding.collection`), written straight into the response's
    /// buffer: full Features at 1M beacons average 275 KiB, which an array would be copied from.
    package static func nearby(_ results: [NearbyResult], includePerimeters: Bool = true) -> Response {
        let body: ByteBuffer = NearbyEncoding.collection(results, includePerimeters: includePerimeters) { count, fill in
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            var ok = false
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                ok = fill(UnsafeMutableRawBufferPointer(rebasing: raw.prefix(count)))
                return ok ? count : 0
            }
            return ok ? buffer : nil
        }
        return json(buffer: body)
    }

    /// A Feature with its `ETag`.
    package static func feature(_ beacon: VisibleBeacon, status: HTTPResponse.Status = .ok) -> Response {
        json(BeaconFeatureCodec.encode(beacon), status: status, headers: [.eTag: "\"\(beacon.version)\""])
    }
}

extension HTTPFields {
    /// What `self[name]` gives (several values joined with ", "), without joining them into a new
    /// string when the field appears once, as it nearly always does: the subscript's join was
    /// about 2 µs of each location fix (its token and its body's two headers).
    package func value(of name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            guard found == nil else { return self[name] }
            found = field.value
        }
        return found
    }
}

extension Request {
    /// Collects the body (at most `limit` bytes: 413 beyond) and parses it as JSON.
    /// A body sent with a `Content-Type` that is not JSON (`application/json`,
    /// `application/merge-patch+json`, `application/geo+json`, any `…+json`) is refused with 415
    /// before it is read; a body without one is read as JSON.
    package mutating func jsonBody(limit: Int) async throws -> JSONValue {
        if let type = headers.value(of: .contentType), !Self.isJSON(mediaType: type) {
            throw DBeaconError(.unsupportedMediaType, code: "unsupported_media_type",
                               message: "send JSON with Content-Type: application/json (got \(type.prefix(100)))", path: "Content-Type")
        }
        if let length = headers.value(of: .contentLength).flatMap(Int.init), length > limit {
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

    /// `jsonBody` for requests whose body is optional: nil when there is none.
    package mutating func optionalJSONBody(limit: Int) async throws -> JSONValue? {
        let length = headers.value(of: .contentLength)
        if length == "0" { return nil }
        if length == nil && headers.value(of: .transferEncoding) == nil { return nil }
        do {
            return try await jsonBody(limit: limit)
        } catch let error as DBeaconError where error.code == "missing_body" {
            return nil
        }
    }

    /// Whether a `Content-Type` is JSON: `application/json` or any `application/…+json`, in any
    /// case, its parameters (`charset`) ignored.
    static func isJSON(mediaType: String) -> Bool {
        if mediaType.utf8.elementsEqual("application/json".utf8) { return true } // what nearly every client sends
        let essence = mediaType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingSpaces.lowercased() } ?? ""
        return essence == "application/json" || (essence.hasPrefix("application/") && essence.hasSuffix("+json"))
    }

    /// The versions `If-Match` accepts (RFC 9110 §13.1.1): nil when absent or `*`; otherwise the
    /// versions named by its list of entity tags (`"3"`, `W/"3"`, and, leniently, `3`). A tag
    /// this server never issued (`"abc"`) names no version, so a list of only such tags can match
    /// nothing (412). 400 only for a header that is not a list of entity tags.
    package func ifMatchVersions() throws -> Set<Int>? {
        guard let versions = try entityTags(.ifMatch) else { return nil }
        return versions == Self.anyVersion ? nil : versions
    }

    /// `*`: any version (`ifMatchVersions` answers nil, `entityTags` this marker).
    package static let anyVersion: Set<Int> = [-1]

    /// The versions named by an `If-Match` / `If-None-Match` list: nil when absent, `[-1]` for
    /// `*`, otherwise the numeric tags (possibly none); 400 when it is not such a list.
    package func entityTags(_ field: HTTPField.Name) throws -> Set<Int>? {
        guard let header = headers[field] else { return nil }
        let name = field.rawName
        var versions = Set<Int>()
        var rest = Substring(header)
        func fail() -> DBeaconError {
            DBeaconError(.badRequest, code: "invalid_\(name.lowercased().replacingOccurrences(of: "-", with: "_"))",
                         message: "\(name) must be * or a list of ETags such as \"3\"", path: name)
        }
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" }
            if rest.hasPrefix("*") {
                rest = rest.dropFirst()
                guard rest.allSatisfy({ $0 == " " || $0 == "\t" }) else { throw fail() }
                return Self.anyVersion
            }
            if rest.hasPrefix("W/") { rest = rest.dropFirst(2) }
            if rest.hasPrefix("\"") {
                guard let close = rest.dropFirst().firstIndex(of: "\"") else { throw fail() }
                if let v = Int(rest[rest.index(after: rest.startIndex)..<close]), v >= 0 { versions.insert(v) }
                rest = rest[rest.index(after: close)...]
            } else {
                let token = rest.prefix { $0 != "," && $0 != " " && $0 != "\t" }
                guard !token.isEmpty, token.allSatisfy({ $0.isASCII && $0.isNumber }) else { throw fail() }
                if let v = Int(token) { versions.insert(v) }  // beyond any version: matches nothing
                rest = rest.dropFirst(token.count)
            }
            rest = rest.drop { $0 == " " || $0 == "\t" }
            if rest.isEmpty { return versions }
            guard rest.hasPrefix(",") else { throw fail() }
            rest = rest.dropFirst()
            if rest.allSatisfy({ $0 == " " || $0 == "\t" }) { throw fail() }
        }
    }
}
