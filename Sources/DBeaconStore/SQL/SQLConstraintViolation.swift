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

    /// Consecutive slices whose sizes are powers of two up to `largest` (itself a power of
    /// two), largest first: multi-row statements built per slice then come in a few shapes,
    /// which the connections' statement caches keep, instead of one new statement per row
    /// count (SQLite prepares a statement's n placeholders in O(n²)).
    package func chunkedInPowersOfTwo(largest: Int = 256) -> [ArraySlice<Element>] {
        var slices: [ArraySlice<Element>] = []
        var start = 0, size = largest
        while start < count {
            while size > count - start { size /= 2 }
            slices.append(self[start..<start + size])
            start += size
        }
        return slices
    }
}
