//! What the venues' proptests build their frames with.

use mergebook::fixed::FixedPoint;

/// `members` as a JSON object in an order drawn from `seed`, with a space after each
/// separator or none: a layout JSON allows and a venue might send.
pub fn object(members: &mut [String], seed: u64, spaced: bool) -> String {
    let mut rng = mergebook::rng::Rng::new(seed);
    rng.shuffle(members);
    let separator = if spaced { ", " } else { "," };
    format!("{{{}}}", members.join(separator))
}

/// A side of `[price, size]` string pairs, from raw `FixedPoint` units, with a space after
/// each separator or none.
pub fn pair_side(levels: &[(u64, u64)], spaced: bool) -> String {
    let separator = if spaced { ", " } else { "," };
    let text: Vec<String> = levels
        .iter()
        .map(|&(price, size)| {
            let (price, size) = (FixedPoint::from_raw(price), FixedPoint::from_raw(size));
            format!(r#"["{price}"{separator}"{size}"]"#)
        })
        .collect();
    format!("[{}]", text.join(separator))
}
