#ifndef DBEACON_PREFETCH_H
#define DBEACON_PREFETCH_H

/// Asks the CPU to bring the cache line holding `p` closer (no fault on any address). Swift has
/// no such intrinsic; hot loops call it a few iterations ahead of their loads.
static inline void dbeacon_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

/// Prefetches every cache line of `count` bytes from `p`.
static inline void dbeacon_prefetch_range(const void *p, long count) {
    const char *c = (const char *)p;
    for (long i = 0; i < count; i += 64) __builtin_prefetch(c + i, 0, 3);
    if (count > 0) __builtin_prefetch(c + count - 1, 0, 3);
}

#endif
