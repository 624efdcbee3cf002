package import DBeaconCore
package import DBeaconServices

/// The wire form of users (`/v1/me`, `/v1/users…`) and of an erasure's report.
package enum AccountEncoding {
    /// `{"id","name","created_at","disabled","disabled_at","token_rotated_at"}`.
    package static func user(_ u: User) -> JSONObject {
        JSONObject([
            ("id", .string(u.id.rawValue)), ("name", .string(u.name)), ("created_at", .string(u.createdAt.rfc3339)),
            ("disabled", .bool(u.isDisabled)), ("disabled_at", .optional(u.disabledAt?.rfc3339)),
            ("token_rotated_at", .optional(u.tokenRotatedAt?.rfc3339)),
        ])
    }

    /// A user as the admin sees them: with how many beacons and active devices they have.
    package static func summary(_ s: AccountService.UserSummary) -> JSONValue {
        var o = user(s.user)
        o["beacons"] = .int(s.beacons)
        o["devices"] = .int(s.devices)
        return .object(o)
    }

    /// A user with their new token (shown only this once): `{"id","name","token", …}`.
    package static func withToken(_ u: User, _ token: String) -> JSONValue {
        var o = JSONObject([("id", .string(u.id.rawValue)), ("name", .string(u.name)), ("token", .string(token))])
        o["token_rotated_at"] = .optional(u.tokenRotatedAt?.rfc3339)
        return .object(o)
    }
}

/// An `ExportSink` that writes the export document as JSON text, handing it on in chunks of
/// about 64 KiB (`flush`), so the whole document is never held.
package struct ExportJSONWriter: ExportSink {
    /// The text not handed on yet; `flushIfFull` hands it on once it reaches `chunk` bytes.
    private var buffer: [UInt8] = []
    /// Members of the top-level object written so far: every one after the first is preceded by a
    /// comma.
    private var members = 0
    /// Whether an array member is open, and how many elements it has so far (for its commas).
    private var inArray = false, elementsInArray = 0
    /// Hands a chunk of the document on, in order (the HTTP layer writes it to the response body).
    private let flush: ([UInt8]) async throws -> Void
    /// The size, in bytes, at which the buffer is handed on: 64 KiB.
    static let chunk = 64 << 10

    /// Starts the document (`{`); `flush` receives its text in chunks of about `chunk` bytes, the
    /// rest at `finish`.
    package init(flush: @escaping ([UInt8]) async throws -> Void) {
        self.flush = flush
        buffer.reserveCapacity(Self.chunk + 4096)
        buffer.append(UInt8(ascii: "{"))
    }

    /// Writes `"key":`, after a comma unless it is the object's first member.
    private mutating func key(_ key: String) {
        if members > 0 { buffer.append(UInt8(ascii: ",")) }
        members += 1
        buffer += JSONWriter.serialize(.string(key))
        buffer.append(UInt8(ascii: ":"))
    }

    /// Hands the buffer on once it holds at least `chunk` bytes, keeping its capacity for the next
    /// chunk.
    private mutating func flushIfFull() async throws {
        if buffer.count >= Self.chunk {
            try await flush(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// A member whose value is written whole.
    package mutating func member(_ key: String, _ value: JSONValue) async throws {
        self.key(key)
        buffer += JSONWriter.serialize(value)
        try await flushIfFull()
    }

    /// Opens a member whose elements come in pages: `open` is `[`, or the head of an object that
    /// ends in one, such as a FeatureCollection's `{"type":"FeatureCollection","features":[`.
    package mutating func beginArray(_ key: String, open: String) async throws {
        self.key(key)
        buffer += Array(open.utf8)
        inArray = true
        elementsInArray = 0
    }

    /// Appends one page of elements to the open array, flushing as the buffer fills, so a long
    /// array is never held whole.
    package mutating func elements(_ values: [JSONValue]) async throws {
        for v in values {
            if elementsInArray > 0 { buffer.append(UInt8(ascii: ",")) }
            elementsInArray += 1
            buffer += JSONWriter.serialize(v)
            try await flushIfFull()
        }
    }

    /// Closes the open array with `close` (`]`, or `]}` after a FeatureCollection's head).
    package mutating func endArray(close: String) async throws {
        buffer += Array(close.utf8)
        inArray = false
        try await flushIfFull()
    }

    /// Closes the document and hands on what is left.
    package mutating func finish() async throws {
        buffer.append(UInt8(ascii: "}"))
        try await flush(buffer)
        buffer.removeAll()
    }
}
