package import DBeaconCore

/// A statement broke a constraint (unique, foreign key, check). Store code may catch it to
/// report a precise error; the store reports any other as a conflict.
package struct SQLConstraintViolation: Error, Sendable {
    /// The constraint or index, where the database names it (PostgreSQL).
    package var constraint: String?
    package var message: String

    package var conflict: DBeaconError { DBeaconError.conflict("constraint violated: \(message)") }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
