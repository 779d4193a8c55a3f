//! The portable side skip in two passes, and its check: the skip of AVX2-less builds, and
//! the reference the one-pass AVX2 skip (`simd/avx2_side_skip.rs`) is tested against.

use memchr::memmem;
use std::sync::LazyLock;

/// The fast side skip in two passes: memmem finds the `]]`, [`is_rest_of_side`] checks the
/// bytes before it. Without AVX2 it is the skip; with it, the reference its tests compare
/// the one-pass skip with.
#[cfg_attr(
    all(target_arch = "x86_64", target_feature = "avx2", not(test)),
    expect(dead_code)
)]
pub(super) fn portable_rest_of_side_len(rest: &[u8]) -> Option<usize> {
    static SIDE_END: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"]]"));
    let len = SIDE_END.find(rest)? + 2;
    is_rest_of_side(&rest[..len]).then_some(len)
}

/// The check behind the two-pass side skip: brackets balance to one more close than opens,
/// quotes pair up, no `:` or `\\`.
fn is_rest_of_side(region: &[u8]) -> bool {
    region_shape(region, [b'[', b']'], [b':', b'\\']) == (-1, true, false)
}

/// The length of the rest of a side of flat objects up to and including its `]`
/// (`{"px":"1","sz":"2","n":1},{…}]`): memchr finds the first `]`, and the bytes before it
/// must be flat objects: braces balance, quotes pair up, nothing is escaped (so the `]` is
/// not inside a string) and no `[` (no nested array, whose `]` it would be). `None`
/// otherwise.
pub(super) fn rest_of_object_side_len(rest: &[u8]) -> Option<usize> {
    let len = memchr::memchr(b']', rest)?;
    let shape = region_shape(&rest[..len], [b'{', b'}'], [b'[', b'\\']);
    (shape == (0, true, false)).then_some(len + 1)
}

/// What the side skips check of the bytes they skip: the count of `pair`'s opening byte
/// less its closing one, whether the quotes pair up, and whether a `forbidden` byte occurs.
/// Counts in 32 byte lanes, which the compiler keeps in one vector register each (a compare
/// and an add per counter per 32 bytes) and reduces once per 127 steps (before an `i8`
/// lane can overflow) with word arithmetic. Written by hand because the skip is the widest
/// loop of the hot path (a Bitstamp frame skips about 4.9 KB;
/// `scripts/bench-instructions` counts it in `bitstamp_decode_100`); in line, so that each
/// caller's bytes are constants.
#[inline(always)]
fn region_shape(region: &[u8], pair: [u8; 2], forbidden: [u8; 2]) -> (i32, bool, bool) {
    let [open, close] = pair;
    let mut balance = 0i32;
    let mut lane_quotes = [0u8; LANES]; // parity of '"'
    let mut lane_forbidden = [0u8; LANES];
    let (steps, tail) = region.as_chunks::<LANES>();
    for block in steps.chunks(i8::MAX as usize) {
        let mut lane_balance = [0i8; LANES];
        for step in block {
            for lane in 0..LANES {
                let byte = step[lane];
                lane_balance[lane] = lane_balance[lane]
                    .wrapping_add(i8::from(byte == open))
                    .wrapping_sub(i8::from(byte == close));
                lane_quotes[lane] ^= u8::from(byte == b'"');
                lane_forbidden[lane] |=
                    u8::from(byte == forbidden[0]) | u8::from(byte == forbidden[1]);
            }
        }
        balance += lane_sum(&lane_balance);
    }
    let mut quotes = lane_words(&lane_quotes)
        .iter()
        .fold(0, |parity, word| parity ^ word);
    let mut found = lane_words(&lane_forbidden).iter().any(|&word| word != 0);
    for &byte in tail {
        balance += i32::from(byte == open) - i32::from(byte == close);
        quotes ^= u64::from(byte == b'"');
        found |= forbidden.contains(&byte);
    }
    (balance, quotes.count_ones() % 2 == 0, found)
}

/// Byte lanes of the side skip: one AVX2 register.
const LANES: usize = 32;

/// The lanes as four little-endian words (lane 0 lowest).
#[inline(always)]
fn lane_words(lanes: &[u8; LANES]) -> [u64; 4] {
    std::array::from_fn(|word| {
        u64::from_le_bytes(*lanes[8 * word..].first_chunk().expect("8 of 32 lanes"))
    })
}

/// The sum of the signed lanes: biased to unsigned, widened in pairs to 16 bits, summed.
#[inline(always)]
fn lane_sum(lanes: &[i8; LANES]) -> i32 {
    const LOW_BYTES: u64 = 0x00FF_00FF_00FF_00FF;
    let biased = lanes.map(|lane| (lane as u8) ^ 0x80); // lane + 128
    let total: u64 = lane_words(&biased)
        .iter()
        .map(|&word| {
            let pairs = (word & LOW_BYTES) + ((word >> 8) & LOW_BYTES); // 4 × ≤ 510
            pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48
        })
        .sum();
    total as i32 - 128 * LANES as i32
}
