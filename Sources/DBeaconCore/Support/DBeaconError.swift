/// The one error type of DBeacon. Every layer throws it; the HTTP layer maps `kind` to a
/// status code in exactly one place, and the body always carries `code`, `message` and,
/// for validation errors, the `path` of the offending value (`properties.perimeter.coordinates[0][3]`).
package struct DBeaconError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, independent of the transport.
    package enum Kind: Sendable, Equatable, CaseIterable {
        /// Malformed JSON or parameters (HTTP 400).
        case badRequest
        /// Missing or invalid credentials (HTTP 401).
        case unauthorized
        /// Visible to the caller but not theirs to change (HTTP 403).
        case forbidden
        /// Absent, or not visible to the caller (HTTP 404).
        case notFound
        /// A uniqueness or state conflict (HTTP 409).
        case conflict
        /// `If-Match` did not match the current version (HTTP 412).
        case preconditionFailed
        /// The body exceeds the configured limit (HTTP 413).
        case payloadTooLarge
        /// The body is not JSON by its `Content-Type` (HTTP 415).
        case unsupportedMediaType
        /// Well-formed but invalid input (HTTP 422).
        case unprocessable
        /// Rate or frequency limit reached (HTTP 429).
        case tooManyRequests
        /// A dependency is unavailable (HTTP 503).
        case unavailable
        /// The disk is full: nothing was written (HTTP 507).
        case insufficientStorage
        /// A bug or an unexpected failure (HTTP 500).
        case `internal`
    }

    package var kind: Kind
    package var code: String
    package var message: String
    package var path: String?
    package var cause: String?
    /// With `tooManyRequests`: seconds until a retry can succeed (HTTP `Retry-After`).
    package var retryAfterSeconds: Int?

    package init(_ kind: Kind, code: String, message: String, path: String? = nil, cause: String? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
    }

    package var description: String {
        var s = "\(code): \(message)"
        if let path { s += " (at \(path))" }
        if let cause { s += " [\(cause)]" }
        return s
    }

    // MARK: Common errors

    /// A well-formed value that breaks a rule (HTTP 422).
    package static func invalid(_ path: String, _ message: String, code: String = "invalid_value") -> DBeaconError {
        DBeaconError(.unprocessable, code: code, message: message, path: path)
    }

    /// A value of the wrong JSON type or a missing member (HTTP 400 for parameters, 422 in bodies).
    package static func badRequest(_ message: String, path: String? = nil, code: String = "bad_request") -> DBeaconError {
        DBeaconError(.badRequest, code: code, message: message, path: path)
    }

    /// The resource does not exist or the caller may not know it exists.
    package static func notFound(_ what: String, path: String? = nil) -> DBeaconError {
        DBeaconError(.notFound, code: "not_found", message: "\(what) not found", path: path)
    }

    package static func forbidden(_ message: String) -> DBeaconError {
        DBeaconError(.forbidden, code: "forbidden", message: message)
    }

    package static func conflict(_ message: String, code: String = "conflict", path: String? = nil) -> DBeaconError {
        DBeaconError(.conflict, code: code, message: message, path: path)
    }

    package static func unauthorized(_ message: String = "A valid bearer token is required") -> DBeaconError {
        DBeaconError(.unauthorized, code: "unauthorized", message: message)
    }

    /// A rate limit or quota was reached (HTTP 429, with `Retry-After` when waiting helps).
    package static func tooManyRequests(_ message: String, code: String = "rate_limited", retryAfter: Int?) -> DBeaconError {
        var error = DBeaconError(.tooManyRequests, code: code, message: message)
        error.retryAfterSeconds = retryAfter
        return error
    }

    package static func internalError(_ message: String, cause: String? = nil) -> DBeaconError {
        DBeaconError(.internal, code: "internal_error", message: message, cause: cause)
    }
}

extension DBeaconError {
    /// The error with its path renamed from one form to another (`properties.perimeter…` of a
    /// Feature to `perimeter…` of a service body): the first of `renames` whose `from` starts
    /// the path wins.
    package func renamingPath(_ renames: [(from: String, to: String)]) -> DBeaconError {
        guard let path else { return self }
        var e = self
        for (from, to) in renames
        where path == from || path.hasPrefix(from.hasSuffix(".") ? from : from + ".") || path.hasPrefix(from + "[") {
            e.path = to + path.dropFirst(from.count)
            return e
        }
        return e
    }
}

extension DBeaconError {
    /// The error with `prefix` before its path (`features[3].` + `properties.name`).
    package func prefixingPath(_ prefix: String) -> DBeaconError {
        var e = self
        e.path = prefix + (path ?? "")
        return e
    }
}
