//! The venue layer: one folder per exchange, and the one registry list of venues below.
//!
//! A venue is a constant descriptor of its facts ([`VenueFacts`]) and a few small traits
//! by concern ([`Decode`], [`Checksum`], [`Streams`], [`Snapshots`], and the simulator's
//! [`Simulated`]), each written in its own file of the venue's folder (`contract.rs` has
//! the table). Adding an exchange is a new folder and one line in `venues!`;
//! ARCHITECTURE.md, "Adding a venue", has the checklist.

pub use crate::book::diff_sync::Sequencing;
pub use crate::json::{DecodeError, LevelShape, MAX_NESTING, TaggedShape, Walker};
pub use contract::{
    Acked, Answer, AuthAnswer, AuthRequest, Checksum, ConnectBudget, Credentials, Decode, Message,
    NAMED_KEY_BYTES, PING_TIME, RestBudget, Simulated, SnapshotSource, Snapshots, StreamKind,
    Streams, SubscribeRequest, TokenConnection, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts,
};
pub use level_texts::LevelTexts;
pub use timestamps::write_timestamp;

use crate::book::{BookUpdate, DepthBook, TopBook, WireDecimals};

pub mod binance_futures;
pub mod bitget;
mod contract;
pub mod gate;
#[cfg(test)]
pub(crate) mod layout_edits;
pub mod level_texts;
pub(crate) mod timestamps;
pub(crate) mod wire;

/// The number of venues: the length of every array indexed by `VenueId::index()` (the
/// summary's, the merger's), and so the most venues one instrument can merge.
pub const MAX_VENUES: usize = VenueId::ALL.len();

/// Declares each venue's module and `VenueId`, and defines `dispatch!`, the one match
/// from a `VenueId` to its venue's type. `$d` is a `$` token, for the inner macro's own
/// variables.
macro_rules! venues {
    ($d:tt $($variant:ident => $module:ident :: $venue:ident),+ $(,)?) => {
        $(pub mod $module;)+

        /// Every supported venue. The discriminant is the venue's index in merges and
        /// summaries, and the last tie-break between equal levels.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum VenueId { $($variant),+ }

        impl VenueId {
            pub const ALL: &'static [VenueId] = &[$(VenueId::$variant),+];

            /// The venue's behaviour when connecting and planning.
            pub fn streams(self) -> &'static dyn Streams {
                match self { $(VenueId::$variant => &$module::$venue),+ }
            }

            /// The venue's diff-mode snapshots.
            pub fn snapshots(self) -> &'static dyn Snapshots {
                match self { $(VenueId::$variant => &$module::$venue),+ }
            }

            /// The venue's side in the simulator.
            pub fn simulated(self) -> &'static dyn Simulated {
                match self { $(VenueId::$variant => &$module::$venue),+ }
            }
        }

        /// `dispatch!(venue, V => expression)`: the expression with `V` the type of
        /// `venue`, one arm per venue, so each arm calls its venue's code directly (the
        /// decoders inline into it).
        macro_rules! dispatch {
            ($d id:expr, $d V:ident => $d call:expr) => {
                match $d id { $(VenueId::$variant => { type $d V = $module::$venue; $d call }),+ }
            };
        }
    };
}

venues! {
    $
    Binance => binance::Binance,
    Bitstamp => bitstamp::Bitstamp,
    Kraken => kraken::Kraken,
    Bybit => bybit::Bybit,
    Okx => okx::Okx,
    CoinbaseExchange => coinbase_exchange::CoinbaseExchange,
    Coinbase => coinbase::Coinbase,
    BinanceSbe => binance_sbe::BinanceSbe,
    Hyperliquid => hyperliquid::Hyperliquid,
    BinanceUsdm => binance_usdm::BinanceUsdm,
    BinanceCoinm => binance_coinm::BinanceCoinm,
    Gate => gate_spot::GateSpot,
    GateFutures => gate_futures::GateFutures,
    Bitget => bitget_spot::BitgetSpot,
    BitgetFutures => bitget_futures::BitgetFutures,
    Deribit => deribit::Deribit,
    Kucoin => kucoin::Kucoin,
    KucoinFutures => kucoin_futures::KucoinFutures,
}

/// The venue's facts, and its hot-path behaviour by enum dispatch. Each frame's decode call
/// zeroes the output's `exchange_time_ns` first, so that a frame without the venue's time
/// never carries the previous one's (a frame's next event keeps its frame's).
impl VenueId {
    /// The venue's facts (name, URLs, limits, snapshot source, sequencing).
    pub fn facts(self) -> &'static VenueFacts {
        dispatch!(self, V => &V::FACTS)
    }

    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// The venue whose books this feed carries (see [`VenueFacts::exchange`]).
    pub fn exchange(self) -> VenueId {
        VenueId::from_name(self.facts().exchange).unwrap_or(self)
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_name(name: &str) -> Option<VenueId> {
        VenueId::ALL
            .iter()
            .copied()
            .find(|venue| venue.name() == name)
    }

    /// See [`Decode::decode`].
    #[inline]
    pub fn decode<'a>(
        self,
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        out.exchange_time_ns = 0;
        dispatch!(self, V => V::decode(frame, depth, out))
    }

    /// See [`Decode::decode_binary`].
    #[inline]
    pub fn decode_binary<'a>(
        self,
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        out.exchange_time_ns = 0;
        dispatch!(self, V => V::decode_binary(frame, depth, out))
    }

    /// See [`Decode::decode_diff`].
    #[inline]
    pub fn decode_diff<'a>(
        self,
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        out.exchange_time_ns = 0;
        dispatch!(self, V => V::decode_diff(frame, max_levels, out))
    }

    /// See [`Decode::decode_diff_binary`].
    #[inline]
    pub fn decode_diff_binary<'a>(
        self,
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        out.exchange_time_ns = 0;
        dispatch!(self, V => V::decode_diff_binary(frame, max_levels, out))
    }

    /// See [`Decode::decode_next_event`].
    pub fn decode_next_event<'a>(
        self,
        frame: &'a [u8],
        at: usize,
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(&'a [u8], Option<usize>), DecodeError> {
        dispatch!(self, V => V::decode_next_event(frame, at, max_levels, out))
    }

    /// See [`Decode::decode_snapshot`].
    pub fn decode_snapshot(
        self,
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        out.exchange_time_ns = 0;
        dispatch!(self, V => V::decode_snapshot(body, max_levels, out))
    }

    /// See [`Decode::stream_key`].
    pub fn stream_key(self, stream: &str) -> Box<[u8]> {
        dispatch!(self, V => V::stream_key(stream))
    }

    /// See [`Decode::named_key`].
    #[inline]
    pub fn named_key<'a>(self, named: &'a [u8], buffer: &'a mut [u8; NAMED_KEY_BYTES]) -> &'a [u8] {
        dispatch!(self, V => V::named_key(named, buffer))
    }

    /// See [`Checksum::checksum`].
    pub fn checksum(self, book: &DepthBook, decimals: WireDecimals) -> Option<u32> {
        dispatch!(self, V => V::checksum(book, decimals))
    }

    /// See [`Checksum::ON_EVERY_BOOK`].
    pub fn checksums_every_book(self) -> bool {
        dispatch!(self, V => V::ON_EVERY_BOOK)
    }

    /// See [`Checksum::checksum_after_change`].
    pub fn checksum_after_change(
        self,
        book: &DepthBook,
        decimals: WireDecimals,
        texts: &mut LevelTexts,
    ) -> Option<u32> {
        dispatch!(self, V => V::checksum_after_change(book, decimals, texts))
    }
}

impl std::fmt::Display for VenueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::Level;

    /// Each venue reads the currency of its symbols for an instrument of base BTC, where
    /// the symbol says.
    #[test]
    fn every_venue_reads_the_quote_currency_its_symbols_name() {
        let quote = |venue: VenueId, symbol: &str| {
            let quote = venue.streams().quote_currency(symbol, "BTC");
            quote.map(|quote| quote.to_string())
        };
        let cases: &[(VenueId, &str, Option<&str>)] = &[
            (VenueId::Binance, "BTCUSDT", Some("USDT")),
            (VenueId::Binance, "ETHBTC", None),
            (VenueId::BinanceSbe, "BTCFDUSD", Some("FDUSD")),
            (VenueId::Bitstamp, "btcusd", Some("USD")),
            (VenueId::Kraken, "BTC/EUR", Some("EUR")),
            (VenueId::Bybit, "BTCUSDT", Some("USDT")),
            (VenueId::Bybit, "linear:BTCUSDC", Some("USDC")),
            (VenueId::Bybit, "linear:BTCPERP", None),
            (VenueId::Okx, "BTC-USDT-SWAP", Some("USDT")),
            (VenueId::Okx, "BTC-USDC", Some("USDC")),
            (VenueId::Coinbase, "BTC-USD", Some("USD")),
            (VenueId::Coinbase, "BTC-USDC", Some("USD")),
            (VenueId::Coinbase, "BTC-PERP-INTX", None),
            (VenueId::CoinbaseExchange, "BTC-EUR", Some("EUR")),
            (VenueId::Hyperliquid, "BTC/USDC", Some("USDC")),
            (VenueId::Hyperliquid, "BTC", None),
            (VenueId::BinanceUsdm, "BTCUSDC_250926", Some("USDC")),
            (VenueId::BinanceCoinm, "BTCUSD_PERP", Some("USD")),
            (VenueId::Gate, "BTC_USDT", Some("USDT")),
            (VenueId::GateFutures, "BTC_USD", Some("USD")),
            (VenueId::Bitget, "BTCUSDC", Some("USDC")),
            (VenueId::BitgetFutures, "BTCPERP", Some("USDC")),
            (VenueId::Deribit, "BTC-PERPETUAL", Some("USD")),
            (VenueId::Deribit, "BTC_USDC-PERPETUAL", Some("USDC")),
            (VenueId::Kucoin, "BTC-USDT", Some("USDT")),
            (VenueId::KucoinFutures, "XBTUSDTM", Some("USDT")),
            (VenueId::KucoinFutures, "XBTUSDM", Some("USD")),
        ];
        for &(venue, symbol, expected) in cases {
            assert_eq!(
                quote(venue, symbol).as_deref(),
                expected,
                "{venue} {symbol}"
            );
        }
        let covered: Vec<VenueId> = cases.iter().map(|case| case.0).collect();
        assert!(VenueId::ALL.iter().all(|venue| covered.contains(venue)));
    }

    /// What tools configure a pair by is a valid spot symbol of each venue. A venue without
    /// a book of the pair in the base coin names none: one whose books are all contracts,
    /// or one that lists no pair of that quote (Bitget's futures, margined in stablecoins
    /// only), which names the USDT pair.
    #[test]
    fn every_venue_names_a_spot_pair_by_a_valid_symbol() {
        for &venue in VenueId::ALL {
            for (base, quote) in [("ETH", "BTC"), ("I12", "BTC"), ("ETH", "USDT")] {
                let Some(symbol) = venue.streams().spot_symbol(base, quote) else {
                    let streams = venue.streams();
                    let stablecoins_only = streams.spot_symbol(base, "USDT").is_some();
                    assert!(
                        streams.inverse("") || streams.sized_in_contracts("") || stablecoins_only,
                        "{venue}: a book in the base coin"
                    );
                    continue;
                };
                assert_eq!(
                    venue.streams().check_symbol(&symbol),
                    Ok(()),
                    "{venue}: {symbol}"
                );
                assert!(
                    !venue.streams().sized_in_contracts(&symbol),
                    "{venue}: {symbol}"
                );
            }
        }
    }

    /// Replay finds a recording's symbols by their diff streams' names: a snapshot
    /// stream's book is never taken for a diff stream's.
    #[test]
    fn every_venue_names_the_symbol_of_its_diff_stream_and_no_other() {
        for &venue in VenueId::ALL
            .iter()
            .filter(|venue| venue.facts().diff_streams)
        {
            let symbol = venue
                .streams()
                .diff_stream_symbol(&venue.streams().diff_stream_name("EthBtc"))
                .unwrap_or_else(|| panic!("{venue}: its own diff stream"));
            assert!(symbol.eq_ignore_ascii_case("ethbtc"), "{venue}: {symbol}");
            assert_eq!(venue.streams().diff_stream_symbol(""), None, "{venue}");
            if venue.facts().snapshot_streams {
                let mut book = TopBook::default();
                let level = Level {
                    price: crate::fixed::FixedPoint::from_raw(100_000_000),
                    amount: crate::fixed::FixedPoint::from_raw(1),
                };
                book.bids.push(level);
                let mut frame = Vec::new();
                let stream = venue.streams().stream_name("ETHBTC", 10);
                venue.simulated().encode_book(&stream, &book, 8, &mut frame);
                let mut update = BookUpdate::default();
                if let Ok(Message::Book { stream }) = venue.decode_diff(&frame, 100, &mut update) {
                    let stream = std::str::from_utf8(stream).unwrap();
                    assert_eq!(venue.streams().diff_stream_symbol(stream), None, "{venue}");
                }
            }
        }
    }
}
