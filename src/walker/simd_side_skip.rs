//! The fast side skip with AVX2 (see `Walker::skip_rest_of_array` for what it checks and
//! why): one pass that finds the first `]]` and checks the bytes before it, where the
//! portable path ([`super::portable_rest_of_side_len`]) makes two, memmem's search and
//! then the check.
//!
//! Why by hand: the skip is the widest loop of the hot path (a Bitstamp frame skips about
//! 4.9 KB), and with memmem every skipped byte was loaded and compared twice. Here each
//! 32-byte step does five compares: `]` (kept as a bit mask too, to find `]]` across steps),
//! `[`, `"`, `:` and `\`, whose results add up in byte lanes (brackets' balance, quotes'
//! parity, forbidden bytes seen). The step that holds the `]]` counts only its bytes up
//! to it. The intrinsics come from `safe_arch`, as in `simd_level`: no `unsafe` here.

use super::simd_level::{byte_equal, splat};
use safe_arch::{add_i8_m256i, cmp_gt_mask_i8_m256i, m256i, move_mask_i8_m256i, sub_i8_m256i};

const STEP: usize = 32;

/// Byte lanes counting `[` minus `]`, the parity of `"`, and whether `:` or `\` appeared.
struct Counts {
    /// Signed per lane; folded into `balance` before a lane can overflow.
    lane_balance: m256i,
    balance: i32,
    /// 0x00 or 0xFF per lane: the parity of that lane's quotes.
    quote_parity: m256i,
    forbidden: m256i,
}

impl Counts {
    /// Counts one step's bytes, or, if a `]]` ends in it, its bytes up to that end and
    /// returns the end's index in the step. `close_before`: whether the previous step ended
    /// with `]` (bit 0), updated for the next.
    #[inline(always)]
    fn step(&mut self, step: &[u8; STEP], close_before: &mut u32) -> Option<usize> {
        let bytes = m256i::from(*step);
        let closes = byte_equal(bytes, b']');
        let close_bits = move_mask_i8_m256i(closes) as u32;
        let side_ends = close_bits & (close_bits << 1 | *close_before);
        if side_ends == 0 {
            self.add(bytes, closes);
            *close_before = close_bits >> 31;
            return None;
        }
        // Bytes 0..=last, where `last` is the second `]` of the first `]]`.
        let last = side_ends.trailing_zeros() as usize;
        let lanes = m256i::from(std::array::from_fn::<i8, STEP, _>(|lane| lane as i8));
        let keep = cmp_gt_mask_i8_m256i(splat(last as u8 + 1), lanes);
        self.add(bytes & keep, closes & keep);
        Some(last)
    }

    #[inline(always)]
    fn add(&mut self, bytes: m256i, closes: m256i) {
        // A compare gives -1 where true: subtracting the opens adds them.
        let opens = byte_equal(bytes, b'[');
        self.lane_balance = add_i8_m256i(sub_i8_m256i(self.lane_balance, opens), closes);
        self.quote_parity ^= byte_equal(bytes, b'"');
        self.forbidden |= byte_equal(bytes, b':') | byte_equal(bytes, b'\\');
    }

    fn fold(&mut self) {
        self.balance += super::lane_sum(&self.lane_balance.into());
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
    let mut close_before = 0u32;
    let mut offset = 0;
    let (steps, tail) = rest.as_chunks::<STEP>();
    // Folded every 127 steps, before a signed byte lane can overflow.
    for block in steps.chunks(i8::MAX as usize) {
        for step in block {
            if let Some(last) = counts.step(step, &mut close_before) {
                return counts.rest_of_side().then_some(offset + last + 1);
            }
            offset += STEP;
        }
        counts.fold();
    }
    // The tail, zero-padded (a zero byte is none of the counted ones), as a last step.
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
        ) {
            // A shifted start moves every `]]` across the step boundaries.
            let text = " ".repeat(shift) + &pieces.concat() + "]]";
            prop_assert_eq!(
                rest_of_side_len(text.as_bytes()),
                crate::walker::portable_rest_of_side_len(text.as_bytes()),
                "{}", text
            );
        }
    }

    /// A `]]` split across two steps, and a side longer than one lane fold (127 steps).
    #[test]
    fn finds_the_end_across_steps_and_folds() {
        for before in [30, 31, 32, 33, 127 * STEP - 1, 127 * STEP, 130 * STEP + 7] {
            let text = "[".to_owned() + &" ".repeat(before - 1) + "]]" + r#","x":1"#;
            // One `[` and two `]`: balance −1, the side's closing bracket.
            assert_eq!(
                rest_of_side_len(text.as_bytes()),
                Some(before + 2),
                "{before}"
            );
        }
        // 200 steps each with a `[` in lane 0 and its `]` in another lane: lane 0 alone
        // counts past an `i8` unless folded in time.
        let mut text = String::new();
        for step in 0..200 {
            let close_lane = 1 + step % 30;
            text += &format!(
                "[{}]{}",
                " ".repeat(close_lane - 1),
                " ".repeat(31 - close_lane)
            );
        }
        text += "]]";
        assert_eq!(text.len(), 200 * STEP + 2);
        assert_eq!(rest_of_side_len(text.as_bytes()), None, "balance −2");
        text.truncate(200 * STEP);
        text += r#",["1","2"]]"#;
        assert_eq!(
            rest_of_side_len(text.as_bytes()),
            Some(text.len()),
            "balance −1"
        );
    }
}
