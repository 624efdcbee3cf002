/// Reads members of a JSON object while tracking where they are, so that each validation
/// error names its path (`properties.lifetime.start`). Type mismatches and missing
/// required members are 422 (the JSON itself was well-formed).
package struct ObjectReader: Sendable {
    package let object: JSONObject
    /// The path of this object; empty for the document root.
    package let path: String

    package init(_ value: JSONValue, path: String = "") throws(DBeaconError) {
        guard case .object(let o) = value else {
            throw DBeaconError.invalid(path.isEmpty ? "$" : path, "expected an object, got \(value.typeName)",
                                       code: "invalid_type")
        }
        self.object = o
        self.path = path
    }

    /// The path of a member of this object.
    package func path(_ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// True when the member is present (even if null).
    package func has(_ key: String) -> Bool { object[key] != nil }

    /// The member's raw value; nil when absent or null.
    package func value(_ key: String) -> JSONValue? {
        guard let v = object[key], !v.isNull else { return nil }
        return v
    }

    private func typeError(_ key: String, _ expected: String, _ got: JSONValue) -> DBeaconError {
        .invalid(path(key), "expected \(expected), got \(got.typeName)", code: "invalid_type")
    }

    private func missing(_ key: String) -> DBeaconError {
        .invalid(path(key), "\(key) is required", code: "missing_field")
    }

    package func optionalString(_ key: String, maxLength: Int = 10_000, allowEmpty: Bool = true) throws(DBeaconError) -> String? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v else { throw typeError(key, "a string", v) }
        if s.unicodeScalars.count > maxLength { // JSON Schema counts code points, not graphemes
            throw .invalid(path(key), "must be at most \(maxLength) characters", code: "too_long")
        }
        if !allowEmpty && s.trimmingSpaces.isEmpty {
            throw .invalid(path(key), "must not be empty", code: "empty_value")
        }
        return s
    }

    package func string(_ key: String, maxLength: Int = 10_000, allowEmpty: Bool = false) throws(DBeaconError) -> String {
        guard let s = try optionalString(key, maxLength: maxLength, allowEmpty: allowEmpty) else { throw missing(key) }
        return s
    }

    /// A finite number; NaN and infinities are rejected with a 422 naming the member.
    package func optionalNumber(_ key: String) throws(DBeaconError) -> Double? {
        guard let v = value(key) else { return nil }
        guard case .number(let n) = v else { throw typeError(key, "a number", v) }
        guard n.isFinite else { throw .invalid(path(key), "must be a finite number (NaN and Infinity are not allowed)", code: "not_finite") }
        return n
    }

    package func number(_ key: String) throws(DBeaconError) -> Double {
        guard let n = try optionalNumber(key) else { throw missing(key) }
        return n
    }

    package func optionalInt(_ key: String, range: ClosedRange<Int>? = nil) throws(DBeaconError) -> Int? {
        guard let n = try optionalNumber(key) else { return nil }
        guard n == n.rounded(), abs(n) < 9e15 else { throw .invalid(path(key), "must be an integer", code: "invalid_type") }
        let i = Int(n)
        if let range, !range.contains(i) {
            throw .invalid(path(key), "must be between \(range.lowerBound) and \(range.upperBound)", code: "out_of_range")
        }
        return i
    }

    package func int(_ key: String, range: ClosedRange<Int>? = nil) throws(DBeaconError) -> Int {
        guard let i = try optionalInt(key, range: range) else { throw missing(key) }
        return i
    }

    package func optionalBool(_ key: String) throws(DBeaconError) -> Bool? {
        guard let v = value(key) else { return nil }
        guard case .bool(let b) = v else { throw typeError(key, "a boolean", v) }
        return b
    }

    package func optionalArray(_ key: String, maxCount: Int = 10_000) throws(DBeaconError) -> [JSONValue]? {
        guard let v = value(key) else { return nil }
        guard case .array(let a) = v else { throw typeError(key, "an array", v) }
        if a.count > maxCount {
            throw .invalid(path(key), "must have at most \(maxCount) elements", code: "too_many")
        }
        return a
    }

    package func optionalObject(_ key: String) throws(DBeaconError) -> ObjectReader? {
        guard let v = value(key) else { return nil }
        return try ObjectReader(v, path: path(key))
    }

    package func object(_ key: String) throws(DBeaconError) -> ObjectReader {
        guard let o = try optionalObject(key) else { throw missing(key) }
        return o
    }

    /// An optional RFC 3339 timestamp.
    package func optionalTimestamp(_ key: String) throws(DBeaconError) -> Timestamp? {
        guard let s = try optionalString(key, maxLength: 64) else { return nil }
        guard let t = Timestamp(rfc3339: s) else {
            throw .invalid(path(key), "must be an RFC 3339 timestamp such as 2026-11-21T12:00:00Z", code: "invalid_timestamp")
        }
        return t
    }

    package func timestamp(_ key: String) throws(DBeaconError) -> Timestamp {
        guard let t = try optionalTimestamp(key) else { throw missing(key) }
        return t
    }

    /// An array of strings.
    package func optionalStringArray(_ key: String, maxCount: Int = 1_000, maxLength: Int = 200) throws(DBeaconError) -> [String]? {
        guard let a = try optionalArray(key, maxCount: maxCount) else { return nil }
        var result: [String] = []
        result.reserveCapacity(a.count)
        for (i, v) in a.enumerated() {
            guard case .string(let s) = v else {
                throw .invalid("\(path(key))[\(i)]", "expected a string, got \(v.typeName)", code: "invalid_type")
            }
            if s.unicodeScalars.count > maxLength {
                throw .invalid("\(path(key))[\(i)]", "must be at most \(maxLength) characters", code: "too_long")
            }
            result.append(s)
        }
        return result
    }
}

extension StringProtocol {
    /// The string without leading and trailing whitespace.
    package var trimmingSpaces: Substring {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return s
    }
}
