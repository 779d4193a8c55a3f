//! The fast side skip with AVX2 (see `Walker::skip_rest_of_array` for what it checks and
//! why): one pass that finds the first `]]` and checks the bytes before it, where the
//! portable path ([`super::portable_rest_of_side_len`]) makes two, memmem's search and
//! then the check.
//!
//! Why by hand: the skip is the widest loop of the hot path (a Bitstamp frame skips about
//! 4.9 KB), and with memmem every skipped byte was loaded and compared twice. Here each
//! 64-byte step (two registers, so the loop's own work and the `]]` test are paid once
//! per 64 bytes) does four compares and a lookup per register: `]` (kept as a bit mask too,
//! to find `]]` across steps), `[`, `"`, and `:` or `\` in one byte shuffle; their results
//! add up in byte lanes (brackets' balance, quotes' parity, forbidden bytes seen). The step
//! that holds the `]]` counts only its bytes up to it. A tail shorter than a step is read
//! as the input's last 64 bytes, the ones already counted masked off, rather than copied
//! into a padded step: a Bitstamp frame's asks end about 50 bytes before the frame's end,
//! often in the tail, and the copy's narrow stores cannot be forwarded to the step's
//! 32-byte loads, which then wait for them to reach the cache. The intrinsics come from
//! `safe_arch`, as in `simd_level`: no `unsafe` here.

use super::simd_level::{byte_equal, splat};
use safe_arch::{
    add_i8_m256i, cmp_eq_mask_i8_m256i, cmp_gt_mask_i8_m256i, m256i, move_mask_i8_m256i,
    shuffle_av_i8z_half_m256i, sub_i8_m256i, sum_of_u8_abs_diff_m256i,
};

/// Bytes a register holds.
const LANES: usize = 32;
/// Bytes a step reads: two registers.
const STEP: usize = 2 * LANES;
/// Steps between folds of the lane balance: a step moves a lane by at most 2 (one per
/// register), so an `i8` lane cannot overflow within this many.
const FOLD_STEPS: usize = i8::MAX as usize / 2;

/// For `vpshufb`, indexed by a byte's low nibble: `:` (0x3A) at 0xA, `\` (0x5C) at 0xC,
/// and elsewhere a byte whose high bit is set (`0x80 | index`), which no byte the shuffle
/// looks up equals (a byte with its high bit set looks up zero). So a byte equals its
/// lookup exactly when it is `:` or `\`.
const FORBIDDEN_BY_LOW_NIBBLE: [u8; LANES] = {
    let mut table = [0; LANES];
    let mut index = 0;
    while index < LANES {
        table[index] = match index % 16 {
            0xA => b':',
            0xC => b'\\',
            nibble => 0x80 | nibble as u8,
        };
        index += 1;
    }
    table
};

/// Byte lanes counting `[` minus `]`, the parity of `"`, and whether `:` or `\` appeared.
struct Counts {
    /// Signed per lane; folded into `balance` before a lane can overflow.
    lane_balance: m256i,
    balance: i32,
    /// 0x00 or 0xFF per lane: the parity of that lane's quotes.
    quote_parity: m256i,
    forbidden: m256i,
}

/// A step's two registers and their `]` masks, as vector masks and as bits.
struct Step {
    low: m256i,
    high: m256i,
    closes_low: m256i,
    closes_high: m256i,
    close_bits: u64,
}

impl Step {
    #[inline(always)]
    fn load(bytes: &[u8; STEP]) -> Step {
        let (low, high) = bytes.split_at(LANES);
        let low = m256i::from(*low.first_chunk::<LANES>().expect("half a step"));
        let high = m256i::from(*high.first_chunk::<LANES>().expect("half a step"));
        let closes_low = byte_equal(low, b']');
        let closes_high = byte_equal(high, b']');
        let close_bits = u64::from(move_mask_i8_m256i(closes_low) as u32)
            | u64::from(move_mask_i8_m256i(closes_high) as u32) << LANES;
        Step {
            low,
            high,
            closes_low,
            closes_high,
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
            self.add(step.low, step.closes_low);
            self.add(step.high, step.closes_high);
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
        self.add(step.low & keep_low, step.closes_low & keep_low);
        self.add(step.high & keep_high, step.closes_high & keep_high);
    }

    #[inline(always)]
    fn add(&mut self, bytes: m256i, closes: m256i) {
        // A compare gives -1 where true: subtracting the opens adds them.
        let opens = byte_equal(bytes, b'[');
        self.lane_balance = add_i8_m256i(sub_i8_m256i(self.lane_balance, opens), closes);
        self.quote_parity ^= byte_equal(bytes, b'"');
        let lookup = shuffle_av_i8z_half_m256i(m256i::from(FORBIDDEN_BY_LOW_NIBBLE), bytes);
        self.forbidden |= cmp_eq_mask_i8_m256i(lookup, bytes);
    }

    /// Adds the lanes to `balance`: biased to unsigned (`lane + 128`), then summed by
    /// `vpsadbw` in four 64-bit groups of eight, which cannot overflow.
    fn fold(&mut self) {
        let biased = self.lane_balance ^ splat(0x80);
        let groups: [u64; 4] = sum_of_u8_abs_diff_m256i(biased, m256i::default()).into();
        let total: u64 = groups.iter().sum();
        self.balance += total as i32 - 128 * LANES as i32;
        self.lane_balance = m256i::default();
    }

    /// Whether the counted bytes can be the rest of a side: brackets balance to one more
    /// close than opens, quotes pair up, nothing forbidden.
    fn rest_of_side(mut self) -> bool {
        self.fold();
        let quotes = (move_mask_i8_m256i(self.quote_parity) as u32).count_ones();
        self.balance == -1 && quotes.is_multiple_of(2) && move_mask_i8_m256i(self.forbidden) == 0
    }
}

/// The length of `rest` up to and including its first `]]`, if the bytes before it can
/// only be the rest of a side (the same answer as the portable path's).
pub(super) fn rest_of_side_len(rest: &[u8]) -> Option<usize> {
    let mut counts = Counts {
        lane_balance: m256i::default(),
        balance: 0,
        quote_parity: m256i::default(),
        forbidden: m256i::default(),
    };
    let mut close_before = 0u64;
    let mut offset = 0;
    let (steps, tail) = rest.as_chunks::<STEP>();
    for block in steps.chunks(FOLD_STEPS) {
        for step in block {
            if let Some(last) = counts.step(step, &mut close_before) {
                return counts.rest_of_side().then_some(offset + last + 1);
            }
            offset += STEP;
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
    counts.rest_of_side().then_some(offset + last + 1)
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
                crate::walker::portable_rest_of_side_len(text.as_bytes()),
                "{}", text
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
