#if canImport(Glibc)
import Glibc

/// glibc's `malloc_trim` (not exported by the Glibc module).
@_silgen_name("malloc_trim") private func mallocTrim(_ pad: Int) -> Int32
#endif

/// Gives the heap memory freed by a load back to the system: loading 1M beacons decodes every
/// perimeter into temporary arrays, and glibc keeps ~0.5 GiB of them resident afterwards.
package func releaseFreedMemory() {
    #if canImport(Glibc)
    _ = mallocTrim(0)
    #endif
}
