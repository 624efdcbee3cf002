#ifndef DBEACON_DIGITS_H
#define DBEACON_DIGITS_H

// Sixteen decimal digits at once, for the fraction digits of large perimeters' coordinates
// (`FixedDecimal`). Swift has no portable access to 16-bit lane multiplies, hence C.
//
// SwiftPM does not rebuild the Swift files importing this header when only the header changes:
// touch them.

#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>

/// `value` (below 10^8) as eight digits 0…9 in eight 16-bit lanes, most significant first
/// (Wojciech Muła's and Milo Yip's SSE2 conversion): a dozen instructions where the scalar form
/// needs four dependent multiply rounds.
static inline __m128i dbeacon_eight_digits_sse2(uint32_t value) {
    const __m128i abcdefgh = _mm_cvtsi32_si128((int)value);
    // abcd, efgh = abcdefgh divmod 10000 (0xd1b71759 / 2^45 is 1/10000 for these values)
    const __m128i abcd = _mm_srli_epi64(_mm_mul_epu32(abcdefgh, _mm_set1_epi32((int)0xd1b71759)), 45);
    const __m128i efgh = _mm_sub_epi32(abcdefgh, _mm_mul_epu32(abcd, _mm_set1_epi32(10000)));
    // [abcd, efgh, 0, …] · 4, then each spread over four 16-bit lanes
    const __m128i v1 = _mm_slli_epi64(_mm_unpacklo_epi16(abcd, efgh), 2);
    const __m128i v2a = _mm_unpacklo_epi16(v1, v1);
    const __m128i v2 = _mm_unpacklo_epi32(v2a, v2a);
    // [a, ab, abc, abcd, e, ef, efg, efgh]: divisions by 1000, 100, 10, 1 as two high multiplies
    const __m128i v3 = _mm_mulhi_epu16(v2, _mm_setr_epi16(8389, 5243, 13108, (short)32768, 8389, 5243, 13108, (short)32768));
    const __m128i v4 = _mm_mulhi_epu16(v3, _mm_setr_epi16(1 << 7, 1 << 11, 1 << 13, (short)(1 << 15),
                                                          1 << 7, 1 << 11, 1 << 13, (short)(1 << 15)));
    // each lane minus ten times the lane before it: the digits
    const __m128i v5 = _mm_slli_epi64(_mm_mullo_epi16(v4, _mm_set1_epi16(10)), 16);
    return _mm_sub_epi16(v4, v5);
}
#endif

/// Writes `hi` and `lo` (each below 10^8) as sixteen ASCII digits at `out`, hi's first: one
/// unaligned 16-byte store on x86-64 (SSE2, which every such CPU has), a loop elsewhere.
/// `FixedDecimalTests` compares it with decimal text; every value below 10^8 in both places was
/// also checked once against `printf("%08u")`, on both paths.
static inline void dbeacon_sixteen_digits(uint32_t hi, uint32_t lo, uint8_t *out) {
#if defined(__SSE2__)
    const __m128i digits = _mm_packus_epi16(dbeacon_eight_digits_sse2(hi), dbeacon_eight_digits_sse2(lo));
    _mm_storeu_si128((__m128i *)out, _mm_add_epi8(digits, _mm_set1_epi8('0')));
#else
    for (int i = 7; i >= 0; i--) { out[i] = (uint8_t)('0' + hi % 10); hi /= 10; }
    for (int i = 15; i >= 8; i--) { out[i] = (uint8_t)('0' + lo % 10); lo /= 10; }
#endif
}

#endif
