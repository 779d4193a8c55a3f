//! Venues quoted in other currencies, and instruments counting notionals, converted: the
//! service against the simulator, its markets quoted in their own currencies, and every
//! summary it writes checked against an independent reference built from the simulator's
//! true books, in exact integer arithmetic, while the USDT/USD rate moves, goes stale and
//! comes back, with OKX's and Bybit's inverse contracts merged as their USD value, and
//! OKX's spot book beside its own inverse perpetual in one instrument.

use crate::common;
use common::config::TestConfig;

use mergebook::book::{Side, TopBook};
use mergebook::fixed::FixedPoint;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::units::Rate;
use mergebook::venue::{StreamKind, VenueId};
use mergebook_testkit::invariants::InvariantChecker;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::TcpListener;

const DEPTH: usize = 10;
const WAIT: Duration = Duration::from_secs(30);
/// Short, for the rate to go stale soon after its venues fall silent.
const STALE_AFTER: Duration = Duration::from_secs(1);
const SCALE: u128 = 100_000_000;
/// The BTC books' price step: cents.
const CENT: u128 = 1_000_000;

/// Where a venue's rate comes from.
#[derive(Clone, Copy, PartialEq)]
enum RateFrom {
    /// The USDT/USD instrument's merged book.
    UsdtUsd,
    /// USDC/USD, fixed at 0.9999.
    FixedUsdc,
}

/// One venue's listing of an instrument, as the reference reads it.
struct Listing {
    venue: VenueId,
    symbol: &'static str,
    /// The rate it is converted through, as the pair's base (`true`: multiplied) or its
    /// quote; `None`: quoted in the instrument's currency.
    rate: Option<(RateFrom, bool)>,
    /// What one of its sizes is, raw: a contract's size, or an inverse contract's value
    /// in USD; `None`: sized in the base coin.
    contract: Option<u128>,
    inverse: bool,
}

const fn listing(venue: VenueId, symbol: &'static str) -> Listing {
    Listing {
        venue,
        symbol,
        rate: None,
        contract: None,
        inverse: false,
    }
}

const fn through(venue: VenueId, symbol: &'static str, rate: RateFrom, multiply: bool) -> Listing {
    Listing {
        rate: Some((rate, multiply)),
        ..listing(venue, symbol)
    }
}

/// An instrument of the run, in configuration order.
struct Plan {
    name: &'static str,
    /// Its currency where its name does not say it.
    currency: Option<&'static str>,
    /// Counts its amounts as notionals in its currency (`unit = "quote"`).
    notional: bool,
    /// Its price step, raw.
    step: u128,
    /// The price its simulated markets start around.
    start: &'static str,
    listings: &'static [Listing],
}

const USDT_USD: usize = 0;

/// USDT/USD from Coinbase Exchange and Kraken; BTC/USD in cents from Bitstamp (USD),
/// Binance (USDT, through USDT/USD) and OKX (USDC, at a fixed rate); ETH/USDT from
/// Binance and Bitstamp (USD, divided by USDT/USD); BTC counted in USD from Kraken (USD),
/// OKX's inverse perpetual (100 USD a contract) and spot pair (USDT), and Bybit's linear
/// perpetual (USDT); BTC
/// counted in USDT from Kraken (USDT) and Bybit's inverse perpetual (1 USD a contract,
/// divided by USDT/USD).
const PLANS: [Plan; 5] = [
    Plan {
        name: "USDT/USD",
        currency: None,
        notional: false,
        step: 1,
        start: "1.0002",
        listings: &[
            listing(VenueId::CoinbaseExchange, "USDT-USD"),
            listing(VenueId::Kraken, "USDT/USD"),
        ],
    },
    Plan {
        name: "BTC/USD",
        currency: None,
        notional: false,
        step: CENT,
        start: "90000",
        listings: &[
            listing(VenueId::Bitstamp, "btcusd"),
            through(VenueId::Binance, "BTCUSDT", RateFrom::UsdtUsd, true),
            through(VenueId::Okx, "BTC-USDC", RateFrom::FixedUsdc, true),
        ],
    },
    Plan {
        name: "ETH/USDT",
        currency: None,
        notional: false,
        step: 1,
        start: "3000",
        listings: &[
            listing(VenueId::Binance, "ETHUSDT"),
            through(VenueId::Bitstamp, "ethusd", RateFrom::UsdtUsd, false),
        ],
    },
    Plan {
        name: "BTC/USD-notional",
        currency: Some("USD"),
        notional: true,
        step: CENT,
        start: "90000",
        listings: &[
            listing(VenueId::Kraken, "BTC/USD"),
            Listing {
                contract: Some(100 * SCALE),
                inverse: true,
                ..listing(VenueId::Okx, "BTC-USD-SWAP")
            },
            through(VenueId::Bybit, "linear:BTCUSDT", RateFrom::UsdtUsd, true),
            through(VenueId::Okx, "BTC-USDT", RateFrom::UsdtUsd, true),
        ],
    },
    Plan {
        name: "BTC/USDT-notional",
        currency: Some("USDT"),
        notional: true,
        step: CENT,
        start: "90000",
        listings: &[
            listing(VenueId::Kraken, "BTC/USDT"),
            Listing {
                contract: Some(SCALE),
                inverse: true,
                ..through(VenueId::Bybit, "inverse:BTCUSD", RateFrom::UsdtUsd, false)
            },
        ],
    },
];

fn config() -> mergebook::config::Config {
    let mut config = TestConfig::new()
        .set("service.depth", DEPTH as i64)
        .set("service.stale_after_ms", STALE_AFTER.as_millis() as i64)
        .set("feed.read_idle_timeout_ms", 600_000);
    for plan in &PLANS {
        let symbols: Vec<_> = plan.listings.iter().map(|l| (l.venue, l.symbol)).collect();
        config = config.instrument(plan.name, &symbols);
        if plan.step != 1 {
            let step = FixedPoint::from_raw(plan.step as u64).to_string();
            config = config.last_instrument("price_step", step);
        }
        if let Some(currency) = plan.currency {
            config = config.last_instrument("currency", currency);
        }
        if plan.notional {
            config = config.last_instrument("unit", "quote");
        }
        let names = source_names(plan);
        for (listing, name) in plan.listings.iter().zip(&names) {
            if let Some(contract) = listing.contract {
                let contract = FixedPoint::from_raw(contract as u64).to_string();
                config = config.last_instrument(&format!("contract_sizes.{name}"), contract);
            }
        }
    }
    config
        .rate("USDT/USD", "instrument", "USDT/USD")
        .rate("USDC/USD", "fixed", "0.9999")
        .build()
}

/// The names `plan`'s books take, in its listings' order.
fn source_names(plan: &Plan) -> Vec<String> {
    let books: Vec<_> = plan
        .listings
        .iter()
        .map(|l| (l.venue, l.symbol.to_owned()))
        .collect();
    mergebook::config::source_names(&books)
}

/// Which book a level comes from: its venue, and its source in the instrument (the last
/// keys of the merge's order).
type Origin = (VenueId, u8);

/// One level as published: (price, amount, its book, native price), raw.
type Level = (u64, u64, Origin, u64);

/// `price` through `rate` on `side`, rounded to `step` against the trader: a bid down, an
/// ask up; `multiply`: the venue quotes in the pair's base. Exact, by 128-bit integers.
fn reference_price(side: Side, price: u64, rate: &Rate, multiply: bool, step: u128) -> u64 {
    let price = u128::from(price);
    let (numerator, denominator) = match (multiply, side) {
        (true, Side::Bid) => (price * u128::from(rate.bid.raw()), SCALE),
        (true, Side::Ask) => (price * u128::from(rate.ask.raw()), SCALE),
        (false, Side::Bid) => (price * SCALE, u128::from(rate.ask.raw())),
        (false, Side::Ask) => (price * SCALE, u128::from(rate.bid.raw())),
    };
    let steps = match side {
        Side::Bid => numerator / (denominator * step),
        Side::Ask => numerator.div_ceil(denominator * step),
    };
    u64::try_from(steps * step).unwrap()
}

/// A venue's best `DEPTH` levels of `side` as merged: converted where it has a rate, its
/// sizes times its contract's, as notionals where the instrument counts them (a base
/// amount times the converted price, an inverse contract's value times the converted
/// price over the native one, rounded down, a level worth nothing left out); levels at
/// one converted price summed, at the worse native price; bids at zero left out.
fn reference_side(
    plan: &Plan,
    (listing, source): (&Listing, usize),
    book: &TopBook,
    side: Side,
    rate: Option<&Rate>,
) -> Vec<Level> {
    let mut levels: Vec<Level> = Vec::new();
    for level in book.side(side).as_slice().iter().take(DEPTH) {
        let native = level.price.raw();
        let price = match (rate, listing.rate) {
            (Some(rate), Some((_, multiply))) => {
                reference_price(side, native, rate, multiply, plan.step)
            }
            _ => native,
        };
        if price == 0 {
            break;
        }
        let size = u128::from(level.amount.raw());
        let amount = listing
            .contract
            .map_or(size, |contract| size * contract / SCALE);
        let amount = match (plan.notional, listing.inverse) {
            (false, _) => amount,
            (true, false) => amount * u128::from(price) / SCALE,
            (true, true) => amount * u128::from(price) / u128::from(native),
        };
        let amount = u64::try_from(amount).unwrap();
        if amount == 0 {
            continue;
        }
        match levels.last_mut() {
            Some(last) if last.0 == price => {
                last.1 += amount;
                last.3 = native;
            }
            _ => levels.push((price, amount, (listing.venue, source as u8), native)),
        }
    }
    levels
}

/// The merged side: every book's levels, the better price first, then the larger
/// amount, then registry order, then the instrument's order of books; the best `DEPTH`.
fn merged(side: Side, mut levels: Vec<Level>) -> Vec<Level> {
    levels.sort_by(|a, b| {
        let price = match side {
            Side::Bid => b.0.cmp(&a.0),
            Side::Ask => a.0.cmp(&b.0),
        };
        price.then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2))
    });
    levels.truncate(DEPTH);
    levels
}

/// The simulator's books of `listing` recently, at `sequence`.
fn true_books(simulator: &Simulator, listing: &Listing, sequence: u64) -> Vec<TopBook> {
    let (venue, symbol) = (listing.venue, listing.symbol);
    let at = |books: &[TopBook]| -> Vec<TopBook> {
        books
            .iter()
            .filter(|book| book.venue_sequence == sequence)
            .copied()
            .collect()
    };
    // A venue without snapshot streams runs in diff mode (the default of the others is
    // snapshot mode).
    if !venue.facts().snapshot_streams {
        return simulator.with_diff_history(venue, symbol, at);
    }
    // The stream as the simulator names it: what it reads from the reader's subscription.
    let streams = venue.streams();
    let stream = streams.stream_name(symbol, DEPTH);
    let request = &streams.subscribe_frames(&[stream], StreamKind::Snapshots, DEPTH, 1)[0];
    let answer = venue.simulated().answer_request(&request.frame).unwrap();
    simulator.with_sent_books(venue, &answer.subscribe[0], at)
}

/// A merged book's listing and source, the rate it used, and its true books at the
/// summary's sequence.
type Candidate<'a> = ((&'a Listing, usize), Option<Rate>, Vec<TopBook>);

/// The checks of every summary, in the order written.
struct Reference {
    /// Each plan's listings' sources in its instrument.
    sources: Vec<Vec<usize>>,
    /// The rate USDT/USD's latest summary made.
    usdt_usd: Option<Rate>,
    fixed_usdc: Rate,
    checked: usize,
    /// Summaries of a venue converted through USDT/USD synced, and the rates they used.
    converted: usize,
    rates_used: BTreeSet<(u64, u64)>,
    /// Summaries with a venue out for want of its rate.
    without_rate: usize,
    /// Summaries counting notionals with an inverse venue synced.
    inverse: usize,
    /// Summaries with levels of two books of one venue in the merged book (OKX's spot
    /// pair and inverse perpetual).
    one_venue_twice: usize,
    /// What every published book satisfies, an instrument's summaries in order.
    invariants: [InvariantChecker; PLANS.len()],
}

impl Reference {
    fn check(&mut self, simulator: &Simulator, summary: &Summary) {
        self.invariants[summary.instrument].check(summary);
        if summary.instrument == USDT_USD {
            let (bid, ask) = (summary.book.bids.best(), summary.book.asks.best());
            self.usdt_usd = bid.zip(ask).map(|(bid, ask)| Rate {
                bid: bid.price,
                ask: ask.price,
                received_ns: 0,
            });
            return;
        }
        let plan = &PLANS[summary.instrument];
        let unit = match plan.notional {
            true => plan.currency,
            false => plan.name.split_once('/').map(|(base, _)| base),
        };
        assert_eq!(summary.amount_unit.map(|u| u.to_string()).as_deref(), unit);
        // Each merged venue's candidate books (its books at the summary's sequence), and
        // the rate each converted venue must have used.
        let mut candidates: Vec<Candidate> = Vec::new();
        let sources = &self.sources[summary.instrument];
        for (listing, &source) in plan.listings.iter().zip(sources) {
            let venue = listing.venue;
            assert_eq!(summary.source_venues[source], Some(venue));
            let applied = summary.source_rate[source];
            assert_eq!(applied.is_some(), listing.rate.is_some(), "{venue}");
            let used = applied.and_then(|applied| applied.rate);
            if let Some((from, _)) = listing.rate {
                let expected = match from {
                    RateFrom::UsdtUsd => self.usdt_usd,
                    RateFrom::FixedUsdc => Some(self.fixed_usdc),
                };
                let strip = |rate: Option<Rate>| rate.map(|r| (r.bid, r.ask));
                assert_eq!(
                    strip(used),
                    strip(expected),
                    "{venue}: not the rate its source last made"
                );
            }
            match summary.source_states[source] {
                VenueState::Synced => {}
                VenueState::NoRate => {
                    assert!(listing.rate.is_some() && used.is_none(), "{venue}");
                    self.without_rate += 1;
                    continue;
                }
                _ => continue,
            }
            if let (Some(rate), Some((RateFrom::UsdtUsd, _))) = (used, listing.rate) {
                self.converted += 1;
                self.rates_used.insert((rate.bid.raw(), rate.ask.raw()));
            }
            if listing.inverse {
                self.inverse += 1;
            }
            let books = true_books(simulator, listing, summary.source_sequence[source]);
            assert!(!books.is_empty(), "{venue}: no true book at its sequence");
            candidates.push(((listing, source), used, books));
        }
        // One book of each merged venue makes the published book (a venue's sequence
        // names one book but for a reconnect's repeat).
        let mut choice = vec![0; candidates.len()];
        let published = |side: Side| {
            let levels = summary.book.side(side).as_slice().iter().enumerate();
            levels
                .map(|(at, l)| {
                    let native = summary.native_price(side, at).unwrap_or(l.price);
                    (
                        l.price.raw(),
                        l.amount.raw(),
                        (l.venue, l.source),
                        native.raw(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let (bids, asks) = (published(Side::Bid), published(Side::Ask));
        let okx_books: BTreeSet<u8> = bids
            .iter()
            .chain(&asks)
            .filter(|level| level.2.0 == VenueId::Okx)
            .map(|level| level.2.1)
            .collect();
        if okx_books.len() == 2 {
            self.one_venue_twice += 1;
        }
        loop {
            let expected = |side: Side| {
                let levels =
                    candidates
                        .iter()
                        .zip(&choice)
                        .flat_map(|((listing, rate, books), &at)| {
                            reference_side(plan, *listing, &books[at], side, rate.as_ref())
                        });
                merged(side, levels.collect())
            };
            if expected(Side::Bid) == bids && expected(Side::Ask) == asks {
                break;
            }
            // The next combination, or the verdict.
            let next = (0..choice.len()).find(|&i| choice[i] + 1 < candidates[i].2.len());
            let Some(at) = next else {
                panic!(
                    "summary {} of {}: published {bids:?} {asks:?}, the reference {:?} {:?}",
                    summary.sequence,
                    plan.name,
                    expected(Side::Bid),
                    expected(Side::Ask)
                );
            };
            choice[at] += 1;
            choice[..at].fill(0);
        }
        self.checked += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converted_books_match_a_reference_of_the_true_books_as_rates_move_and_go_stale() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 40, 17).unwrap();
    let mut config = config();
    let price = |text: &str| text.parse::<FixedPoint>().unwrap();
    let prices: Vec<_> = PLANS
        .iter()
        .map(|plan| (plan.name.to_owned(), price(plan.start)))
        .collect();
    simulator.set_prices(&config, &prices);
    simulator.point(&mut config);
    let written = common::EverySummary::default();
    let listeners = Listeners::loopback().await.unwrap();
    let service = Service::start_observed(config.clone(), listeners, written.clone()).unwrap();
    let sources = PLANS
        .iter()
        .zip(&config.instruments)
        .map(|(plan, instrument)| {
            let source_of = |listing: &Listing| {
                let book = (listing.venue, listing.symbol.to_owned());
                instrument.symbols.iter().position(|b| *b == book).unwrap()
            };
            plan.listings.iter().map(source_of).collect()
        })
        .collect();
    let reference = Mutex::new(Reference {
        sources,
        usdt_usd: None,
        fixed_usdc: Rate::fixed(price("0.9999")),
        checked: 0,
        converted: 0,
        rates_used: BTreeSet::new(),
        without_rate: 0,
        inverse: 0,
        one_venue_twice: 0,
        invariants: std::array::from_fn(|_| InvariantChecker::new(STALE_AFTER)),
    });
    // Every summary written so far, checked (soon after it is written: the simulator
    // remembers its books of the last seconds).
    let check_written = || {
        let summaries = std::mem::take(&mut *written.0.lock().unwrap());
        let mut reference = reference.lock().unwrap();
        for summary in &summaries {
            reference.check(&simulator, summary);
        }
        reference.converted
    };
    let converted_at_two_rates = || {
        check_written();
        let reference = reference.lock().unwrap();
        reference.converted >= 40
            && reference.rates_used.len() >= 2
            && reference.inverse >= 20
            && reference.one_venue_twice >= 20
    };
    common::eventually("converted books at two rates", WAIT, converted_at_two_rates).await;

    // The rate's venues fall silent: past the stale age, the venues converted through it
    // are out of the merge, `no-rate`, while OKX's fixed rate goes on.
    simulator.pause(VenueId::CoinbaseExchange, true);
    simulator.pause(VenueId::Kraken, true);
    common::eventually("the venues without their rate out", WAIT, || {
        check_written();
        reference.lock().unwrap().without_rate >= 10
    })
    .await;
    simulator.pause(VenueId::CoinbaseExchange, false);
    simulator.pause(VenueId::Kraken, false);
    let before = reference.lock().unwrap().converted;
    common::eventually("converted again once the rate is back", WAIT, || {
        check_written() >= before + 20
    })
    .await;
    service.stop().await;
    check_written();
    let reference = reference.lock().unwrap();
    assert!(
        reference.checked > 100,
        "{} summaries checked",
        reference.checked
    );
}
