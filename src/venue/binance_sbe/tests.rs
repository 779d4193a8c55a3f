use super::*;
use crate::venue::{NAMED_KEY_BYTES, VenueId};
use super::decode::{Decoded, ENTRY_LEN, HEADER_LEN, SNAPSHOT_BLOCK_LEN, decode_depth_diff, decode_depth_snapshot, scaled};
use super::sim::{encode_depth_diff, encode_depth_snapshot};

const GROUP_HEADER_LEN: usize = 4;

fn level(price: &str, amount: &str) -> Level {
    Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    }
}

fn book() -> TopBook {
    let mut book = TopBook {
        venue_sequence: 81_246_000_123,
        ..TopBook::default()
    };
    for (price, amount) in [
        ("35496.06", "0.29859300"),
        ("35496.05", "1.5"),
        ("35490", "0"),
    ] {
        book.bids.push(level(price, amount));
    }
    for (price, amount) in [("35496.07", "0.00012"), ("35500.1", "3")] {
        book.asks.push(level(price, amount));
    }
    book
}

#[test]
fn a_depth20_message_decodes_to_the_book_it_was_written_from() {
    let mut frame = Vec::new();
    encode_depth_snapshot("BTCUSDT", &book(), 1_770_000_000_000_000, &mut frame);
    let mut out = TopBook::default();
    let decoded = decode_depth_snapshot(&frame, 20, &mut out);
    assert_eq!(decoded, Ok(Decoded::Book { symbol: b"BTCUSDT" }));
    assert_eq!(out.venue_sequence, 81_246_000_123);
    let expected = book();
    assert_eq!(
        out.bids.as_slice(),
        &expected.bids.as_slice()[..2],
        "the empty level left out"
    );
    assert_eq!(out.asks.as_slice(), expected.asks.as_slice());
    decode_depth_snapshot(&frame, 1, &mut out).unwrap();
    assert_eq!((out.bids.len(), out.asks.len()), (1, 1));
}

#[test]
fn a_depth_message_decodes_to_the_update_it_was_written_from() {
    let update = BookUpdate {
        first_id: 160,
        last_id: 172,
        bids: vec![level("0.0024", "10"), level("0.0023", "0")],
        asks: vec![level("0.0026", "100")],
        ..BookUpdate::default()
    };
    let mut frame = Vec::new();
    encode_depth_diff("BNBBTC", &update, 0, &mut frame);
    let mut out = BookUpdate::default();
    assert_eq!(
        decode_depth_diff(&frame, 10, &mut out),
        Ok(Decoded::Book { symbol: b"BNBBTC" })
    );
    assert_eq!(out, update);
    assert_eq!(
        decode_depth_diff(&frame, 1, &mut out),
        Err(DecodeError::TooManyLevels(1))
    );
}

/// `mantissa × 10^exponent` exactly, or an error: never rounded.
#[test]
fn mantissas_are_scaled_exactly_or_refused() {
    let value = |mantissa, exponent| scaled(mantissa, exponent, 0);
    let number = |error| Err(DecodeError::Number { at: 0, error });
    assert_eq!(value(3_549_606, -2), Ok("35496.06".parse().unwrap()));
    assert_eq!(value(29_859_300, -8), Ok("0.298593".parse().unwrap()));
    assert_eq!(value(12, 3), Ok("12000".parse().unwrap()));
    assert_eq!(value(1_000, -11), Ok("0.00000001".parse().unwrap()));
    assert_eq!(value(1_001, -11), number(FixedPointError::TooPrecise));
    assert_eq!(value(-1, -8), number(FixedPointError::Negative));
    assert_eq!(value(i64::MAX, 0), number(FixedPointError::Overflow));
    assert_eq!(value(1, 127), number(FixedPointError::Overflow));
    assert_eq!(value(0, -128), Ok(FixedPoint::from_raw(0)));
    assert_eq!(value(5, -128), number(FixedPointError::TooPrecise));
}

/// The header's and the groups' block lengths are honoured: fields a later schema
/// appends are skipped, not misread.
#[test]
fn fields_appended_by_a_later_schema_are_skipped() {
    let mut frame = Vec::new();
    encode_depth_snapshot("BTCUSDT", &book(), 7, &mut frame);
    let mut longer = frame[..HEADER_LEN + SNAPSHOT_BLOCK_LEN].to_vec();
    // Two more bytes in the block, four more in each entry.
    longer[0..2].copy_from_slice(&((SNAPSHOT_BLOCK_LEN + 2) as u16).to_le_bytes());
    longer.extend_from_slice(&[0xAA, 0xBB]);
    let mut at = HEADER_LEN + SNAPSHOT_BLOCK_LEN;
    for _ in 0..2 {
        let count = u16::from_le_bytes([frame[at + 2], frame[at + 3]]);
        longer.extend_from_slice(&((ENTRY_LEN + 4) as u16).to_le_bytes());
        longer.extend_from_slice(&count.to_le_bytes());
        at += GROUP_HEADER_LEN;
        for _ in 0..count {
            longer.extend_from_slice(&frame[at..at + ENTRY_LEN]);
            longer.extend_from_slice(&[0xCC; 4]);
            at += ENTRY_LEN;
        }
    }
    longer.extend_from_slice(&frame[at..]);
    let (mut plain, mut extended) = (TopBook::default(), TopBook::default());
    decode_depth_snapshot(&frame, 20, &mut plain).unwrap();
    assert_eq!(
        decode_depth_snapshot(&longer, 20, &mut extended),
        Ok(Decoded::Book { symbol: b"BTCUSDT" })
    );
    assert_eq!(extended, plain);
}

#[test]
fn every_truncation_of_a_frame_is_refused() {
    let mut snapshot = Vec::new();
    encode_depth_snapshot("BTCUSDT", &book(), 7, &mut snapshot);
    let mut diff = Vec::new();
    let update = BookUpdate {
        first_id: 1,
        last_id: 2,
        bids: vec![level("1", "1")],
        ..BookUpdate::default()
    };
    encode_depth_diff("BTCUSDT", &update, 7, &mut diff);
    for end in 0..snapshot.len() {
        let got = decode_depth_snapshot(&snapshot[..end], 20, &mut TopBook::default());
        assert!(got.is_err(), "{end} bytes: {got:?}");
    }
    for end in 0..diff.len() {
        let got = decode_depth_diff(&diff[..end], 20, &mut BookUpdate::default());
        assert!(got.is_err(), "{end} bytes: {got:?}");
    }
}

/// Malformed headers and groups get typed errors; another template is no error.
#[test]
fn malformed_frames_get_typed_errors() {
    let mut frame = Vec::new();
    encode_depth_snapshot("BTCUSDT", &book(), 7, &mut frame);
    let edited = |at: usize, bytes: &[u8]| {
        let mut edited = frame.clone();
        edited[at..at + bytes.len()].copy_from_slice(bytes);
        edited
    };
    let groups = HEADER_LEN + SNAPSHOT_BLOCK_LEN;
    let cases = [
        (
            edited(4, &2u16.to_le_bytes()),
            DecodeError::UnknownMessage("SBE schema"),
        ),
        (
            edited(0, &17u16.to_le_bytes()),
            DecodeError::Invalid("a block shorter than its template's fields"),
        ),
        (edited(0, &u16::MAX.to_le_bytes()), DecodeError::Truncated),
        (
            edited(groups, &15u16.to_le_bytes()),
            DecodeError::Invalid("a level entry shorter than a price and a quantity"),
        ),
        (
            edited(groups + 2, &u16::MAX.to_le_bytes()),
            DecodeError::Truncated,
        ),
        (
            [&frame[..frame.len() - 8], &[0]].concat(),
            DecodeError::Invalid("an empty symbol"),
        ),
        (
            [frame.clone(), vec![0]].concat(),
            DecodeError::TrailingBytes { at: frame.len() },
        ),
        (
            edited(groups + GROUP_HEADER_LEN, &(-5i64).to_le_bytes()),
            DecodeError::Number {
                at: groups + GROUP_HEADER_LEN,
                error: FixedPointError::Negative,
            },
        ),
        (
            edited(HEADER_LEN + 8, &(-1i64).to_le_bytes()),
            DecodeError::IntegerOverflow { at: HEADER_LEN + 8 },
        ),
    ];
    for (bytes, expected) in cases {
        assert_eq!(
            decode_depth_snapshot(&bytes, 20, &mut TopBook::default()),
            Err(expected)
        );
    }
    let unsorted = {
        let mut book = book();
        book.asks.clear();
        book.asks.push(level("35500.1", "3"));
        book.asks.push(level("35496.07", "1"));
        let mut frame = Vec::new();
        encode_depth_snapshot("BTCUSDT", &book, 7, &mut frame);
        frame
    };
    assert_eq!(
        decode_depth_snapshot(&unsorted, 20, &mut TopBook::default()),
        Err(DecodeError::Unsorted(Side::Ask))
    );
    let trade = edited(2, &10000u16.to_le_bytes());
    assert_eq!(
        decode_depth_snapshot(&trade, 20, &mut TopBook::default()),
        Ok(Decoded::Other { template_id: 10000 })
    );
}

/// A book message names its symbol; the connection finds the stream it subscribed by it,
/// letter case aside, and no other (the depth a stream's name asks is not in the key).
#[test]
fn a_book_message_finds_its_stream_by_the_symbol_it_names() {
    let mut buffer = [0; NAMED_KEY_BYTES];
    for stream in ["btcusdt@depth20", "btcusdt@depth", "BtcUsdt@depth20"] {
        let key = VenueId::BinanceSbe.stream_key(stream);
        assert_eq!(*VenueId::BinanceSbe.named_key(b"BTCUSDT", &mut buffer), *key);
        assert_eq!(*VenueId::BinanceSbe.named_key(b"btcusdt", &mut buffer), *key);
        assert_ne!(*VenueId::BinanceSbe.named_key(b"BTCUSD", &mut buffer), *key);
        assert_ne!(*VenueId::BinanceSbe.named_key(b"BTCUSDTX", &mut buffer), *key);
    }
    // The longest symbol a message can carry (its length is a byte).
    let long = [b'a'; 255];
    let stream = format!("{}@depth", std::str::from_utf8(&long).unwrap());
    let key = VenueId::BinanceSbe.stream_key(&stream);
    assert_eq!(*VenueId::BinanceSbe.named_key(&long, &mut buffer), *key);
}
