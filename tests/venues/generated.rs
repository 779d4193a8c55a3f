//! What the venues' proptests build their frames with.

/// `members` as a JSON object in an order drawn from `seed`, with a space after each
/// separator or none: a layout JSON allows and a venue might send.
pub fn object(members: &mut [String], seed: u64, spaced: bool) -> String {
    let mut rng = mergebook::rng::Rng::new(seed);
    rng.shuffle(members);
    let separator = if spaced { ", " } else { "," };
    format!("{{{}}}", members.join(separator))
}
