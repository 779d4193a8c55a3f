//! Diff mode: the diff and snapshot decoders of every venue never panic, and whatever they
//! accept keeps a full-depth book sorted, without zero amounts, and never crossed when
//! published (the sync state machine discards a crossed book).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mergebook::book::{BookUpdate, Side};
use mergebook::sync::BookSync;
use mergebook::venue::{Message, VenueId};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else { return };
    let venue = VenueId::ALL[usize::from(selector) % VenueId::ALL.len()];
    let mut sync = BookSync::new(venue.sequence_rule(), 64, 16);
    let mut update = BookUpdate::default();
    // Frames separated by newlines; a line starting with `S` is a snapshot body.
    for line in input.split(|&byte| byte == b'\n') {
        if let Some(body) = line.strip_prefix(b"S") {
            if venue.decode_snapshot(body, 64, &mut update).is_ok() {
                sync.on_snapshot(&update);
            }
        } else if let Ok(Message::Book { .. }) = venue.decode_diff(line, 64, &mut update) {
            sync.on_update(&update);
        }
        if sync.is_synced() {
            assert!(!sync.book.is_crossed());
            for side in [Side::Bid, Side::Ask] {
                let levels: Vec<_> = sync.book.levels(side).collect();
                assert!(levels.len() <= 64);
                assert!(levels.windows(2).all(|pair| side.is_better(pair[0].price, pair[1].price)));
                assert!(levels.iter().all(|level| !level.amount.is_zero()));
            }
        }
    }
});
