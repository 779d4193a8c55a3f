//! The fast side skip with AVX2 (see `Walker::skip_rest_of_array` for what it checks and
//! why): one pass that finds the first `]]` and checks the bytes before it, where the
//! portable path ([`crate::json::side_skip::portable_rest_of_side_len`]) makes two, memmem's search and
//! then the check.
//!
//! Why by hand: the skip is the widest loop of the hot path (a Bitstamp frame skips about
//! 4.9 KB), and with memmem every skipped byte was loaded and compared twice. Here each
//! 64-byte step (two registers, so the loop's own work and the `]]` test are paid once
//! per 64 bytes) does, per register, one compare for `]` (as a bit mask: `]]` across
//! steps, and the count of `]`) and one byte shuffle and compare that classify `[`, `"`,
//! `:` and `\` together; a second shuffle gives what each adds to its byte lane's count
//! of `[`, with a mark for `:` and `\` that saturating adds keep, and the classified
//! bytes' parity per lane gives the quotes' parity. The step that holds the `]]` counts
//! only its bytes up to it. A tail shorter than a step is read
//! as the input's last 64 bytes, the ones already counted masked off, rather than copied
//! into a padded step: a Bitstamp frame's asks end about 50 bytes before the frame's end,
//! often in the tail, and the copy's narrow stores cannot be forwarded to the step's
//! 32-byte loads, which then wait for them to reach the cache. The intrinsics come from
//! `safe_arch`, as in `avx2_level`: no `unsafe` here.

use super::avx2_level::{byte_equal, splat};
use safe_arch::{
    add_saturating_u8_m256i, cmp_eq_mask_i8_m256i, cmp_gt_mask_i8_m256i, m256i, move_mask_i8_m256i,
    shuffle_av_i8z_half_m256i, sum_of_u8_abs_diff_m256i,
};

/// Bytes a register holds.
const LANES: usize = 32;
/// Bytes a step reads: two registers.
const STEP: usize = 2 * LANES;
/// Steps between folds of the lane counts: a step adds at most 2 to a lane's opens (one
/// per register), so within this many a lane stays below 128, the forbidden mark.
const FOLD_STEPS: usize = i8::MAX as usize / 2;

/// For `vpshufb`, indexed by a byte's low nibble: the one counted byte with that nibble —
/// `"` (0x22) at 0x2, `:` (0x3A) at 0xA, `[` (0x5B) at 0xB, `\` (0x5C) at 0xC — and elsewhere
/// a byte whose high bit is set (`0x80 | index`), which no byte the shuffle looks up equals
/// (a byte with its high bit set looks up zero). So a byte equals its lookup exactly when
/// it is one of the four: one lookup and one compare classify them all.
const COUNTED_BY_LOW_NIBBLE: [u8; LANES] = both_halves([
    0x80, 0x81, b'"', 0x83, 0x84, 0x85, 0x86, 0x87, //
    0x88, 0x89, b':', b'[', b'\\', 0x8D, 0x8E, 0x8F,
]);

/// What each counted byte adds to its lane's opens, by low nibble: `[` 1, `"` 0, and
/// `:` or `\` the forbidden mark, 0x80, which saturating adds keep (a lane's opens alone
/// stay below it).
const OPENS_BY_LOW_NIBBLE: [u8; LANES] = both_halves([
    0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0x80, 1, 0x80, 0, 0, 0,
]);

/// A `vpshufb` table: the same 16 bytes in each 128-bit half.
const fn both_halves(half: [u8; 16]) -> [u8; LANES] {
    let mut table = [0; LANES];
    let mut index = 0;
    while index < LANES {
        table[index] = half[index % 16];
        index += 1;
    }
    table
}

/// The counted bytes: `[` per lane (with the forbidden mark), `]` in all, the parity of
/// `[` and `"` together per lane, and whether `:` or `\` appeared.
struct Counts {
    /// Per lane, saturating: the `[` seen since the last fold, at least 0x80 once a `:` or
    /// `\` was; folded into `opens` and `forbidden` before the opens alone could reach it.
    lane_opens: m256i,
    opens: u32,
    /// From the steps' `]` bits: `]` is found for the side's end anyway.
    closes: u32,
    /// 0x00 or 0xFF per lane: the parity of that lane's counted bytes. Without a forbidden
    /// one, they are the `[` and the `"`, so with `opens` it gives the quotes' parity.
    counted_parity: m256i,
    forbidden: bool,
}

/// A step's two registers and the bits of their `]` bytes.
struct Step {
    low: m256i,
    high: m256i,
    close_bits: u64,
}

impl Step {
    #[inline(always)]
    fn load(bytes: &[u8; STEP]) -> Step {
        let (low, high) = bytes.split_at(LANES);
        let low = m256i::from(*low.first_chunk::<LANES>().expect("half a step"));
        let high = m256i::from(*high.first_chunk::<LANES>().expect("half a step"));
        let close_bits = u64::from(move_mask_i8_m256i(byte_equal(low, b']')) as u32)
            | u64::from(move_mask_i8_m256i(byte_equal(high, b']')) as u32) << LANES;
        Step {
            low,
            high,
            close_bits,
        }
    }
}

impl Counts {
    /// Counts one step's bytes, or, if a `]]` ends in it, its bytes up to that end and
    /// returns the end's index in the step. `close_before`: whether the previous step ended
    /// with `]` (bit 0), updated for the next.
    #[inline(always)]
    fn step(&mut self, bytes: &[u8; STEP], close_before: &mut u64) -> Option<usize> {
        let step = Step::load(bytes);
        let side_ends = step.close_bits & (step.close_bits << 1 | *close_before);
        if side_ends == 0 {
            self.add(step.low, step.high);
            self.closes += step.close_bits.count_ones();
            *close_before = step.close_bits >> (STEP - 1);
            return None;
        }
        // Bytes 0..=last, where `last` is the second `]` of the first `]]`.
        let last = side_ends.trailing_zeros() as usize;
        self.add_between(&step, 0, last + 1);
        Some(last)
    }

    /// The input's last `STEP` bytes, of which the first `counted` (1..STEP) were counted
    /// by the last whole step: as [`Counts::step`] for the bytes after them, if a `]]` ends
    /// there. No `close_before`: a `]]` whose first `]` was counted lies inside this step.
    #[inline(always)]
    fn last_step(&mut self, bytes: &[u8; STEP], counted: usize) -> Option<usize> {
        let step = Step::load(bytes);
        let side_ends = step.close_bits & step.close_bits << 1 & u64::MAX << counted;
        if side_ends == 0 {
            return None;
        }
        let last = side_ends.trailing_zeros() as usize;
        self.add_between(&step, counted, last + 1);
        Some(last)
    }

    /// Counts the step's bytes `from..to` only (`from < to <= STEP`).
    #[inline(always)]
    fn add_between(&mut self, step: &Step, from: usize, to: usize) {
        let lanes = m256i::from(std::array::from_fn::<i8, LANES, _>(|lane| lane as i8));
        // Lanes below `bound` (at most 32: no signed overflow).
        let below = |bound: usize| cmp_gt_mask_i8_m256i(splat(bound as u8), lanes);
        let keep_low = below(to.min(LANES)) & !below(from.min(LANES));
        let keep_high = below(to.saturating_sub(LANES)) & !below(from.saturating_sub(LANES));
        // A cleared byte (zero) is none of the counted ones.
        self.add(step.low & keep_low, step.high & keep_high);
        let kept_bits = (u64::MAX >> (STEP - to)) & (u64::MAX << from);
        self.closes += (step.close_bits & kept_bits).count_ones();
    }

    /// Counts a step's two registers, summed first: each lane's count then grows by one
    /// dependent add a step.
    #[inline(always)]
    fn add(&mut self, low: m256i, high: m256i) {
        let (low_counted, low_opens) = classify(low);
        let (high_counted, high_opens) = classify(high);
        let opens = add_saturating_u8_m256i(low_opens, high_opens);
        self.lane_opens = add_saturating_u8_m256i(self.lane_opens, opens);
        self.counted_parity ^= low_counted ^ high_counted;
    }

    /// Adds the lanes' opens to `opens` (`vpsadbw` sums them in four 64-bit groups of
    /// eight), and notes a forbidden mark.
    fn fold(&mut self) {
        self.forbidden |= move_mask_i8_m256i(self.lane_opens) != 0;
        let groups: [u64; 4] = sum_of_u8_abs_diff_m256i(self.lane_opens, m256i::default()).into();
        self.opens = self.opens.wrapping_add(groups.iter().sum::<u64>() as u32);
        self.lane_opens = m256i::default();
    }

    /// Whether the counted bytes can be the rest of a side: one more `]` than `[`, quotes
    /// that pair up, nothing forbidden.
    fn rest_of_side(mut self) -> bool {
        self.fold();
        let counted = (move_mask_i8_m256i(self.counted_parity) as u32).count_ones();
        // Only without a forbidden byte are the counted ones the opens and the quotes.
        !self.forbidden
            && self.opens.wrapping_add(1) == self.closes
            && (counted ^ self.opens).is_multiple_of(2)
    }
}

/// A register's counted bytes (0xFF where one is) and what each adds to its lane's opens.
#[inline(always)]
fn classify(bytes: m256i) -> (m256i, m256i) {
    let lookup = shuffle_av_i8z_half_m256i(m256i::from(COUNTED_BY_LOW_NIBBLE), bytes);
    let counted = cmp_eq_mask_i8_m256i(lookup, bytes);
    let opens = shuffle_av_i8z_half_m256i(m256i::from(OPENS_BY_LOW_NIBBLE), bytes) & counted;
    (counted, opens)
}

/// The length of `rest` up to and including its first `]]`, if the bytes before it can
/// only be the rest of a side (the same answer as the portable path's).
pub(in crate::json) fn rest_of_side_len(rest: &[u8]) -> Option<usize> {
    let mut counts = Counts {
        lane_opens: m256i::default(),
        opens: 0,
        closes: 0,
        counted_parity: m256i::default(),
        forbidden: false,
    };
    let mut close_before = 0u64;
    let (steps, tail) = rest.as_chunks::<STEP>();
    for block in steps.chunks(FOLD_STEPS) {
        for step in block {
            if let Some(last) = counts.step(step, &mut close_before) {
                // The step's offset in `rest`, only needed here: no counter in the loop.
                let offset = step.as_ptr().addr() - rest.as_ptr().addr();
                return counts.rest_of_side().then_some(offset + last + 1);
            }
        }
        counts.fold();
    }
    if tail.is_empty() {
        return None;
    }
    // The tail, read as the input's last 64 bytes (no copy) when there are that many.
    if let Some(last_step) = rest.last_chunk::<STEP>() {
        let last = counts.last_step(last_step, STEP - tail.len())?;
        return counts
            .rest_of_side()
            .then_some(rest.len() - STEP + last + 1);
    }
    // Shorter than a step: zero-padded (a zero byte is none of the counted ones).
    let mut padded = [0u8; STEP];
    padded[..tail.len()].copy_from_slice(tail);
    let last = counts.step(&padded, &mut close_before)?;
    counts.rest_of_side().then_some(last + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pieces of a side's tail: mostly levels and separators, sometimes a byte that the
    /// check must notice (an unbalanced bracket, a lone quote, `:`, `\`).
    fn piece() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            8 => Just(r#"["9328.28","0.05925332"]"#),
            8 => Just(","),
            2 => Just(" "),
            1 => Just("]"),
            1 => Just("["),
            1 => Just("\""),
            1 => Just(":"),
            1 => Just("\\"),
            1 => Just("x"),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// On any bytes, the same answer as the two-pass skip: the same end, or none.
        #[test]
        fn agrees_with_the_two_pass_skip(
            pieces in prop::collection::vec(piece(), 0..400),
            shift in 0usize..STEP,
            side_end in prop_oneof![Just(""), Just("]]")],
            after in prop::collection::vec(piece(), 0..4),
        ) {
            // A shifted start moves every `]]` across the step boundaries, and the bytes
            // after it (as after a side in a frame) put it in the tail or a whole step.
            let text = " ".repeat(shift) + &pieces.concat() + side_end + &after.concat();
            prop_assert_eq!(
                rest_of_side_len(text.as_bytes()),
                crate::json::side_skip::portable_rest_of_side_len(text.as_bytes()),
                "{}", text
            );
        }
    }

    /// A `:` or `\` is refused whatever else is counted: where the rest balances without
    /// it, and where the rest would pass if its mark were read as a count of `[` (64 of
    /// them, were the mark 0x40, against 65 closes; one quote makes the counted bytes'
    /// parity even).
    #[test]
    fn a_forbidden_byte_is_refused_whatever_the_counts() {
        for forbidden in [":", "\\"] {
            let balanced = forbidden.to_owned() + r#"["1","2"]]"#;
            assert_eq!(rest_of_side_len(balanced.as_bytes()), None, "{balanced}");
            let balanced_by_mark = forbidden.to_owned() + "\"" + &"],".repeat(63) + "]]";
            assert_eq!(
                rest_of_side_len(balanced_by_mark.as_bytes()),
                None,
                "{forbidden}"
            );
        }
    }

    /// A `]]` split across two registers or two steps, and a side longer than one lane
    /// fold.
    #[test]
    fn finds_the_end_across_steps_and_folds() {
        let fold = FOLD_STEPS * STEP;
        for before in [
            30,
            31,
            32,
            33,
            62,
            63,
            64,
            65,
            fold - 1,
            fold,
            fold + STEP + 7,
        ] {
            let text = "[".to_owned() + &" ".repeat(before - 1) + "]]" + r#","x":1"#;
            // One `[` and two `]`: balance −1, the side's closing bracket.
            assert_eq!(
                rest_of_side_len(text.as_bytes()),
                Some(before + 2),
                "{before}"
            );
        }
        // 400 registers each with a `[` in lane 0 and its `]` in another lane: lane 0
        // alone counts past an `i8` unless folded in time.
        let mut text = String::new();
        for register in 0..400 {
            let close_lane = 1 + register % 30;
            text += &format!(
                "[{}]{}",
                " ".repeat(close_lane - 1),
                " ".repeat(LANES - 1 - close_lane)
            );
        }
        text += "]]";
        assert_eq!(text.len(), 400 * LANES + 2);
        assert_eq!(rest_of_side_len(text.as_bytes()), None, "balance −2");
        text.truncate(400 * LANES);
        text += r#",["1","2"]]"#;
        assert_eq!(
            rest_of_side_len(text.as_bytes()),
            Some(text.len()),
            "balance −1"
        );
    }
}
