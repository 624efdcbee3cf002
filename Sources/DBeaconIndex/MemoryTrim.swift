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

/// Runs `body` (a bulk load) with glibc's allocator set for many short-lived blocks of all
/// sizes, then sets it back for serving (`releaseFreedMemory` then gives back what the load
/// freed).
///
/// A load of 1M beacons makes 18M allocations, from a few bytes to whole perimeters. With
/// glibc's defaults, a fifth of its CPU time was the allocator: small blocks parked in
/// "fast bins" consolidated again before each large request (`malloc_consolidate`), arenas'
/// tops given back and faulted in again, mid-sized arrays mapped and unmapped one by one.
/// During the load: no fast bins (the per-thread cache still serves small blocks), 64 MiB of
/// headroom per growth, freed tops kept, and nothing under 32 MiB mapped on its own. After it:
/// fast bins at their default, and fixed thresholds (setting any disables glibc's adaptive
/// ones) near where the adaptive ones settle on a server: blocks from 4 MiB mapped on their
/// own, an arena's free top over 8 MiB given back.
package func withAllocatorSetForBulkLoading<T>(_ body: () async throws -> T) async rethrows -> T {
    #if canImport(Glibc)
    let (mxfast, trimThreshold, topPad, mmapThreshold): (Int32, Int32, Int32, Int32) = (1, -1, -2, -3)
    _ = mallopt(mxfast, 0)
    _ = mallopt(topPad, 64 << 20)
    _ = mallopt(trimThreshold, 256 << 20)
    _ = mallopt(mmapThreshold, 32 << 20)
    defer {
        _ = mallopt(mxfast, Int32(64 * MemoryLayout<Int>.size / 4)) // glibc's DEFAULT_MXFAST
        _ = mallopt(topPad, 128 << 10)                              // glibc's DEFAULT_TOP_PAD
        _ = mallopt(mmapThreshold, 4 << 20)
        _ = mallopt(trimThreshold, 8 << 20)
    }
    #endif
    return try await body()
}
