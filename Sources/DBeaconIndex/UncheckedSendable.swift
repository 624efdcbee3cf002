/// A value handed across threads by code that guarantees exclusive access itself.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
