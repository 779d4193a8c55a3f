//! `mergebook watch`: a running mergebook's consolidated book in a terminal, over its
//! `BookSummaryExact` gRPC stream or from NATS, where the service publishes the same
//! message (exact decimals either way). Three parts: the state of what is shown
//! (`state.rs`, pure), the drawing of it (`render.rs`, ratatui), and here the loop that
//! feeds the state from the keyboard and the source, asks the size box's quotes, and
//! redraws: a lost connection is shown and retried, never an exit.

pub mod render;
pub mod state;

use self::render::Context;
use self::state::{Action, SizeBox, WatchState};
use crate::publish::proto::orderbook_aggregator_client::OrderbookAggregatorClient;
use crate::publish::proto::{Empty, ExactSummary, QuoteReply, SummaryRequest};
use prost::Message;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tonic::transport::Endpoint;

/// How often the screen is redrawn (the ages and rates move; summaries may come faster
/// than a terminal can show).
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// The retries of a lost connection: doubling from the first to the last.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("the gRPC address {0:?} is not a host:port")]
    Address(String),
    #[error("NATS credentials: {0}")]
    Credentials(std::io::Error),
    #[error("needs a terminal: {0}")]
    Terminal(std::io::Error),
}

/// Where the summaries come from.
pub enum Source {
    /// A service's gRPC address (`host:port`).
    Grpc(String),
    /// NATS servers (`nats://host:port`), the services' subject prefix, and the
    /// credentials file if the servers want one.
    Nats {
        url: String,
        prefix: String,
        credentials: Option<std::path::PathBuf>,
    },
}

/// A source made ready to follow.
#[derive(Clone)]
enum Connector {
    Grpc(Box<Endpoint>),
    Nats(async_nats::Client, String),
}

/// What the connection task tells the loop.
enum Update {
    Instruments(Vec<String>),
    Started,
    Summary(Box<ExactSummary>),
    /// The answer to the size box's quote asked at a generation.
    Quote(u64, Result<QuoteReply, String>),
    Lost {
        error: String,
        retry_at: Option<Instant>,
    },
}

/// Runs the viewer on this terminal until a quit key.
pub fn run(source: Source, instrument: Option<String>) -> Result<(), WatchError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(WatchError::Terminal)?;
    let (shown, connector) = runtime.block_on(connector(source))?;
    let mut terminal = ratatui::try_init().map_err(WatchError::Terminal)?;
    let result = runtime.block_on(event_loop(&mut terminal, &shown, connector, instrument));
    ratatui::restore();
    result.map_err(WatchError::Terminal)
}

/// The source's name on the screen, and its connector. A NATS client connects (and
/// reconnects) in the background; `follow_nats` tells the loop how it stands.
async fn connector(source: Source) -> Result<(String, Connector), WatchError> {
    match source {
        Source::Grpc(address) => {
            let endpoint = Endpoint::from_shared(format!("http://{address}"))
                .map_err(|_| WatchError::Address(address.clone()))?
                .connect_timeout(CONNECT_TIMEOUT)
                .http2_keep_alive_interval(Duration::from_secs(5))
                .keep_alive_timeout(Duration::from_secs(5));
            Ok((address, Connector::Grpc(Box::new(endpoint))))
        }
        Source::Nats {
            url,
            prefix,
            credentials,
        } => {
            let options = match credentials {
                Some(file) => async_nats::ConnectOptions::with_credentials_file(file)
                    .await
                    .map_err(WatchError::Credentials)?,
                None => async_nats::ConnectOptions::new(),
            };
            let client = options
                .name("mergebook watch")
                .retry_on_initial_connect()
                .max_reconnects(None)
                .reconnect_delay_callback(|attempts| {
                    (RETRY_FIRST * 2u32.saturating_pow(attempts.min(4) as u32)).min(RETRY_MAX)
                })
                .connect(url.as_str())
                .await
                .map_err(|error| WatchError::Address(format!("{url}: {error}")))?;
            Ok((url, Connector::Nats(client, prefix)))
        }
    }
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    address: &str,
    connector: Connector,
    instrument: Option<String>,
) -> std::io::Result<()> {
    // The keyboard, read on a thread of its own (crossterm's read blocks).
    let (key_sender, mut keys) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("watch-keys".into())
        .spawn(move || {
            while let Ok(event) = event::read() {
                if key_sender.send(event).is_err() {
                    return;
                }
            }
        })?;
    let mut state = WatchState::new(instrument);
    // Quotes go over a channel of their own, connected when the first is asked; NATS
    // carries none.
    let quotes = match &connector {
        Connector::Grpc(endpoint) => Some(OrderbookAggregatorClient::new(endpoint.connect_lazy())),
        Connector::Nats(..) => None,
    };
    state.size.available = quotes.is_some();
    let (update_sender, mut updates) = mpsc::channel(256);
    let mut follower = tokio::spawn(follow(
        connector.clone(),
        state.instrument.clone(),
        update_sender.clone(),
    ));
    let mut redraw = tokio::time::interval(REDRAW_EVERY);
    loop {
        tokio::select! {
            _ = redraw.tick() => {
                let now = Instant::now();
                let due = quotes.as_ref().zip(state.quote_due(now));
                if let Some((client, (generation, request))) = due {
                    let mut client = client.clone();
                    let answers = update_sender.clone();
                    tokio::spawn(async move {
                        let answer = client.quote(request).await;
                        let answer = answer.map(tonic::Response::into_inner).map_err(status_text);
                        let _ = answers.send(Update::Quote(generation, answer)).await;
                    });
                }
                let context = Context {
                    address,
                    now,
                    updates_per_second: state.updates_per_second(now),
                };
                terminal.draw(|frame| render::draw(frame, &state, &context))?;
            }
            Some(event) = keys.recv() => {
                let Some(action) = action_of(&event, &state.size) else { continue };
                if action == Action::Quit {
                    break;
                }
                // A gRPC stream is one instrument's: another needs another stream. NATS
                // brings every instrument already.
                let switched = state.act(action);
                if let (Some(instrument), Connector::Grpc(_)) = (switched, &connector) {
                    follower.abort();
                    state.link = state::Link::Connecting;
                    follower = tokio::spawn(follow(connector.clone(), instrument, update_sender.clone()));
                }
                redraw.reset_immediately();
            }
            Some(update) = updates.recv() => match update {
                Update::Instruments(names) => state.set_instruments(names),
                Update::Started => state.stream_started(),
                Update::Summary(summary) => state.on_summary(*summary, Instant::now()),
                Update::Quote(generation, answer) => state.on_quote(generation, answer),
                Update::Lost { error, retry_at } => state.lost(error, retry_at),
            },
        }
    }
    follower.abort();
    Ok(())
}

/// The action of a key press, if it has one. Resizes redraw on the next tick. While the
/// size box is typed into, keys go to it (Esc closes it; only Ctrl-C quits).
fn action_of(event: &Event, size: &SizeBox) -> Option<Action> {
    let Event::Key(key) = event else { return None };
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        return Some(Action::Quit);
    }
    let either = match key.code {
        KeyCode::Char('b') => Some(Action::ToggleSide),
        KeyCode::Char('f') => Some(Action::ToggleAllIn),
        KeyCode::Esc if size.shown() => Some(Action::CloseSize),
        _ => None,
    };
    if size.editing {
        return either.or(match key.code {
            KeyCode::Char(typed) => Some(Action::TypeSize(typed)),
            KeyCode::Backspace => Some(Action::EraseSize),
            KeyCode::Enter => Some(Action::EnterSize),
            _ => None,
        });
    }
    if either.is_some() {
        return either;
    }
    Some(match key.code {
        KeyCode::Char('q') | KeyCode::Esc => Action::Quit,
        KeyCode::Char('s') => Action::EditSize,
        KeyCode::Right | KeyCode::Tab | KeyCode::Char('n') => Action::NextInstrument,
        KeyCode::Left | KeyCode::BackTab | KeyCode::Char('N') => Action::PreviousInstrument,
        KeyCode::Char('+' | '=') | KeyCode::Up => Action::MoreDepth,
        KeyCode::Char('-') | KeyCode::Down => Action::LessDepth,
        KeyCode::Char('p' | ' ') => Action::TogglePause,
        _ => return None,
    })
}

/// Follows `instrument`'s summaries for as long as the loop wants them.
async fn follow(connector: Connector, instrument: String, updates: mpsc::Sender<Update>) {
    match connector {
        Connector::Grpc(endpoint) => follow_grpc(*endpoint, instrument, updates).await,
        Connector::Nats(client, prefix) => follow_nats(client, prefix, updates).await,
    }
}

/// From NATS: every instrument's subject (the instruments are the ones seen); the loop
/// keeps the one it shows. The client reconnects by itself, and says so.
async fn follow_nats(client: async_nats::Client, prefix: String, updates: mpsc::Sender<Update>) {
    use async_nats::connection::State;
    use futures_util::StreamExt;
    let subject = crate::publish::nats::book_subject(&prefix, ">");
    let mut subscription = match client.subscribe(subject).await {
        Ok(subscription) => subscription,
        Err(error) => {
            let error = error.to_string();
            let _ = updates
                .send(Update::Lost {
                    error,
                    retry_at: None,
                })
                .await;
            return;
        }
    };
    // None: not told yet (the first tick tells it).
    let mut state = None;
    let mut instruments = BTreeSet::new();
    let mut poll = tokio::time::interval(REDRAW_EVERY);
    loop {
        let message = tokio::select! {
            message = subscription.next() => message,
            _ = poll.tick() => {
                // The link as the client sees it: told when it changes.
                let now = client.connection_state();
                if state.as_ref() != Some(&now) {
                    let update = match now {
                        State::Connected => Update::Started,
                        _ => Update::Lost { error: "NATS disconnected".into(), retry_at: None },
                    };
                    state = Some(now);
                    let _ = updates.send(update).await;
                }
                continue;
            }
        };
        let Some(message) = message else { return };
        let Ok(summary) = ExactSummary::decode(message.payload.as_ref()) else {
            continue; // not a summary in protobuf (a service publishing JSON)
        };
        if state != Some(State::Connected) {
            state = Some(State::Connected);
            let _ = updates.send(Update::Started).await;
        }
        if instruments.insert(summary.instrument.clone()) {
            let names = instruments.iter().cloned().collect();
            let _ = updates.send(Update::Instruments(names)).await;
        }
        if updates
            .send(Update::Summary(Box::new(summary)))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// From a service's gRPC port: the instruments first, then the stream; a lost connection
/// is told and retried, the wait doubling from `RETRY_FIRST` to `RETRY_MAX` and starting
/// over once a stream ran.
async fn follow_grpc(endpoint: Endpoint, instrument: String, updates: mpsc::Sender<Update>) {
    let mut retry = RETRY_FIRST;
    loop {
        let error = match stream(&endpoint, &instrument, &updates, &mut retry).await {
            Ok(()) => "the service ended the stream".to_owned(),
            Err(error) => error,
        };
        let retry_at = Some(Instant::now() + retry);
        if updates
            .send(Update::Lost { error, retry_at })
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(RETRY_MAX);
    }
}

async fn stream(
    endpoint: &Endpoint,
    instrument: &str,
    updates: &mpsc::Sender<Update>,
    retry: &mut Duration,
) -> Result<(), String> {
    let channel = endpoint.connect().await.map_err(|error| {
        use std::error::Error;
        // tonic's "transport error" alone says little: its source says what failed.
        error
            .source()
            .map_or_else(|| error.to_string(), |source| source.to_string())
    })?;
    let mut client = OrderbookAggregatorClient::new(channel);
    let names = client.instruments(Empty {}).await.map_err(status_text)?;
    let _ = updates
        .send(Update::Instruments(names.into_inner().names))
        .await;
    let request = SummaryRequest {
        instrument: instrument.to_owned(),
        ..Default::default()
    };
    let mut summaries = client
        .book_summary_exact(request)
        .await
        .map_err(status_text)?
        .into_inner();
    let _ = updates.send(Update::Started).await;
    *retry = RETRY_FIRST;
    while let Some(summary) = summaries.message().await.map_err(status_text)? {
        if updates
            .send(Update::Summary(Box::new(summary)))
            .await
            .is_err()
        {
            return Ok(());
        }
    }
    Ok(())
}

fn status_text(status: tonic::Status) -> String {
    match status.message() {
        "" => format!("{:?}", status.code()),
        message => message.to_owned(),
    }
}
