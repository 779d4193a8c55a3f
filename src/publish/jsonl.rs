//! JSON lines: one object per `Summary`, prices and amounts as exact decimal strings.
//!
//! ```text
//! {"instrument":"ETH/BTC","seq":7,"ts_ns":1700000000000000000,"spread":"0.00000100",
//!  "bids":[{"exchange":"binance","price":"0.06824000","amount":"12.00000000"},…],
//!  "asks":[…],"venues":{"binance":"synced","bitstamp":"stale"},
//!  "times":{"binance":{"received_unix_ns":1699999999999700000,"age_ns":300000,
//!  "exchange_unix_ns":1699999999950000000},"bitstamp":{…}},"currency":"BTC",
//!  "amount_unit":"ETH"}
//! ```
//! (one line on the wire). `spread` is `null` while either side is empty, and negative
//! when the consolidated book is crossed. `times` gives each book's latest receipt (ns
//! since the Unix epoch: `ts_ns` less `age_ns`; 0 before the first) and the venue's own
//! time of it (`null` where the venue sent none), as `VenueQuote`'s fields. A book is
//! named by its venue, or by `venue:symbol` where the instrument takes several books of
//! one venue (`"okx:BTC-USDT-SWAP"`, `Instrument::source_names`).
//!
//! `"amount_unit"` says what the amounts count, where the instrument's name or unit says:
//! its base coin (`"ETH"`), or its currency where it counts notionals (`unit = "quote"`).
//! An instrument counted in units of many coins (`unit_size`) adds `"unit_size":"1000000"`:
//! its amounts count units of that many coins, its prices are per unit.
//! An instrument that states its currency adds `"currency":"USD"`; where venues quoted in
//! another currency are converted into it, each of their levels adds its
//! `"native_price"`, and `"rates"` says each such venue's currency and rate (the fields of
//! `VenueQuote` in proto/orderbook.proto; `null` prices while there is no rate):
//!
//! ```text
//! …"bids":[{"exchange":"binance","price":"89999.49000000","amount":"1.00000000",
//!  "native_price":"89990.50000000"},…],…,"currency":"USD","rates":{"binance":
//!  {"currency":"USDT","pair":"USDT/USD","bid":"1.00010000","ask":"1.00030000","age_ns":1200}}}
//! ```
//!
//! `"bands"` gives what each side holds within each configured distance of the mid
//! (`service.bands_bps`; `ExactSummary`'s `bands`), narrowest first, and whether every
//! merged venue's whole book was counted:
//!
//! ```text
//! …,"bands":{"full_depth":true,"within":[{"bps":5,"bid_amount":"3.20000000",
//!  "bid_notional":"0.2182400000000000","ask_amount":"1.50000000",
//!  "ask_notional":"0.1023450000000000"},…]}}
//! ```
//!
//! Where a venue of the instrument charges a taker fee, `"fees_bps"` gives each book's
//! (basis points, `"0"` where none) and `"all_in"` the book net of them, as
//! `ExactSummary`'s `all_in_*` fields: each level priced at what taking it yields or costs
//! after its venue's fee, the venues merged again.
//!
//! ```text
//! …,"fees_bps":{"binance":"10","kraken":"26"},"all_in":{"spread":"181.20000000",
//!  "bids":[{"exchange":"binance","price":"89909.50000000","amount":"1.00000000"},…],
//!  "asks":[…]}}
//! ```

use crate::book::Side;
use crate::config::Instrument;
use crate::merger::summary::Summary;
use std::io::{self, Write};

/// Writes `summary`, a summary of `instrument`, as one JSON line. Instrument names and
/// symbols are validated at configuration time to need no escaping.
pub fn write_summary(
    out: &mut impl Write,
    instrument: &Instrument,
    summary: &Summary,
) -> io::Result<()> {
    let names = &instrument.source_names;
    write!(
        out,
        r#"{{"instrument":"{}","seq":{},"ts_ns":{},"#,
        instrument.name, summary.sequence, summary.published_ns
    )?;
    write_book(out, names, summary, false)?;
    out.write_all(br#","venues":{"#)?;
    for (index, (source, _, state)) in summary.sources().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        write!(out, r#"{separator}"{}":"{}""#, names[source], state.name())?;
    }
    out.write_all(br#"},"times":{"#)?;
    for (index, (source, _, _)) in summary.sources().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        let received = summary.source_received_ns[source];
        write!(
            out,
            r#"{separator}"{}":{{"received_unix_ns":{},"age_ns":{},"exchange_unix_ns":"#,
            names[source],
            summary.received_unix_ns(received),
            summary.age_ns(received)
        )?;
        match summary.source_exchange_time_ns[source] {
            0 => out.write_all(b"null}")?,
            time => write!(out, "{time}}}")?,
        }
    }
    out.write_all(b"}")?;
    if let Some(currency) = summary.currency {
        write!(out, r#","currency":"{currency}""#)?;
    }
    if let Some(unit) = summary.amount_unit {
        write!(out, r#","amount_unit":"{unit}""#)?;
    }
    if !summary.unit_size.is_coin() {
        write!(out, r#","unit_size":"{}""#, summary.unit_size)?;
    }
    let converted = summary
        .sources()
        .filter_map(|(source, _, _)| Some((source, summary.source_rate[source]?)));
    let mut written = 0;
    for (source, applied) in converted {
        let opening = if written == 0 { r#","rates":{"# } else { "," };
        written += 1;
        write!(
            out,
            r#"{opening}"{}":{{"currency":"{}","pair":"{}/{}","#,
            names[source], applied.native, applied.base, applied.quote
        )?;
        match applied.rate {
            Some(rate) => write!(
                out,
                r#""bid":"{}","ask":"{}","age_ns":{}}}"#,
                rate.bid,
                rate.ask,
                summary.age_ns(rate.received_ns)
            )?,
            None => out.write_all(br#""bid":null,"ask":null,"age_ns":null}"#)?,
        }
    }
    if written > 0 {
        out.write_all(b"}")?;
    }
    if summary.charges_fees {
        write_all_in(out, names, summary)?;
    }
    write_bands(out, summary)?;
    out.write_all(b"}\n")
}

/// `"bands"`, where the summary has any.
fn write_bands(out: &mut impl Write, summary: &Summary) -> io::Result<()> {
    let wide = crate::fixed::wide_decimal_text;
    for (index, (bps, bids, asks)) in summary.bands.each().enumerate() {
        if index == 0 {
            write!(
                out,
                r#","bands":{{"full_depth":{},"within":["#,
                summary.bands.full_depth
            )?;
        } else {
            out.write_all(b",")?;
        }
        write!(
            out,
            r#"{{"bps":{bps},"bid_amount":"{}","bid_notional":"{}","ask_amount":"{}","ask_notional":"{}"}}"#,
            wide(bids.amount, 8),
            wide(bids.notional, 16),
            wide(asks.amount, 8),
            wide(asks.notional, 16)
        )?;
    }
    if summary.bands.count > 0 {
        out.write_all(b"]}")?;
    }
    Ok(())
}

/// `"fees_bps"` and `"all_in"`.
fn write_all_in(out: &mut impl Write, names: &[String], summary: &Summary) -> io::Result<()> {
    out.write_all(br#","fees_bps":{"#)?;
    for (index, (source, _, _)) in summary.sources().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        let fee = summary.source_taker_fees[source];
        write!(out, r#"{separator}"{}":"{fee}""#, names[source])?;
    }
    out.write_all(br#"},"all_in":{"#)?;
    write_book(out, names, summary, true)?;
    out.write_all(b"}")
}

/// `"spread"`, `"bids"` and `"asks"` of `summary`'s book, or of its all-in book
/// (`all_in`).
fn write_book(
    out: &mut impl Write,
    names: &[String],
    summary: &Summary,
    all_in: bool,
) -> io::Result<()> {
    let book = match all_in {
        true => &summary.all_in,
        false => &summary.book,
    };
    out.write_all(br#""spread":"#)?;
    match book.spread {
        Some(spread) => write!(out, "\"{spread}\"")?,
        None => out.write_all(b"null")?,
    }
    out.write_all(br#","bids":"#)?;
    write_levels(out, names, summary, all_in, Side::Bid)?;
    out.write_all(br#","asks":"#)?;
    write_levels(out, names, summary, all_in, Side::Ask)
}

/// The levels of `side` of `summary`'s book, whose converted levels add their native
/// prices, or of its all-in book (`all_in`).
fn write_levels(
    out: &mut impl Write,
    names: &[String],
    summary: &Summary,
    all_in: bool,
    side: Side,
) -> io::Result<()> {
    let (book, natives) = match all_in {
        true => (&summary.all_in, false),
        false => (&summary.book, true),
    };
    out.write_all(b"[")?;
    for (index, level) in book.side(side).as_slice().iter().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        write!(
            out,
            r#"{separator}{{"exchange":"{}","price":"{}","amount":"{}""#,
            names[usize::from(level.source)],
            level.price,
            level.amount
        )?;
        if let Some(native) = summary.native_price(side, index).filter(|_| natives) {
            write!(out, r#","native_price":"{native}""#)?;
        }
        out.write_all(b"}")?;
    }
    out.write_all(b"]")
}

/// Writes every new summary of every instrument listed to stdout as JSON lines, until
/// stdout closes. Reads the latest values, so a slow reader of stdout skips summaries and
/// holds up nothing else.
pub async fn write_to_stdout(
    mut catalog: crate::publish::catalog::Catalog,
    any_summary: std::sync::Arc<tokio::sync::Notify>,
) {
    use tokio::io::AsyncWriteExt;
    let mut stdout = tokio::io::stdout();
    let mut lines = Vec::new();
    // The instruments followed, each with the receiver whose summaries were written; a
    // reload's listing followed from its next summary on.
    let mut followed = catalog.borrow_and_update().as_ref().clone();
    loop {
        any_summary.notified().await;
        if catalog.has_changed().unwrap_or(false) {
            followed = follow_listing(&followed, &catalog.borrow_and_update());
        }
        lines.clear();
        for listed in followed.iter_mut() {
            let latest = &mut listed.summaries;
            if latest.has_changed().unwrap_or(false) {
                let summary = latest.borrow_and_update().clone();
                write_summary(&mut lines, &listed.instrument, &summary)
                    .expect("writing to a Vec cannot fail");
            }
        }
        if let Err(error) = stdout.write_all(&lines).await.and(stdout.flush().await) {
            tracing::warn!(%error, "stdout closed: JSON-lines output stops");
            return;
        }
    }
}

/// `listing`, each instrument still followed with the receiver it had in `followed`: what
/// was written of it stays written.
fn follow_listing(
    followed: &crate::publish::catalog::Listing,
    listing: &crate::publish::catalog::Listing,
) -> crate::publish::catalog::Listing {
    let mut next = listing.clone();
    for listed in next.iter_mut() {
        if let Some(before) = followed.in_slot(listed.slot)
            && before.summaries.same_channel(&listed.summaries)
        {
            listed.summaries = before.summaries.clone();
        }
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPoint;
    use crate::merger::kway::MergedLevel;
    use crate::merger::summary::{AppliedRate, VenueState};
    use crate::units::{Currency, Rate};
    use crate::venue::VenueId;

    fn decimal(text: &str) -> FixedPoint {
        text.parse().expect("a decimal")
    }

    /// A converted venue's levels carry their native prices, and the line its rate.
    #[test]
    fn a_converted_venue_s_levels_and_rate_are_written() {
        let currency = |code| Currency::parse(code).expect("a code");
        let mut summary = Summary {
            sequence: 3,
            published_monotonic_ns: 5_000,
            currency: Some(currency("USD")),
            amount_unit: Some(currency("BTC")),
            ..Summary::default()
        };
        let instrument = Instrument::of_books(
            "BTC/USD",
            &[
                (VenueId::Binance, "BTCUSDT"),
                (VenueId::Kraken, "XBT/USD"),
                (VenueId::Okx, "BTC-USDC"),
                (VenueId::Okx, "BTC-USDC-SWAP"),
            ],
        );
        for (source, (venue, _)) in instrument.symbols.iter().enumerate() {
            summary.source_venues[source] = Some(*venue);
            summary.source_states[source] = VenueState::Synced;
        }
        summary.source_states[2] = VenueState::NoRate;
        let applied = |native, rate| AppliedRate {
            native: currency(native),
            base: currency(native),
            quote: currency("USD"),
            rate,
        };
        let rate = Rate {
            bid: decimal("1.0001"),
            ask: decimal("1.0003"),
            received_ns: 1_000,
        };
        summary.source_rate[0] = Some(applied("USDT", Some(rate)));
        summary.source_rate[2] = Some(applied("USDC", None));
        summary.source_rate[3] = Some(applied("USDC", None));
        summary.book.bids.push(MergedLevel {
            price: decimal("90000"),
            amount: decimal("1"),
            venue: VenueId::Kraken,
            source: 1,
        });
        summary.book.bids.push(MergedLevel {
            price: decimal("89999.49"),
            amount: decimal("2"),
            venue: VenueId::Binance,
            source: 0,
        });
        summary.native_prices.bids[..2].copy_from_slice(&[decimal("90000"), decimal("89990.5")]);
        let mut line = Vec::new();
        write_summary(&mut line, &instrument, &summary).expect("a Vec");
        let value: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
        assert_eq!(value["currency"], "USD");
        assert_eq!(value["amount_unit"], "BTC");
        assert_eq!(
            value["bids"][0].get("native_price"),
            None,
            "Kraken's is not converted"
        );
        assert_eq!(value["bids"][1]["native_price"], "89990.50000000");
        assert_eq!(value["bids"][1]["price"], "89999.49000000");
        assert_eq!(
            value["rates"],
            serde_json::json!({
                "binance": {"currency": "USDT", "pair": "USDT/USD", "bid": "1.00010000",
                            "ask": "1.00030000", "age_ns": 4000},
                "okx:BTC-USDC": {"currency": "USDC", "pair": "USDC/USD", "bid": null,
                                 "ask": null, "age_ns": null},
                "okx:BTC-USDC-SWAP": {"currency": "USDC", "pair": "USDC/USD", "bid": null,
                                      "ask": null, "age_ns": null},
            })
        );
        assert_eq!(value["venues"]["okx:BTC-USDC"], "no-rate");
        assert_eq!(value["venues"]["okx:BTC-USDC-SWAP"], "synced");
        assert_eq!(value["bids"][0]["exchange"], "kraken");
        assert!(line.ends_with(b"}\n"));
    }

    /// Each book's receipt is written as Unix time, beside its age and the venue's own
    /// time of it (`null` where the venue sent none, and for a book not yet received).
    #[test]
    fn each_book_s_receipt_and_venue_time_are_written() {
        let instrument = Instrument::of_books(
            "BTC/USD",
            &[(VenueId::Kraken, "BTC/USD"), (VenueId::Bitstamp, "btcusd")],
        );
        let mut summary = Summary {
            published_ns: 1_700_000_000_000_000_000,
            published_monotonic_ns: 9_000_000,
            ..Summary::default()
        };
        for (source, (venue, _)) in instrument.symbols.iter().enumerate() {
            summary.source_venues[source] = Some(*venue);
        }
        summary.source_received_ns[0] = 8_700_000;
        summary.source_exchange_time_ns[0] = 1_699_999_999_950_000_123;
        let mut line = Vec::new();
        write_summary(&mut line, &instrument, &summary).expect("a Vec");
        let value: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
        assert_eq!(
            value["times"],
            serde_json::json!({
                "bitstamp": {"received_unix_ns": 0, "age_ns": 0, "exchange_unix_ns": null},
                "kraken": {"received_unix_ns": 1_699_999_999_999_700_000_u64, "age_ns": 300_000,
                           "exchange_unix_ns": 1_699_999_999_950_000_123_u64},
            })
        );
    }

    /// Where a venue charges a fee, the line carries each book's fee and the book net of
    /// them; where none does, neither.
    #[test]
    fn fees_and_the_all_in_book_are_written_where_a_venue_charges_one() {
        let text = "[venues.binance]\ntaker_fee_bps = \"10\"\n[[instruments]]\n\
                    name = \"ETH/BTC\"\nsymbols = { binance = \"ETHBTC\", kraken = \"ETH/BTC\" }\n";
        let config = crate::config::RawConfig::parse(text, "test.toml")
            .and_then(|raw| raw.validate())
            .expect("valid");
        let mut consolidation = crate::merger::Consolidation::configured(&config, 0);
        let book = |bid: &str, ask: &str| {
            let mut book = crate::book::TopBook::default();
            let level = |price: &str| crate::book::Level {
                price: decimal(price),
                amount: decimal("2"),
            };
            book.bids.push(level(bid));
            book.asks.push(level(ask));
            crate::feed::handoff::VenueFeed {
                state: VenueState::Synced,
                book,
                ..crate::feed::handoff::VenueFeed::default()
            }
        };
        consolidation.apply(0, &book("0.05", "0.0501"));
        consolidation.apply(1, &book("0.04999", "0.05011"));
        let mut summary = Summary::default();
        consolidation.summarize(1, &mut summary);
        let mut line = Vec::new();
        write_summary(&mut line, &config.instruments[0], &summary).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
        assert_eq!(
            value["fees_bps"],
            serde_json::json!({"binance": "10", "kraken": "0"})
        );
        assert_eq!(value["bids"][0]["exchange"], "binance");
        // 0.05 × 0.999 = 0.04995 sits below Kraken's 0.04999; 0.0501 × 1.001 = 0.0501501.
        let all_in = &value["all_in"];
        assert_eq!(all_in["bids"][0]["exchange"], "kraken");
        assert_eq!(all_in["bids"][1]["price"], "0.04995000");
        assert_eq!(all_in["asks"][0]["price"], "0.05011000");
        assert_eq!(all_in["asks"][1]["price"], "0.05015010");
        assert_eq!(all_in["spread"], "0.00012000");
        assert_eq!(all_in["bids"][1].get("native_price"), None);

        consolidation.set_taker_fees(&[Default::default(); 2], 1);
        consolidation.summarize(2, &mut summary);
        line.clear();
        write_summary(&mut line, &config.instruments[0], &summary).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
        assert_eq!(value.get("all_in"), None);
        assert_eq!(value.get("fees_bps"), None);
    }
}
