import Foundation

/// A `pthread_rwlock_t`: many readers or one writer.
final class ReadWriteLock: @unchecked Sendable {
    private let rw: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        rw = .allocate(capacity: 1)
        rw.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(rw, nil)
    }

    deinit {
        pthread_rwlock_destroy(rw)
        rw.deallocate()
    }

    @inline(__always)
    func read<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(rw)
        defer { pthread_rwlock_unlock(rw) }
        return try body()
    }

    @inline(__always)
    func write<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(rw)
        defer { pthread_rwlock_unlock(rw) }
        return try body()
    }
}
