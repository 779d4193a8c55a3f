//! FixedPoint::parse never panics, and whatever it accepts formats back to the same value.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mergebook::fixed::FixedPoint;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = FixedPoint::parse(data) {
        assert_eq!(value.to_string().parse::<FixedPoint>(), Ok(value));
    }
    // The in-frame fast path agrees with the exact parser wherever it answers.
    if let Some((value, len)) = FixedPoint::parse_quoted_fast(data) {
        assert_eq!(FixedPoint::parse(&data[..len]), Ok(value));
    }
});
