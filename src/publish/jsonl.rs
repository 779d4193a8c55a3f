//! JSON lines: one object per `Summary`, prices and amounts as exact decimal strings.
//!
//! ```text
//! {"instrument":"ETH/BTC","seq":7,"ts_ns":1700000000000000000,"spread":"0.00000100",
//!  "bids":[{"exchange":"binance","price":"0.06824000","amount":"12.00000000"},…],
//!  "asks":[…],"venues":{"binance":"synced","bitstamp":"stale"}}
//! ```
//! (one line on the wire). `spread` is `null` while either side is empty, and negative
//! when the consolidated book is crossed.

use crate::merger::kway::MergedLevel;
use crate::merger::summary::Summary;
use std::io::{self, Write};

/// Writes `summary` as one JSON line. Instrument names are validated at configuration
/// time to need no escaping.
pub fn write_summary(out: &mut impl Write, instrument: &str, summary: &Summary) -> io::Result<()> {
    write!(
        out,
        r#"{{"instrument":"{instrument}","seq":{},"ts_ns":{},"spread":"#,
        summary.sequence, summary.published_ns
    )?;
    match summary.book.spread {
        Some(spread) => write!(out, "\"{spread}\"")?,
        None => out.write_all(b"null")?,
    }
    out.write_all(br#","bids":"#)?;
    write_levels(out, summary.book.bids.as_slice())?;
    out.write_all(br#","asks":"#)?;
    write_levels(out, summary.book.asks.as_slice())?;
    out.write_all(br#","venues":{"#)?;
    for (index, (venue, state)) in summary.venue_states().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        write!(out, r#"{separator}"{venue}":"{}""#, state.name())?;
    }
    out.write_all(b"}}\n")
}

fn write_levels(out: &mut impl Write, levels: &[MergedLevel]) -> io::Result<()> {
    out.write_all(b"[")?;
    for (index, level) in levels.iter().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        write!(
            out,
            r#"{separator}{{"exchange":"{}","price":"{}","amount":"{}"}}"#,
            level.venue, level.price, level.amount
        )?;
    }
    out.write_all(b"]")
}

/// Writes every new summary of every instrument to stdout as JSON lines, until stdout
/// closes. Reads the latest values, so a slow reader of stdout skips summaries and holds
/// up nothing else.
pub async fn write_to_stdout(
    config: std::sync::Arc<crate::config::Config>,
    mut summaries: Vec<tokio::sync::watch::Receiver<std::sync::Arc<Summary>>>,
    any_summary: std::sync::Arc<tokio::sync::Notify>,
) {
    use tokio::io::AsyncWriteExt;
    let mut stdout = tokio::io::stdout();
    let mut lines = Vec::new();
    loop {
        any_summary.notified().await;
        lines.clear();
        for (instrument, latest) in config.instruments.iter().zip(&mut summaries) {
            if latest.has_changed().unwrap_or(false) {
                let summary = latest.borrow_and_update().clone();
                write_summary(&mut lines, &instrument.name, &summary)
                    .expect("writing to a Vec cannot fail");
            }
        }
        if let Err(error) = stdout.write_all(&lines).await.and(stdout.flush().await) {
            tracing::warn!(%error, "stdout closed: JSON-lines output stops");
            return;
        }
    }
}
