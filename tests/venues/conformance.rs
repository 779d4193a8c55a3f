//! What every venue's decoders pass, run over one row a venue: every strict prefix of every
//! frame of the row is refused (the frames are recorded ones, or frames the venue's
//! simulator writes where a kind was never recorded), and every malformed frame of the row
//! gets its typed error. Each venue's module gives its row; a venue without one fails
//! `every_venue_has_a_row`. What every venue's feed does end to end with a bad frame, its
//! refusal of a subscription and silence is `live_conformance.rs`'s table.

use mergebook::book::{BookUpdate, DepthBook, Level, TopBook, WireDecimals};
use mergebook::fixed::{FixedPoint, UnitSize};
use mergebook::venue::{DecodeError, Message, VenueId};

/// Which of a venue's decoders reads a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// A snapshot connection's text frame (`decode`).
    Snapshot,
    /// A diff connection's text frame (`decode_diff`).
    Diff,
    /// A REST snapshot's body (`decode_snapshot`).
    RestSnapshot,
    /// A snapshot connection's binary frame (`decode_binary`).
    Binary,
    /// A diff connection's binary frame (`decode_diff_binary`).
    BinaryDiff,
}

/// A malformed frame and the error it must get.
pub struct Malformed {
    pub read: Read,
    pub frame: Vec<u8>,
    /// Levels a side the decoder may keep (a table checks `TooManyLevels` with few).
    pub max_levels: usize,
    pub error: DecodeError,
    /// Whether the error must be equal to the byte, or only of the same kind (the
    /// positions of `Unexpected` and `TrailingBytes`, and of a `Number`'s error, aside).
    pub exact: bool,
}

impl Malformed {
    /// A frame whose error is checked to the byte position.
    pub fn exact(
        read: Read,
        frame: impl Into<Vec<u8>>,
        max_levels: usize,
        error: DecodeError,
    ) -> Self {
        Malformed {
            read,
            frame: frame.into(),
            max_levels,
            error,
            exact: true,
        }
    }
}

/// One venue's row.
pub struct Row {
    pub venue: VenueId,
    /// Frames the venue's decoders read whole.
    pub frames: Vec<(Read, Vec<u8>)>,
    pub malformed: Vec<Malformed>,
}

/// The row of a venue whose frames all come on diff connections: `frames` read whole,
/// and each malformed frame with its error, checked for its kind and its values (not the
/// byte positions of `Unexpected`, `TrailingBytes` and a `Number`'s error).
pub fn diff_row(venue: VenueId, frames: Vec<String>, malformed: Vec<(String, DecodeError)>) -> Row {
    let malformed = malformed.into_iter().map(|(frame, error)| Malformed {
        exact: false,
        ..Malformed::exact(Read::Diff, frame, 5000, error)
    });
    Row {
        venue,
        frames: frames
            .into_iter()
            .map(|frame| (Read::Diff, frame.into_bytes()))
            .collect(),
        malformed: malformed.collect(),
    }
}

fn rows() -> Vec<Row> {
    vec![
        crate::decoders::row(VenueId::Binance),
        crate::decoders::row(VenueId::Bitstamp),
        crate::kraken::row(),
        crate::bybit::row(),
        crate::okx::row(),
        crate::coinbase_exchange::row(),
        crate::coinbase::row(),
        crate::binance_sbe::row(),
        crate::hyperliquid::row(),
        crate::binance_futures::row(VenueId::BinanceUsdm),
        crate::binance_futures::row(VenueId::BinanceCoinm),
        crate::gate::row(VenueId::Gate),
        crate::gate::row(VenueId::GateFutures),
        crate::bitget::row(VenueId::Bitget),
        crate::bitget::row(VenueId::BitgetFutures),
        crate::deribit::row(),
        crate::kucoin::row(),
        crate::kucoin::futures_row(),
    ]
}

fn decode(venue: VenueId, read: Read, bytes: &[u8], max_levels: usize) -> Result<(), DecodeError> {
    let (mut book, mut update) = (TopBook::default(), BookUpdate::default());
    match read {
        Read::Snapshot => venue.decode(bytes, max_levels, &mut book).map(drop),
        Read::Diff => venue.decode_diff(bytes, max_levels, &mut update).map(drop),
        Read::RestSnapshot => venue.decode_snapshot(bytes, max_levels, &mut update),
        Read::Binary => venue.decode_binary(bytes, max_levels, &mut book).map(drop),
        Read::BinaryDiff => venue
            .decode_diff_binary(bytes, max_levels, &mut update)
            .map(drop),
    }
}

/// Whether `got` is `expected`, to the byte where `exact`.
fn same_error(got: &DecodeError, expected: &DecodeError, exact: bool) -> bool {
    if exact {
        return got == expected;
    }
    match (got, expected) {
        (DecodeError::Unexpected { .. }, DecodeError::Unexpected { .. })
        | (DecodeError::TrailingBytes { .. }, DecodeError::TrailingBytes { .. }) => true,
        (DecodeError::Number { error, .. }, DecodeError::Number { error: wanted, .. }) => {
            error == wanted
        }
        _ => got == expected,
    }
}

#[test]
fn every_venue_has_a_row() {
    let rows = rows();
    for &venue in VenueId::ALL {
        let row = rows.iter().find(|row| row.venue == venue);
        let row = row.unwrap_or_else(|| panic!("{venue} has no conformance row"));
        assert!(!row.frames.is_empty(), "{venue}: no frames");
        assert!(!row.malformed.is_empty(), "{venue}: no malformed frames");
    }
}

#[test]
fn every_strict_prefix_of_every_frame_is_refused() {
    for row in rows() {
        let venue = row.venue;
        for (read, frame) in &row.frames {
            let text = String::from_utf8_lossy(frame);
            assert_eq!(decode(venue, *read, frame, 5000), Ok(()), "{venue}: {text}");
            // A REST body is tens of kilobytes and each decode linear in it: every 97th
            // prefix, and every one ending in the last 2 KB.
            let ends: Vec<usize> = match frame.len() > 4096 {
                true => (0..frame.len())
                    .step_by(97)
                    .chain(frame.len() - 2048..frame.len())
                    .collect(),
                false => (0..frame.len()).collect(),
            };
            for end in ends {
                assert!(
                    decode(venue, *read, &frame[..end], 5000).is_err(),
                    "{venue} {read:?}: a prefix of {end} bytes accepted: {}",
                    String::from_utf8_lossy(&frame[..end])
                );
            }
        }
    }
}

#[test]
fn malformed_frames_get_typed_errors() {
    for row in rows() {
        let venue = row.venue;
        for case in &row.malformed {
            let text = String::from_utf8_lossy(&case.frame);
            let got = decode(venue, case.read, &case.frame, case.max_levels)
                .expect_err(&format!("{venue}: accepted {text}"));
            assert!(
                same_error(&got, &case.error, case.exact),
                "{venue} {:?}: {text}: got {got:?}, expected {:?}",
                case.read,
                case.error
            );
        }
    }
}

/// The levels of the book a decode read, both sides; `None` where the frame holds no book
/// (a control message) or the decoder reported its book as not held
/// (`Message::Unreadable`).
type Sides = Option<[Vec<Level>; 2]>;

fn levels_read(venue: VenueId, read: Read, bytes: &[u8]) -> Result<Sides, DecodeError> {
    let (mut book, mut update) = (TopBook::default(), BookUpdate::default());
    let message = match read {
        Read::Snapshot => venue.decode(bytes, 5000, &mut book)?,
        Read::Diff => venue.decode_diff(bytes, 5000, &mut update)?,
        Read::RestSnapshot => {
            venue.decode_snapshot(bytes, 5000, &mut update)?;
            Message::Book { stream: b"" }
        }
        Read::Binary => venue.decode_binary(bytes, 5000, &mut book)?,
        Read::BinaryDiff => venue.decode_diff_binary(bytes, 5000, &mut update)?,
    };
    if !matches!(message, Message::Book { .. } | Message::Books { .. }) {
        return Ok(None);
    }
    Ok(Some(match read {
        Read::Snapshot | Read::Binary => {
            [book.bids.as_slice().to_vec(), book.asks.as_slice().to_vec()]
        }
        _ => [update.bids, update.asks],
    }))
}

/// `level` in units of 10^`exponent` coins (its price times that, its amount divided by
/// it), where both stay exact `FixedPoint`s.
fn in_unit(level: &Level, exponent: i8) -> Option<Level> {
    let power = 10u64.pow(u32::from(exponent.unsigned_abs()));
    let times = |value: FixedPoint| value.raw().checked_mul(power).map(FixedPoint::from_raw);
    let divided = |value: FixedPoint| {
        (value.raw().is_multiple_of(power)).then(|| FixedPoint::from_raw(value.raw() / power))
    };
    let (price, amount) = match exponent >= 0 {
        true => (times(level.price)?, divided(level.amount)?),
        false => (divided(level.price)?, times(level.amount)?),
    };
    Some(Level { price, amount })
}

/// Every venue's frames, read by its decoders in units of other sizes than the coin (as
/// an instrument with a `unit_size` is), give the coin's levels moved exactly into the
/// unit; a frame with a number that does not fit the unit is refused for it (or its book
/// reported not held), never rounded. Reads in a unit take the general number parse
/// where the coin's take the fast paths: this holds every fast path's output to it.
#[test]
fn every_frame_reads_alike_in_any_unit() {
    for row in rows() {
        let venue = row.venue;
        let mut read_in_a_unit = 0;
        for (read, frame) in &row.frames {
            let text = String::from_utf8_lossy(frame);
            let coins = levels_read(venue, *read, frame)
                .unwrap_or_else(|error| panic!("{venue}: {error}: {text}"));
            if coins.is_none() {
                continue; // a book the coin cannot hold: no reference to move
            }
            for exponent in [-3, -1, 2, 6] {
                let unit = UnitSize::from_exponent(exponent).unwrap();
                let got = unit.decoding(|| levels_read(venue, *read, frame));
                let expected = coins.as_ref().and_then(|sides| {
                    let side = |levels: &Vec<Level>| {
                        levels
                            .iter()
                            .map(|level| in_unit(level, exponent))
                            .collect::<Option<Vec<_>>>()
                    };
                    Some([side(&sides[0])?, side(&sides[1])?])
                });
                match expected {
                    Some(expected) => {
                        assert_eq!(
                            got,
                            Ok(Some(expected)),
                            "{venue} {read:?} in {unit}: {text}"
                        );
                        read_in_a_unit += 1;
                    }
                    None => assert!(
                        matches!(got, Err(DecodeError::Number { .. }) | Ok(None)),
                        "{venue} {read:?} in {unit}: {got:?}: {text}"
                    ),
                }
            }
        }
        assert!(read_in_a_unit > 0, "{venue}: no frame fits any unit tried");
    }
}

/// A venue that checksums the text of its book (Kraken, OKX, Bitget) is checked against
/// the wire's text in any unit: each recorded snapshot that carries its checksum, read in
/// a unit other than the coin, gives a book whose checksum (its numbers written back as
/// the wire wrote them, `UnitSize::wire_text`) is the one the venue sent.
#[test]
fn checksums_hold_in_any_unit() {
    let checksummed = [
        VenueId::Kraken,
        VenueId::Okx,
        VenueId::Bitget,
        VenueId::BitgetFutures,
    ];
    for row in rows()
        .into_iter()
        .filter(|row| checksummed.contains(&row.venue))
    {
        let venue = row.venue;
        let mut checked_in_a_unit = 0;
        for (_, frame) in row.frames.iter().filter(|(read, _)| *read == Read::Diff) {
            let mut update = BookUpdate::default();
            let decoded = venue.decode_diff(frame, 5000, &mut update);
            let (Ok(Message::Book { .. }), Some(claimed), true) =
                (decoded, update.checksum, update.is_snapshot)
            else {
                continue;
            };
            let checksum_of = |update: &BookUpdate, unit| {
                let mut book = DepthBook::new(5000);
                book.replace(update);
                venue.checksum(
                    &book,
                    WireDecimals {
                        unit,
                        ..update.decimals
                    },
                )
            };
            if checksum_of(&update, UnitSize::COIN) != Some(claimed) {
                continue; // a frame whose claim its own book does not give: no reference
            }
            for exponent in [-2, -1, 1, 2] {
                let unit = UnitSize::from_exponent(exponent).unwrap();
                let mut scaled = BookUpdate::default();
                let decoded = unit.decoding(|| venue.decode_diff(frame, 5000, &mut scaled));
                if !matches!(decoded, Ok(Message::Book { .. })) || scaled.bids == update.bids {
                    continue; // a number that does not fit the unit
                }
                assert_eq!(
                    checksum_of(&scaled, unit),
                    Some(claimed),
                    "{venue} in {unit}"
                );
                assert_ne!(
                    checksum_of(&scaled, UnitSize::COIN),
                    Some(claimed),
                    "{venue} in {unit}"
                );
                checked_in_a_unit += 1;
            }
        }
        assert!(
            checked_in_a_unit > 0,
            "{venue}: no snapshot checked in a unit"
        );
    }
}
