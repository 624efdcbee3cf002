package import DBeaconCore
import DBeaconServices
import DBeaconAPI
import DBeaconGeo
package import Hummingbird
import HummingbirdCore

/// Reads query parameters: 400 for missing or unreadable values, 422 for readable values that
/// break a rule (latitude out of range, NaN), each naming the parameter.
package struct QueryReader {
    /// The request's query parameters, repeated keys kept (for `tags`).
    let parameters: FlatDictionary<Substring, Substring>

    package init(_ request: Request) {
        parameters = request.uri.queryParameters
    }

    /// The parameter's value; nil when absent; 400 when present but empty (`?at=`): an empty
    /// value is a mistake, not a way to leave a parameter out. 400 too when it is given more
    /// than once (`?lon=1&lon=x`): only `tag` is a list, and reading the first of several values
    /// would answer a question the client did not ask.
    package func string(_ key: String) throws -> String? {
        // One pass, no array of the values (lat and lon are read on every nearby request).
        var found: Substring?
        for (name, value) in parameters where name == key[...] {
            guard found == nil else {
                throw DBeaconError(.badRequest, code: "invalid_parameter", message: "\(key) must be given once", path: key)
            }
            found = value
        }
        guard let raw = found else { return nil }
        guard !raw.isEmpty else {
            throw DBeaconError(.badRequest, code: "empty_parameter", message: "\(key) must not be empty (leave it out instead)", path: key)
        }
        return String(raw)
    }

    /// Whether the parameter is given (even empty).
    package func has(_ key: String) -> Bool { parameters[key[...]] != nil }

    /// A decimal number; nil when absent; 400 `invalid_parameter` when it is not one (hexadecimal
    /// included), 422 `not_finite` for NaN or an infinity.
    package func double(_ key: String) throws -> Double? {
        guard let raw = try string(key) else { return nil }
        guard let value = Double(decimal: raw) else {
            // NaN and infinities are numbers of the wrong kind (422, as in a body); anything else,
            // hexadecimal included, is not a number here.
            if let special = Double(raw), !special.isFinite {
                throw DBeaconError.invalid(key, "\(key) must be a finite number", code: "not_finite")
            }
            throw DBeaconError(.badRequest, code: "invalid_parameter", message: "\(key) must be a decimal number", path: key)
        }
        guard value.isFinite else {
            throw DBeaconError.invalid(key, "\(key) must be a finite number", code: "not_finite")
        }
        return value
    }

    /// `double`, required: 400 `missing_parameter` when absent.
    package func requiredDouble(_ key: String) throws -> Double {
        guard let v = try double(key) else {
            throw DBeaconError(.badRequest, code: "missing_parameter", message: "\(key) is required", path: key)
        }
        return v
    }

    /// A WGS84 point from two parameters.
    package func position(lat latKey: String = "lat", lon lonKey: String = "lon") throws -> Position {
        try Position.checked(lat: try requiredDouble(latKey), lon: try requiredDouble(lonKey), latPath: latKey, lonPath: lonKey)
    }

    /// `limit`: a positive integer, capped at `max`.
    /// (A limit too large for an integer is capped like any other.)
    package func limit(default defaultValue: Int = BeaconService.defaultPageSize, max: Int = BeaconService.maxPageSize) throws -> Int {
        guard let raw = try string("limit") else { return defaultValue }
        let digits = raw.hasPrefix("+") ? raw.dropFirst() : raw[...]
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.contains(where: { $0 != "0" }) else {
            throw DBeaconError(.badRequest, code: "invalid_parameter", message: "limit must be a positive integer", path: "limit")
        }
        guard let value = Int(digits) else { return max }
        return min(value, max)
    }

    /// Repeated `tag=` parameters (comma-separated lists are accepted too), normalised.
    package func tags(_ key: String = "tag") throws -> [String] {
        var tags: [String] = []
        for value in parameters[values: key[...]] {
            guard !value.isEmpty else {
                throw DBeaconError(.badRequest, code: "empty_parameter", message: "\(key) must not be empty (leave it out instead)", path: key)
            }
            for part in value.split(separator: ",") {
                let tag = try BeaconFeatureCodec.normalizeTag(String(part), path: key)
                if !tags.contains(tag) { tags.append(tag) }
            }
        }
        return tags
    }

    /// An RFC 3339 timestamp; nil when absent; 400 `invalid_parameter` for anything else.
    package func timestamp(_ key: String) throws -> Timestamp? {
        guard let raw = try string(key) else { return nil }
        guard let t = Timestamp(rfc3339: raw) else {
            throw DBeaconError(.badRequest, code: "invalid_parameter",
                               message: "\(key) must be an RFC 3339 timestamp such as 2026-11-21T12:00:00Z", path: key)
        }
        return t
    }

    /// `bbox=west,south,east,north`; west > east crosses the antimeridian.
    package func bbox(_ key: String = "bbox") throws -> BoundingBox? {
        guard let raw = try string(key) else { return nil }
        let parts = raw.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingSpaces) }
        guard parts.count == 4, let w = parts[0], let s = parts[1], let e = parts[2], let n = parts[3] else {
            throw DBeaconError(.badRequest, code: "invalid_parameter", message: "bbox must be west,south,east,north", path: key)
        }
        guard [w, s, e, n].allSatisfy(\.isFinite), (-180...180).contains(w), (-180...180).contains(e),
              (-90...90).contains(s), (-90...90).contains(n), s <= n else {
            throw DBeaconError.invalid(key, "bbox must lie within [-180, 180] × [-90, 90] with south ≤ north", code: "out_of_range")
        }
        return BoundingBox(west: w, south: s, east: e, north: n)
    }

    /// `true`, `1`, `yes` or `false`, `0`, `no` (in any case); nil when absent; 400
    /// `invalid_parameter` otherwise.
    package func bool(_ key: String) throws -> Bool? {
        guard let raw = try string(key) else { return nil }
        switch raw.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw DBeaconError(.badRequest, code: "invalid_parameter", message: "\(key) must be true or false", path: key)
        }
    }
}
