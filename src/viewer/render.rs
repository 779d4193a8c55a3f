//! Draws a [`WatchState`]: a header line, the ladder (asks above, bids below, the spread
//! between them), the venue panel, the size box where it is open, and the keys. Prices,
//! sizes, the spread and quotes are the service's exact decimal text; only the bars'
//! lengths and the spread in basis points, which are proportions, are computed in floating
//! point.

use super::state::{Link, SizeBox, WatchState};
use crate::fixed::FixedPoint;
use crate::publish::proto::quote_request::Side;
use crate::publish::proto::{ExactLevel, ExactSummary, QuoteReply, VenueQuote};
use crate::venue::VenueId;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use std::time::Instant;

/// The narrowest screen drawn; below it, a line saying so.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;
/// From this width the venue panel stands beside the ladder, not below it.
const SIDE_BY_SIDE_WIDTH: u16 = 100;
/// The venue panel's least width beside the ladder; wider where its books' names need it
/// (`venue:symbol`), up to half the screen.
const VENUE_PANEL_WIDTH: u16 = 52;
/// The shortest bar column drawn: narrower, the bars are left out (then the cumulative
/// sizes, where even they do not fit).
const MIN_BAR_WIDTH: usize = 10;

/// What a frame shows besides the state: the service's address, the time now and the
/// updates of the last second.
pub struct Context<'a> {
    pub address: &'a str,
    pub now: Instant,
    pub updates_per_second: usize,
}

/// Each venue's colour, by its place in the registry.
const VENUE_COLOURS: [Color; 8] = [
    Color::Yellow,
    Color::Green,
    Color::Magenta,
    Color::Cyan,
    Color::Blue,
    Color::LightRed,
    Color::LightGreen,
    Color::LightMagenta,
];

/// A book's colour: its venue's (`venue:symbol` names one of a venue's several books).
fn venue_colour(name: &str) -> Color {
    let venue = name.split_once(':').map_or(name, |(venue, _)| venue);
    VenueId::from_name(venue).map_or(Color::White, |venue| {
        VENUE_COLOURS[venue.index() % VENUE_COLOURS.len()]
    })
}

fn state_style(state: &str) -> Style {
    match state {
        "synced" => Style::new().fg(Color::Green),
        "stale" | "one-sided" | "no-rate" => Style::new().fg(Color::Yellow),
        "out-of-sync" | "crossed" => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        _ => Style::new().fg(Color::Gray),
    }
}

pub fn draw(frame: &mut Frame, state: &WatchState, context: &Context) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "terminal too small ({}x{}); mergebook watch needs {MIN_WIDTH}x{MIN_HEIGHT}",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(text), area);
        return;
    }
    let [header, body, keys] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header_lines(state, context)), header);
    let key_help = match state.size.editing {
        true => "type a quantity · enter ask · b buy/sell · f fees · esc close",
        false => "←/→ instrument · +/- depth · s size · p pause · q quit",
    };
    frame.render_widget(Paragraph::new(Line::from(key_help.dark_gray())), keys);
    let body = match state.size.shown() {
        true => {
            let lines = size_lines(&state.size, state.summary.as_ref());
            let height = (lines.len() as u16 + 2).min(body.height / 2);
            let [body, size] =
                Layout::vertical([Constraint::Min(0), Constraint::Length(height)]).areas(body);
            let block = Block::bordered().title(" size ");
            frame.render_widget(Paragraph::new(lines).block(block), size);
            body
        }
        false => body,
    };
    let venues_height = state
        .summary
        .as_ref()
        .map_or(0, |summary| summary.venue_quotes.len() as u16)
        + 3;
    let (ladder, venues) = if area.width >= SIDE_BY_SIDE_WIDTH {
        let needed = state
            .summary
            .as_ref()
            .map_or(0, |summary| VenueColumns::of(&summary.venue_quotes).width());
        let width = needed.clamp(VENUE_PANEL_WIDTH, area.width / 2);
        let [ladder, venues] =
            Layout::horizontal([Constraint::Min(0), Constraint::Length(width)]).areas(body);
        (ladder, venues)
    } else {
        let [ladder, venues] =
            Layout::vertical([Constraint::Min(0), Constraint::Length(venues_height)]).areas(body);
        (ladder, venues)
    };
    draw_ladder(frame, state, ladder);
    draw_venues(frame, state, venues);
}

fn header_lines(state: &WatchState, context: &Context) -> Vec<Line<'static>> {
    let position = state
        .instruments
        .iter()
        .position(|name| *name == state.instrument)
        .map(|at| format!(" ({}/{})", at + 1, state.instruments.len()))
        .unwrap_or_default();
    let mut first = vec![
        "mergebook watch".bold(),
        format!(" · {}", context.address).into(),
        " · ".into(),
        format!("{}{position}", state.instrument).bold(),
    ];
    if state.paused {
        first.push("  PAUSED".black().on_yellow());
    }
    let link = match &state.link {
        Link::Connecting => Span::styled("connecting…", Style::new().fg(Color::Yellow)),
        Link::Live => Span::styled("live", Style::new().fg(Color::Green)),
        Link::Lost { error, retry_at } => {
            let retry = match retry_at {
                Some(at) => format!(
                    "retrying in {:.1} s",
                    at.saturating_duration_since(context.now).as_secs_f64()
                ),
                None => "reconnecting".to_owned(),
            };
            Span::styled(
                format!("connection lost: {error}; {retry}"),
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            )
        }
    };
    let sequence = state
        .summary
        .as_ref()
        .map_or_else(|| "-".to_owned(), |summary| summary.seq.to_string());
    let second = vec![
        link,
        format!(
            " · seq {sequence} · skipped {} · {} updates/s",
            state.skipped, context.updates_per_second
        )
        .into(),
    ];
    vec![Line::from(first), Line::from(second)]
}

/// One row of the ladder, its columns measured.
struct Row<'a> {
    level: &'a ExactLevel,
    /// The venue's name, marked `~` where its level was converted from another currency.
    venue: String,
    cumulative: String,
    /// The level's size, for the bar (a proportion).
    size: f64,
}

/// What follows the venue of a level converted from another currency.
const CONVERTED_MARK: char = '~';

/// The rows of one side from the best outwards, with their cumulative sizes (exact).
fn rows(levels: &[ExactLevel], depth: usize) -> Vec<Row<'_>> {
    let mut total = Some(FixedPoint::ZERO);
    levels
        .iter()
        .take(depth)
        .map(|level| {
            let amount = level.amount.parse::<FixedPoint>().ok();
            total = total
                .zip(amount)
                .and_then(|(sum, amount)| sum.raw().checked_add(amount.raw()))
                .map(FixedPoint::from_raw);
            Row {
                level,
                venue: match level.native_price.is_empty() {
                    true => level.exchange.clone(),
                    false => format!("{}{CONVERTED_MARK}", level.exchange),
                },
                cumulative: total
                    .map_or_else(|| "?".to_owned(), |sum| trim(&sum.to_string()).to_owned()),
                size: amount.map_or(0.0, FixedPoint::to_f64),
            }
        })
        .collect()
}

fn draw_ladder(frame: &mut Frame, state: &WatchState, area: Rect) {
    let live = state.link == Link::Live;
    let currency = match &state.summary {
        Some(summary) if !summary.currency.is_empty() => {
            let converted = summary.venue_quotes.iter().any(|q| !q.rate_pair.is_empty());
            let mark = match converted {
                true => format!(", {CONVERTED_MARK} converted"),
                false => String::new(),
            };
            // Sizes are said where they are not of the base coin: notionals.
            let sizes = match summary.amount_unit == summary.currency {
                true => format!(", sizes in {}", summary.amount_unit),
                false => String::new(),
            };
            format!(" in {}{sizes}{mark}", summary.currency)
        }
        _ => String::new(),
    };
    let lots = match &state.summary {
        Some(summary) if !matches!(summary.unit_size.as_str(), "" | "1") => {
            format!(", amounts in units of {}", summary.unit_size)
        }
        _ => String::new(),
    };
    let title = match &state.summary {
        Some(_) if !live => format!(" {}: last book received, not live ", state.instrument),
        _ => format!(
            " {}: top {}{currency}{lots} ",
            state.instrument, state.depth
        ),
    };
    let block = Block::bordered().title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(summary) = &state.summary else {
        let waiting = Paragraph::new("waiting for the first summary…".dark_gray());
        frame.render_widget(waiting, inner);
        return;
    };
    // The spread line, and the rest halved between the sides.
    let per_side = (inner.height.saturating_sub(2) / 2) as usize;
    let depth = state.depth.min(per_side);
    let asks = rows(&summary.asks, depth);
    let bids = rows(&summary.bids, depth);
    let all = || asks.iter().chain(&bids);
    let venue_width = column_width(all().map(|row| row.venue.as_str()), "venue");
    let price_width = column_width(all().map(|row| row.level.price.as_str()), "price");
    let size_width = column_width(all().map(|row| trim(&row.level.amount)), "size");
    let cumulative_width = column_width(all().map(|row| row.cumulative.as_str()), "total");
    let columns = venue_width + price_width + size_width + 3;
    let show_cumulative = inner.width as usize > columns + cumulative_width;
    let used = columns + (cumulative_width + 1) * usize::from(show_cumulative);
    let bar_width = (inner.width as usize).saturating_sub(used);
    let show_bars = bar_width >= MIN_BAR_WIDTH;
    let largest = all().map(|row| row.size).fold(0.0, f64::max);

    let line = |row: &Row, price_colour: Color| {
        let colour = venue_colour(&row.level.exchange);
        let mut spans = vec![
            Span::styled(
                format!("{:<venue_width$} ", row.venue),
                Style::new().fg(colour),
            ),
            Span::styled(
                format!("{:>price_width$} ", row.level.price),
                Style::new().fg(price_colour),
            ),
            Span::raw(format!("{:>size_width$} ", trim(&row.level.amount))),
        ];
        if show_cumulative {
            spans.push(Span::styled(
                format!("{:>cumulative_width$} ", row.cumulative),
                Style::new().fg(Color::DarkGray),
            ));
        }
        if show_bars && largest > 0.0 {
            let cells = ((row.size / largest) * bar_width as f64).round() as usize;
            spans.push(Span::styled(
                "█".repeat(cells.clamp(1, bar_width.max(1))),
                Style::new().fg(colour),
            ));
        }
        Line::from(spans)
    };
    let mut lines = Vec::with_capacity(depth * 2 + 2);
    let mut heading = vec![
        format!("{:<venue_width$} ", "venue").into(),
        format!("{:>price_width$} ", "price").into(),
        format!("{:>size_width$} ", "size").into(),
    ];
    if show_cumulative {
        heading.push(format!("{:>cumulative_width$} ", "total").into());
    }
    lines.push(Line::from(heading).add_modifier(Modifier::UNDERLINED));
    // Asks above, the best nearest the spread.
    for _ in asks.len()..depth {
        lines.push(Line::default());
    }
    lines.extend(asks.iter().rev().map(|row| line(row, Color::Red)));
    lines.push(spread_line(summary));
    lines.extend(bids.iter().map(|row| line(row, Color::Green)));
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The width of a column: its widest cell, or its heading.
fn column_width<'a>(cells: impl Iterator<Item = &'a str>, heading: &str) -> usize {
    cells
        .map(|cell| cell.chars().count())
        .max()
        .unwrap_or(0)
        .max(heading.len())
}

/// An exact decimal without the trailing zeros of its fraction (`1.50000000` → `1.5`).
fn trim(text: &str) -> &str {
    match text.split_once('.') {
        Some(_) => text.trim_end_matches('0').trim_end_matches('.'),
        None => text,
    }
}

/// The spread, in price and in basis points of the mid; a crossed or locked market said
/// plainly.
fn spread_line(summary: &ExactSummary) -> Line<'static> {
    let (Some(bid), Some(ask)) = (summary.bids.first(), summary.asks.first()) else {
        return Line::from("no spread: a side of the book is empty".yellow());
    };
    let best = |level: &ExactLevel| level.price.parse::<FixedPoint>().map(FixedPoint::to_f64);
    let basis_points = match (best(bid), best(ask)) {
        (Ok(bid), Ok(ask)) if bid + ask > 0.0 => (ask - bid) / ((ask + bid) / 2.0) * 10_000.0,
        _ => f64::NAN,
    };
    let spread = trim(&summary.spread).to_owned();
    if summary.spread.starts_with('-') {
        Line::from(format!(
            " CROSSED by {}: {} bid {} > {} ask {} ",
            spread.trim_start_matches('-'),
            bid.exchange,
            trim(&bid.price),
            ask.exchange,
            trim(&ask.price),
        ))
        .style(
            Style::new()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
        )
    } else if trim(&summary.spread) == "0" {
        Line::from(format!(
            " LOCKED: {} bid = {} ask = {} ",
            bid.exchange,
            ask.exchange,
            trim(&bid.price)
        ))
        .style(
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        )
    } else {
        Line::from(format!("── spread {spread} ({basis_points:.2} bp) ──")).bold()
    }
}

/// The venue panel's names and its columns' widths.
struct VenueColumns {
    names: Vec<String>,
    name: usize,
    bid: usize,
    ask: usize,
}

impl VenueColumns {
    fn of(quotes: &[VenueQuote]) -> VenueColumns {
        // A book converted from another currency is named with it: its best prices are
        // in it.
        let names: Vec<String> = quotes
            .iter()
            .map(|quote| match quote.rate_pair.is_empty() {
                true => quote.exchange.clone(),
                false => format!("{} {}", quote.exchange, quote.currency),
            })
            .collect();
        VenueColumns {
            name: column_width(names.iter().map(String::as_str), "venue"),
            bid: column_width(quotes.iter().map(|q| trim(&q.best_bid)), "bid"),
            ask: column_width(quotes.iter().map(|q| trim(&q.best_ask)), "ask"),
            names,
        }
    }

    /// The panel's width: its columns (state 11, age 8), their spaces and its borders.
    fn width(&self) -> u16 {
        (self.name + 1 + 11 + 1 + self.bid + 1 + self.ask + 1 + 8 + 2) as u16
    }
}

fn draw_venues(frame: &mut Frame, state: &WatchState, area: Rect) {
    let block = Block::bordered().title(" venues ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(summary) = &state.summary else {
        return;
    };
    let quotes = &summary.venue_quotes;
    let VenueColumns {
        names,
        name: name_width,
        bid: bid_width,
        ask: ask_width,
    } = VenueColumns::of(quotes);
    let mut lines = vec![
        Line::from(format!(
            "{:<name_width$} {:<11} {:>bid_width$} {:>ask_width$} {:>8}",
            "venue", "state", "bid", "ask", "age"
        ))
        .add_modifier(Modifier::UNDERLINED),
    ];
    lines.extend(
        quotes
            .iter()
            .zip(&names)
            .map(|(quote, name): (&VenueQuote, _)| {
                let side = |price: &str| match price.is_empty() {
                    true => "-".to_owned(),
                    false => trim(price).to_owned(),
                };
                Line::from(vec![
                    Span::styled(
                        format!("{name:<name_width$} "),
                        Style::new().fg(venue_colour(&quote.exchange)),
                    ),
                    Span::styled(format!("{:<11} ", quote.state), state_style(&quote.state)),
                    Span::raw(format!(
                        "{:>bid_width$} {:>ask_width$} {:>8}",
                        side(&quote.best_bid),
                        side(&quote.best_ask),
                        age(quote.book_age_ns)
                    )),
                ])
            }),
    );
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The size box's lines: what is asked (the quantity with a cursor while typed, the
/// side, raw or net of fees), then the answer: average and worst prices, filled and
/// notional, and a line for each venue it fills at.
/// The amount unit is the summary's (the service derives it from the instrument).
fn size_lines(size: &SizeBox, summary: Option<&ExactSummary>) -> Vec<Line<'static>> {
    let unit = summary.map_or("", |summary| summary.amount_unit.as_str());
    let (side, colour) = match size.side {
        Side::Sell => ("sell", Color::Red),
        _ => ("buy", Color::Green),
    };
    let cursor = if size.editing { "▏" } else { "" };
    let prices = match size.all_in {
        true => "  prices net of fees",
        false => "  raw prices",
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{side} "), Style::new().fg(colour).bold()),
        format!("{}{cursor} {unit}", size.text).bold(),
        prices.dark_gray(),
    ])];
    let answer = match &size.answer {
        _ if !size.available => {
            lines.push(Line::from(
                "quotes are asked over gRPC: mergebook watch --grpc HOST:PORT".yellow(),
            ));
            return lines;
        }
        None if size.editing => "enter asks the service what it costs".dark_gray().into(),
        None => "asking…".dark_gray().into(),
        Some(Err(error)) => Line::from(format!("refused: {error}").red()),
        Some(Ok(reply)) => {
            lines.extend(quote_lines(reply));
            lines.extend(fill_lines(reply));
            return lines;
        }
    };
    lines.push(answer);
    lines
}

/// The quote's prices, then its totals, exact as the service sends them; a line saying
/// so where nothing filled.
fn quote_lines(reply: &QuoteReply) -> Vec<Line<'static>> {
    if reply.average_price.is_empty() {
        return vec!["nothing to fill: the side is empty".yellow().into()];
    }
    let prices = Line::from(vec![
        Span::raw("average "),
        Span::raw(trim(&reply.average_price).to_owned()).bold(),
        Span::raw(format!(
            " · worst {} · seq {}",
            trim(&reply.worst_price),
            reply.seq
        )),
    ]);
    let mut totals = vec![Span::raw(format!(
        "filled {} · notional {}",
        trim(&reply.filled),
        trim(&reply.notional)
    ))];
    if reply.depth_exhausted {
        totals.push(" · the books ran out".yellow().bold());
    }
    vec![prices, Line::from(totals)]
}

/// A line for each venue the quote fills at: its amount, its levels taken, whether its
/// whole book was walked.
fn fill_lines(reply: &QuoteReply) -> impl Iterator<Item = Line<'static>> + '_ {
    let filling = || reply.venues.iter().filter(|fill| trim(&fill.filled) != "0");
    let name_width = column_width(filling().map(|fill| fill.exchange.as_str()), "");
    let amount_width = column_width(filling().map(|fill| trim(&fill.filled)), "");
    filling().map(move |fill| {
        let plural = if fill.levels == 1 { "" } else { "s" };
        let depth = if fill.full_depth { ", whole book" } else { "" };
        Line::from(vec![
            Span::styled(
                format!("  {:<name_width$} ", fill.exchange),
                Style::new().fg(venue_colour(&fill.exchange)),
            ),
            Span::raw(format!(
                "{:>amount_width$}  {} level{plural}{depth}",
                trim(&fill.filled),
                fill.levels
            )),
        ])
    })
}

/// A book's age: `-` before the first book, then ms below 10 s, then s.
fn age(nanos: u64) -> String {
    match nanos {
        0 => "-".to_owned(),
        n if n < 10_000_000_000 => format!("{} ms", n / 1_000_000),
        n => format!("{:.1} s", n as f64 * 1e-9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::proto::VenueQuote;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn level(exchange: &str, price: &str, amount: &str) -> ExactLevel {
        ExactLevel {
            exchange: exchange.into(),
            price: price.into(),
            amount: amount.into(),
            native_price: String::new(),
        }
    }

    fn quote(exchange: &str, state: &str, bid: &str, ask: &str, age_ms: u64) -> VenueQuote {
        VenueQuote {
            exchange: exchange.into(),
            state: state.into(),
            best_bid: bid.into(),
            best_ask: ask.into(),
            book_age_ns: age_ms * 1_000_000,
            ..VenueQuote::default()
        }
    }

    /// Binance and Bitstamp merged, Kraken stale (left out of the ladder).
    fn summary() -> ExactSummary {
        ExactSummary {
            instrument: "ETH/BTC".into(),
            seq: 42,
            ts_ns: 1,
            spread: "0.00001000".into(),
            bids: vec![
                level("binance", "0.06820000", "1.50000000"),
                level("bitstamp", "0.06819000", "3.00000000"),
                level("binance", "0.06818000", "0.25000000"),
            ],
            asks: vec![
                level("bitstamp", "0.06821000", "2.00000000"),
                level("binance", "0.06822000", "6.00000000"),
            ],
            venues: Default::default(),
            venue_quotes: vec![
                quote("binance", "synced", "0.06820000", "0.06822000", 12),
                quote("bitstamp", "synced", "0.06819000", "0.06821000", 40),
                quote("kraken", "stale", "0.06700000", "0.06900000", 12_500),
            ],
            currency: String::new(),
            amount_unit: "ETH".into(),
            ..ExactSummary::default()
        }
    }

    fn state(summary: ExactSummary) -> WatchState {
        let mut state = WatchState::new(None);
        state.set_instruments(vec!["ETH/BTC".into(), "BTC/USD".into()]);
        state.stream_started();
        state.on_summary(summary, Instant::now());
        state
    }

    /// The screen's text, a line a row, and its buffer for the colours.
    fn render(
        state: &WatchState,
        width: u16,
        height: u16,
    ) -> (Vec<String>, ratatui::buffer::Buffer) {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        let context = Context {
            address: "127.0.0.1:50051",
            now: Instant::now(),
            updates_per_second: 7,
        };
        terminal.draw(|frame| draw(frame, state, &context)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let lines = (0..height)
            .map(|y| {
                let row: String = (0..width).map(|x| buffer[(x, y)].symbol()).collect();
                row.trim_end().to_owned()
            })
            .collect();
        (lines, buffer)
    }

    fn find(lines: &[String], text: &str) -> usize {
        lines
            .iter()
            .position(|line| line.contains(text))
            .unwrap_or_else(|| panic!("{text:?} not on the screen:\n{}", lines.join("\n")))
    }

    /// The colour of the first cell of `text` on the screen.
    fn colour_of(lines: &[String], buffer: &ratatui::buffer::Buffer, text: &str) -> Color {
        let y = find(lines, text);
        let byte = lines[y].find(text).unwrap();
        let x = lines[y][..byte].chars().count();
        buffer[(x as u16, y as u16)].fg
    }

    #[test]
    fn a_summary_draws_its_ladder_spread_and_venues() {
        let (lines, buffer) = render(&state(summary()), 120, 20);
        let screen = lines.join("\n");
        // Asks above (the best nearest the spread), bids below, the best first.
        let ask_far = find(&lines, "0.06822000");
        let ask_best = find(&lines, "0.06821000");
        let spread = find(&lines, "spread 0.00001 (1.47 bp)");
        let bid_best = find(&lines, "0.06820000");
        let bid_far = find(&lines, "0.06818000");
        assert!(
            ask_far < ask_best && ask_best < spread && spread < bid_best && bid_best < bid_far,
            "{screen}"
        );
        // Sizes without trailing zeros, and the exact cumulative size.
        assert!(
            lines[bid_far].contains(" 0.25 ") && lines[bid_far].contains(" 4.75 "),
            "{screen}"
        );
        assert!(
            lines[ask_far].contains(" 6 ") && lines[ask_far].contains(" 8 "),
            "{screen}"
        );
        // The largest level has the longest bar.
        let bar = |line: &str| line.matches('█').count();
        assert!(
            bar(&lines[ask_far]) > bar(&lines[bid_far]) && bar(&lines[bid_far]) >= 1,
            "{screen}"
        );
        // Each venue in its colour, in the ladder and in the panel.
        assert_eq!(colour_of(&lines, &buffer, "bitstamp"), Color::Green);
        assert_eq!(colour_of(&lines, &buffer, "binance"), Color::Yellow);
        // The venue panel: states, own best prices and ages.
        let kraken = find(&lines, "kraken");
        assert!(
            lines[kraken].contains("stale")
                && lines[kraken].contains("0.067")
                && lines[kraken].contains("12.5 s"),
            "{screen}"
        );
        assert_eq!(colour_of(&lines, &buffer, "stale"), Color::Yellow);
        assert!(
            lines[find(&lines, "bitstamp synced")].contains("40 ms"),
            "{screen}"
        );
        // The header: instrument, its place, the sequence and the rates.
        assert!(lines[0].contains("ETH/BTC (1/2)"), "{screen}");
        assert!(
            lines[1].contains("live · seq 42 · skipped 0 · 7 updates/s"),
            "{screen}"
        );
    }

    #[test]
    fn a_crossed_or_locked_book_is_said_plainly() {
        let mut crossed = summary();
        crossed.spread = "-0.00002000".into();
        crossed.asks[0].price = "0.06818000".into();
        let (lines, buffer) = render(&state(crossed), 120, 20);
        let row = find(
            &lines,
            "CROSSED by 0.00002: binance bid 0.0682 > bitstamp ask 0.06818",
        );
        let x = lines[row].find("CROSSED").unwrap() as u16;
        assert_eq!(buffer[(x, row as u16)].bg, Color::Red);

        let mut locked = summary();
        locked.spread = "0.00000000".into();
        locked.asks[0].price = "0.06820000".into();
        let (lines, _) = render(&state(locked), 120, 20);
        find(&lines, "LOCKED: binance bid = bitstamp ask = 0.0682");
    }

    #[test]
    fn a_narrow_terminal_drops_the_bars_then_says_it_is_too_small() {
        let (lines, _) = render(&state(summary()), 40, 24);
        let screen = lines.join("\n");
        assert!(!screen.contains('█'), "{screen}");
        // The venue panel goes below the ladder.
        assert!(
            find(&lines, "kraken") > find(&lines, "0.06818000"),
            "{screen}"
        );
        let (lines, _) = render(&state(summary()), 30, 24);
        assert!(
            lines[0].starts_with("terminal too small (30x24)"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_lost_connection_is_shown_with_the_last_book() {
        let mut state = state(summary());
        state.lost(
            "connection refused".into(),
            Some(Instant::now() + std::time::Duration::from_secs(2)),
        );
        let (lines, _) = render(&state, 120, 20);
        let screen = lines.join("\n");
        assert!(
            lines[1].starts_with("connection lost: connection refused; retrying in"),
            "{screen}"
        );
        find(&lines, "ETH/BTC: last book received, not live");
        find(&lines, "0.06821000");
    }

    #[test]
    fn converted_levels_are_marked_and_their_venues_named_with_their_currency() {
        let mut converted = summary();
        converted.currency = "BTC".into();
        converted.bids[0].native_price = "0.06821000".into();
        converted.venue_quotes[0].currency = "ETH".into();
        converted.venue_quotes[0].rate_pair = "BTC/ETH".into();
        converted.venue_quotes[2].state = "no-rate".into();
        let (lines, buffer) = render(&state(converted), 120, 20);
        let screen = lines.join("\n");
        find(&lines, "ETH/BTC: top 10 in BTC, ~ converted");
        assert!(
            lines[find(&lines, "0.06820000")].contains("binance~"),
            "{screen}"
        );
        assert!(!lines[find(&lines, "0.06818000")].contains('~'), "{screen}");
        find(&lines, "binance ETH synced");
        assert_eq!(colour_of(&lines, &buffer, "no-rate"), Color::Yellow);
    }

    #[test]
    fn notional_sizes_are_named_in_the_title() {
        let mut notional = summary();
        notional.currency = "USD".into();
        notional.amount_unit = "USD".into();
        let (lines, _) = render(&state(notional), 120, 20);
        find(&lines, "ETH/BTC: top 10 in USD, sizes in USD ");
    }

    /// Two books of one venue: each named `venue:symbol`, in its venue's colour, and the
    /// venue panel wide enough for the longest name's whole row.
    #[test]
    fn a_venue_s_two_books_are_named_apart_and_fit_the_venue_panel() {
        let mut two_books = summary();
        two_books.bids[1].exchange = "coinbase:BTC-PERP-INTX".into();
        two_books.venue_quotes[1] = quote(
            "coinbase:BTC-PERP-INTX",
            "synced",
            "90006.50000000",
            "90014.25000000",
            40,
        );
        two_books.venue_quotes[2] = quote("coinbase:BTC-USDC", "synced", "1", "2", 12);
        two_books.venue_quotes[2].rate_pair = "USDC/USD".into();
        two_books.venue_quotes[2].currency = "USDC".into();
        let (lines, buffer) = render(&state(two_books), 130, 20);
        let screen = lines.join("\n");
        let row = &lines[find(&lines, "coinbase:BTC-PERP-INTX synced")];
        assert!(row.contains("90006.5 90014.25    40 ms"), "{screen}");
        assert!(
            lines[find(&lines, "coinbase:BTC-USDC USDC synced")].contains("12 ms"),
            "{screen}"
        );
        let coinbase = venue_colour("coinbase");
        assert_ne!(coinbase, Color::White);
        assert_eq!(colour_of(&lines, &buffer, "coinbase:BTC-USDC"), coinbase);
    }

    /// The size box: what is asked, the answer's prices and totals, and a line for each
    /// venue it fills at, in the venue's colour; a refusal said as the service said it.
    #[test]
    fn the_size_box_shows_the_quote_and_the_venues_it_fills_at() {
        use crate::publish::proto::VenueFill;
        use crate::viewer::state::Action;
        let fill = |exchange: &str, filled: &str, levels: u32, full_depth: bool| VenueFill {
            exchange: exchange.into(),
            merged: true,
            full_depth,
            filled: filled.into(),
            levels,
            ..VenueFill::default()
        };
        let mut state = state(summary());
        state.act(Action::EditSize);
        for key in "2.5".chars() {
            state.act(Action::TypeSize(key));
        }
        let (lines, _) = render(&state, 120, 24);
        find(&lines, "buy 2.5▏ ETH  raw prices");
        find(&lines, "type a quantity · enter ask");
        state.act(Action::EnterSize);
        state.act(Action::ToggleSide);
        let (generation, _) = state.quote_due(Instant::now()).expect("asked");
        let reply = QuoteReply {
            instrument: "ETH/BTC".into(),
            seq: 42,
            filled: "2.50000000".into(),
            notional: "0.1705100000000000".into(),
            average_price: "0.06820400".into(),
            worst_price: "0.06818000".into(),
            depth_exhausted: false,
            venues: vec![
                fill("binance", "1.75000000", 2, true),
                fill("bitstamp", "0.75000000", 1, false),
                fill("kraken", "0.00000000", 0, false),
            ],
            all_in: false,
        };
        state.on_quote(generation, Ok(reply));
        let (lines, buffer) = render(&state, 120, 24);
        let screen = lines.join("\n");
        let asked = find(&lines, "sell 2.5 ETH  raw prices");
        let prices = find(&lines, "average 0.068204 · worst 0.06818 · seq 42");
        let totals = find(&lines, "filled 2.5 · notional 0.17051");
        assert_eq!((prices, totals), (asked + 1, asked + 2), "{screen}");
        assert!(
            lines[asked + 3].contains("binance  1.75  2 levels, whole book"),
            "{screen}"
        );
        assert!(
            lines[asked + 4].contains("bitstamp 0.75  1 level"),
            "{screen}"
        );
        assert!(!lines[asked + 5].contains("kraken"), "{screen}");
        assert_eq!(
            colour_of(&lines, &buffer, "bitstamp 0.75"),
            venue_colour("bitstamp")
        );
        find(&lines, "s size");

        state.act(Action::ToggleAllIn);
        let (generation, _) = state.quote_due(Instant::now()).expect("asked again");
        state.on_quote(generation, Err("instrument ETH/BTC: no book yet".into()));
        let (lines, _) = render(&state, 120, 24);
        find(&lines, "sell 2.5 ETH  prices net of fees");
        find(&lines, "refused: instrument ETH/BTC: no book yet");
    }
}
