import Foundation

/// The process's limit on open file descriptors, which caps how many connections it can hold.
enum DescriptorLimit {
    /// Descriptors kept for the database, webhook deliveries and logs.
    static let reserved = 512

    /// Raises the soft limit to the hard limit (Linux starts processes at 1,024) and returns
    /// how many connections fit under the limit then in force, with `reserved` kept aside.
    static func raiseForConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 - reserved }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return max(64, Int(clamping: limit.rlim_cur) - reserved)
    }
}
