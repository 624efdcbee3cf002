#if canImport(Glibc)
import Glibc

/// glibc's `malloc_trim` and `mallopt` (not exported by the Glibc module).
@_silgen_name("malloc_trim") private func mallocTrim(_ pad: Int) -> Int32
@_silgen_name("mallopt") private func mallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif

/// Gives the heap memory freed by a load back to the system: loading 1M beacons decodes every
/// perimeter into temporary arrays, and glibc keeps ~0.5 GiB of them resident afterwards.
package func releaseFreedMemory() {
    #if canImport(Glibc)
    _ = mallocTrim(0)
    #endif
}

/// Runs `body` (a bulk load) without glibc's "fast bins", then sets them back for serving
/// (`releaseFreedMemory` then gives back what the load freed).
///
/// A load of 1M beacons makes 18M allocations, from a few bytes to whole perimeters, on
/// several threads. With fast bins, the small blocks freed between two large requests are
/// parked there and consolidated again before each large one (`malloc_consolidate`): 3 % of
/// the load's CPU, and more in the bins' searches after. Without them the per-thread cache
/// still serves most small blocks. Only this setting is changed: setting any of glibc's
/// thresholds would switch off its adaptive ones for the rest of the process's life.
package func withAllocatorSetForBulkLoading<T>(_ body: () async throws -> T) async rethrows -> T {
    #if canImport(Glibc)
    let mxfast: Int32 = 1 // M_MXFAST
    _ = mallopt(mxfast, 0)
    defer { _ = mallopt(mxfast, Int32(64 * MemoryLayout<Int>.size / 4)) } // glibc's DEFAULT_MXFAST
    #endif
    return try await body()
}
