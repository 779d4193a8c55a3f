//! The Bitstamp decoder never panics; a book it accepts is sorted best first with no zero
//! amounts, at any depth.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mergebook::book::{Side, TopBook};
use mergebook::venue::{Message, VenueId};

fuzz_target!(|data: &[u8]| {
    let Some((&depth, frame)) = data.split_first() else { return };
    let mut book = TopBook::default();
    if let Ok(Message::Book { .. }) = VenueId::Bitstamp.decode(frame, usize::from(depth), &mut book) {
        for side in [Side::Bid, Side::Ask] {
            let levels = book.side(side).as_slice();
            assert!(levels.windows(2).all(|pair| side.is_better(pair[0].price, pair[1].price)));
            assert!(levels.iter().all(|level| !level.amount.is_zero()));
        }
    }
});
