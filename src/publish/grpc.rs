//! gRPC (tonic): `orderbook.OrderbookAggregator` (see `proto/orderbook.proto`).
//!
//! Each client stream reads the instrument's latest summary at its own pace: a client that
//! reads slowly skips summaries and one that stops reading holds only its own buffer (the
//! summary it was sent, in HTTP/2's send buffer, bounded by the client's flow-control
//! window and hyper's per-stream cap); the merger and other clients never wait for it.
//! At most `grpc.max_clients` streams are served at once; more are refused. A connection
//! gives its place back when it has held no stream open for `grpc.handshake_timeout_ms`
//! (`OpenStreams`): a client cannot keep places by connecting and asking for nothing.

use crate::config::Config;
use crate::merger::quote::{QuoteError, QuoteSender};
use crate::merger::summary::Summary;
use crate::metrics::Metrics;
use futures_util::Stream;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::{Request, Response, Status};

use crate::publish::catalog::{Catalog, Listed};
use crate::publish::proto;
use proto::orderbook_aggregator_server::{OrderbookAggregator, OrderbookAggregatorServer};

pub struct Aggregator {
    catalog: Catalog,
    clients: Arc<ClientLimit>,
    quotes: QuoteSender,
    /// `orderbook_quotes_total` and `orderbook_quote_duration_seconds`.
    quote_outcomes: prometheus::IntCounterVec,
    quote_seconds: prometheus::Histogram,
}

/// The streams open at once, at most `config.grpc_max_clients`.
struct ClientLimit {
    open: AtomicUsize,
    max: usize,
    gauge: prometheus::IntGauge,
    rejected: prometheus::IntCounter,
    skipped: prometheus::IntCounter,
    /// A client retrying at once must not flood the log (the counter counts them all).
    refusal_log: std::sync::Mutex<crate::log_limit::LogLimiter>,
}

/// One open stream's place under the limit, given back when the stream is dropped.
struct ClientSlot(Arc<ClientLimit>);

impl ClientLimit {
    fn new(max: usize, metrics: &Metrics) -> Arc<Self> {
        Arc::new(Self {
            open: AtomicUsize::new(0),
            max,
            gauge: metrics.grpc_clients.clone(),
            rejected: metrics.grpc_clients_rejected.clone(),
            skipped: metrics.grpc_summaries_skipped.clone(),
            refusal_log: std::sync::Mutex::new(crate::log_limit::LogLimiter::per_second()),
        })
    }

    fn admit(self: &Arc<Self>) -> Result<ClientSlot, Status> {
        let admitted = self
            .open
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |open| {
                (open < self.max).then_some(open + 1)
            });
        match admitted {
            Ok(_) => {
                // inc/dec, not set(open): concurrent admissions would set stale values.
                self.gauge.inc();
                Ok(ClientSlot(Arc::clone(self)))
            }
            Err(_) => {
                self.rejected.inc();
                let now = crate::clock::monotonic_ns();
                let allowed = self.refusal_log.lock().map(|mut log| log.allow(now));
                if let Ok(Some(suppressed)) = allowed {
                    tracing::warn!(
                        max_clients = self.max,
                        suppressed,
                        "gRPC stream refused: grpc.max_clients reached"
                    );
                }
                Err(Status::resource_exhausted(format!(
                    "at most {} streams at once (grpc.max_clients)",
                    self.max
                )))
            }
        }
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
        self.0.gauge.dec();
    }
}

type SummaryStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Every summary published after the call, latest value first, as `convert` makes it.
/// The stream holds `slot` until the client goes.
///
/// A client that reads fewer summaries than are published gets the latest one when it is
/// ready: what it skipped is counted (sequences are consecutive). That is what a
/// latest-value stream is for (a screen refreshing 30 times a second skips most of a busy
/// book's summaries), so it is logged at debug level, once a stream.
fn stream_of<T: Send + 'static>(
    mut latest: watch::Receiver<Arc<Summary>>,
    slot: ClientSlot,
    convert: impl Fn(&Summary) -> T + Send + 'static,
) -> SummaryStream<T> {
    latest.mark_changed(); // send the current book at once, if there is one
    let sent = Sent {
        last: 0,
        skipped_before: false,
    };
    Box::pin(futures_util::stream::unfold(
        (latest, convert, slot, sent),
        |(mut latest, convert, slot, mut sent)| async move {
            loop {
                latest.changed().await.ok()?;
                let summary = latest.borrow_and_update().clone();
                if summary.sequence == 0 {
                    continue;
                }
                let skipped = summary.sequence.saturating_sub(sent.last + 1);
                if sent.last > 0 && skipped > 0 {
                    if !sent.skipped_before {
                        tracing::debug!(
                            sent = sent.last,
                            latest = summary.sequence,
                            "gRPC client reads fewer summaries than are published: it gets \
                             the latest and skips the rest (orderbook_grpc_summaries_skipped_total)"
                        );
                        sent.skipped_before = true;
                    }
                    slot.0.skipped.inc_by(skipped);
                }
                sent.last = summary.sequence;
                return Some((Ok(convert(&summary)), (latest, convert, slot, sent)));
            }
        },
    ))
}

/// What a stream sent: the last summary's sequence, and whether it ever skipped one.
struct Sent {
    last: u64,
    skipped_before: bool,
}

#[tonic::async_trait]
impl OrderbookAggregator for Aggregator {
    type BookSummaryStream = SummaryStream<proto::Summary>;
    type BookSummaryExactStream = SummaryStream<proto::ExactSummary>;

    async fn book_summary(
        &self,
        _: Request<proto::Empty>,
    ) -> Result<Response<Self::BookSummaryStream>, Status> {
        let listed = self.listed("")?;
        let slot = self.clients.admit()?;
        let instrument = listed.instrument;
        Ok(Response::new(stream_of(
            listed.summaries,
            slot,
            move |summary| proto::legacy_summary(&instrument, summary),
        )))
    }

    async fn book_summary_exact(
        &self,
        request: Request<proto::SummaryRequest>,
    ) -> Result<Response<Self::BookSummaryExactStream>, Status> {
        let request = request.into_inner();
        let listed = self.listed(&request.instrument)?;
        let slot = self.clients.admit()?;
        let instrument = listed.instrument;
        let stream = stream_of(listed.summaries, slot, move |summary| {
            proto::exact_summary(&instrument, summary, request.all_in)
        });
        Ok(Response::new(stream))
    }

    async fn book(
        &self,
        request: Request<proto::SummaryRequest>,
    ) -> Result<Response<proto::ExactSummary>, Status> {
        let request = request.into_inner();
        let listed = self.listed(&request.instrument)?;
        let instrument = &listed.instrument;
        let summary = Arc::clone(&listed.summaries.borrow());
        if summary.sequence == 0 {
            return Err(Status::unavailable(format!(
                "no summary of {:?} yet: none of its venues has sent a book",
                instrument.name
            )));
        }
        Ok(Response::new(proto::exact_summary(
            instrument,
            &summary,
            request.all_in,
        )))
    }

    async fn quote(
        &self,
        request: Request<proto::QuoteRequest>,
    ) -> Result<Response<proto::QuoteReply>, Status> {
        let started = std::time::Instant::now();
        let answer = self.answer_quote(request.into_inner()).await;
        let outcome = match &answer {
            Ok(_) => {
                self.quote_seconds.observe(started.elapsed().as_secs_f64());
                "answered"
            }
            Err(status) => match status.code() {
                tonic::Code::ResourceExhausted => "overloaded",
                tonic::Code::Unavailable => "unavailable",
                _ => "invalid",
            },
        };
        self.quote_outcomes.with_label_values(&[outcome]).inc();
        answer
    }

    async fn instruments(
        &self,
        _: Request<proto::Empty>,
    ) -> Result<Response<proto::InstrumentList>, Status> {
        let listing = Arc::clone(&self.catalog.borrow());
        Ok(Response::new(proto::InstrumentList {
            names: (listing.iter())
                .map(|listed| listed.instrument.name.clone())
                .collect(),
        }))
    }
}

impl Aggregator {
    fn new(
        config: &Config,
        catalog: Catalog,
        quotes: QuoteSender,
        metrics: &Metrics,
    ) -> Aggregator {
        Aggregator {
            clients: ClientLimit::new(config.grpc_max_clients, metrics),
            catalog,
            quotes,
            quote_outcomes: metrics.quotes.clone(),
            quote_seconds: metrics.quote_seconds.clone(),
        }
    }

    async fn answer_quote(
        &self,
        request: proto::QuoteRequest,
    ) -> Result<Response<proto::QuoteReply>, Status> {
        let listed = self.listed(&request.instrument)?;
        let instrument = &listed.instrument;
        let ask = proto::quote_request(listed.slot, &request).map_err(Status::invalid_argument)?;
        match self.quotes.ask(ask).await {
            Ok(quote) => Ok(Response::new(proto::quote_reply(instrument, &ask, &quote))),
            Err(error @ QuoteError::Delisted) => Err(Status::not_found(error.to_string())),
            Err(error @ QuoteError::Overloaded) => {
                Err(Status::resource_exhausted(error.to_string()))
            }
            Err(error @ QuoteError::NotionalOfNotionals) => {
                Err(Status::invalid_argument(error.to_string()))
            }
            Err(error @ (QuoteError::NoSummary | QuoteError::Stopped)) => {
                Err(Status::unavailable(error.to_string()))
            }
        }
    }

    /// The listed instrument a request names (empty: the first), or NOT_FOUND.
    fn listed(&self, wanted: &str) -> Result<Listed, Status> {
        let listing = self.catalog.borrow();
        let listed = match wanted.is_empty() {
            true => listing.first(),
            false => listing.find(wanted),
        };
        listed
            .cloned()
            .ok_or_else(|| Status::not_found(unknown_instrument(wanted)))
    }
}

/// The answer to a request for an instrument not configured: the name echoed as far as a
/// configured one could go (what a client sent is not written back whole).
fn unknown_instrument(wanted: &str) -> String {
    const ECHOED: usize = 40;
    match wanted.char_indices().nth(ECHOED) {
        Some((end, _)) => format!("no instrument {:?}…", &wanted[..end]),
        None => format!("no instrument {wanted:?}"),
    }
}

/// How often an idle connection is pinged, and how long its answer may take: a peer that
/// vanished without closing is dropped, and its stream's place freed.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request a client may send: a `SummaryRequest` is an instrument's name (at
/// most 32 characters), so 1 KiB is ample, and nothing larger is read into memory.
const MAX_REQUEST_BYTES: usize = 1024;
/// The largest message of a reflection stream: a host and a file or symbol name.
const MAX_REFLECTION_REQUEST_BYTES: usize = 4096;
/// The most header bytes of one request (HTTP/2's header list).
const MAX_HEADER_BYTES: u32 = 16 * 1024;

/// Adds gRPC server reflection (v1, and v1alpha for older clients), so grpcurl, grpcui
/// and Postman list and call the services without the proto file.
/// A reflection request names a file or a symbol: each message of its stream is held to
/// `MAX_REFLECTION_REQUEST_BYTES`, not tonic's 4 MiB.
fn with_reflection(routes: tonic::service::Routes) -> tonic::service::Routes {
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
    };
    // The descriptors are compiled in and checked by the build: building cannot fail.
    let v1 = reflection().build_v1().expect("valid descriptors");
    let v1alpha = reflection().build_v1alpha().expect("valid descriptors");
    routes
        .add_service(v1.max_decoding_message_size(MAX_REFLECTION_REQUEST_BYTES))
        .add_service(v1alpha.max_decoding_message_size(MAX_REFLECTION_REQUEST_BYTES))
}

/// Serves until the task is aborted.
pub async fn serve(
    listener: TcpListener,
    config: Arc<Config>,
    catalog: Catalog,
    quotes: QuoteSender,
    metrics: &Metrics,
) {
    // What may wait for a client that reads slower than summaries come (its stream holds
    // only the latest): half the budget in HTTP/2's send buffer, in the service, and half
    // in the socket's, in the kernel. SO_SNDBUF gets a quarter because Linux doubles it.
    let client_buffer = config.grpc_client_buffer_bytes;
    let config_limits = config.grpc_connections;
    let aggregator = Aggregator::new(&config, catalog, quotes, metrics);
    let aggregator =
        OrderbookAggregatorServer::new(aggregator).max_decoding_message_size(MAX_REQUEST_BYTES);
    let routes = tonic::service::Routes::new(aggregator);
    let routes = with_reflection(routes).prepare();
    // hyper's HTTP/2 server under tonic's routes rather than tonic's own server, because
    // tonic does not expose HTTP/2's send buffer, half of what a client can hold up.
    let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    http2
        .timer(TokioTimer::new())
        .keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .max_header_list_size(MAX_HEADER_BYTES)
        .max_send_buf_size(client_buffer / 2);
    let limits = config_limits;
    let refused = metrics.connections_refused.with_label_values(&["grpc"]);
    crate::publish::accept::accept_bounded(listener, limits, "grpc", refused, |stream| {
        let _ = stream.set_nodelay(true);
        if let Err(error) = socket2::SockRef::from(&stream).set_send_buffer_size(client_buffer / 4)
        {
            tracing::warn!(%error, "gRPC: setting the socket's send buffer failed");
        }
        let http2 = http2.clone();
        let routes = routes.clone();
        async move {
            // A peer that connects and never speaks HTTP/2 gives its place back.
            if !preface_arrives(&stream, limits.request_timeout).await {
                return;
            }
            // So does one that speaks it and holds no stream open.
            let streams = OpenStreams::default();
            let service = counting_streams(routes, streams.clone());
            let connection =
                http2.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = &mut connection => ended,
                () = streams.none_for(limits.request_timeout) => {
                    connection.as_mut().graceful_shutdown();
                    tokio::time::timeout(limits.request_timeout, connection)
                        .await
                        .unwrap_or(Ok(()))
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%error, "gRPC connection ended");
            }
        }
    })
    .await;
}

/// The streams open on one connection (requests whose response body is still alive).
#[derive(Clone, Default)]
struct OpenStreams(Arc<watch::Sender<usize>>);

/// One open stream, counted until its response body is dropped (sent or reset).
struct OpenStream(Arc<watch::Sender<usize>>);

impl OpenStreams {
    fn open(&self) -> OpenStream {
        self.0.send_modify(|open| *open += 1);
        OpenStream(Arc::clone(&self.0))
    }

    /// Returns once the connection has had no stream open for `timeout`: before its first
    /// one, or between two.
    async fn none_for(&self, timeout: Duration) {
        let mut open = self.0.subscribe();
        loop {
            if *open.borrow_and_update() > 0 {
                let _ = open.changed().await;
            } else if tokio::time::timeout(timeout, open.changed()).await.is_err() {
                return;
            }
        }
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.send_modify(|open| *open -= 1);
    }
}

/// A response body that counts as an open stream while it lives.
struct CountedBody {
    body: tonic::body::Body,
    _stream: OpenStream,
}

impl hyper::body::Body for CountedBody {
    type Data = hyper::body::Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// `routes`, each request counted in `streams` until its response body is dropped.
fn counting_streams(
    routes: tonic::service::Routes,
    streams: OpenStreams,
) -> impl tonic::codegen::Service<
    tonic::codegen::http::Request<hyper::body::Incoming>,
    Response = tonic::codegen::http::Response<CountedBody>,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone {
    tower::service_fn(move |request| {
        let stream = streams.open();
        let mut routes = routes.clone();
        async move {
            let response = tonic::codegen::Service::call(&mut routes, request).await?;
            Ok(response.map(|body| CountedBody {
                body,
                _stream: stream,
            }))
        }
    })
}

/// Waits until the client's HTTP/2 connection preface is in the socket (hyper reads it
/// next), for at most `timeout`; false if it does not come, or the peer leaves.
async fn preface_arrives(stream: &tokio::net::TcpStream, timeout: Duration) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut head = [0u8; PREFACE.len()];
    let arrived = async {
        loop {
            match stream.peek(&mut head).await {
                Ok(read) if read == PREFACE.len() => return true,
                Ok(0) | Err(_) => return false,
                // Part of it: peeking again at once would return the same part.
                Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    };
    tokio::time::timeout(timeout, arrived)
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn summary(sequence: u64) -> Arc<Summary> {
        Arc::new(Summary {
            sequence,
            ..Summary::default()
        })
    }

    #[tokio::test]
    async fn a_slow_stream_gets_the_latest_summary_and_counts_what_it_skipped() {
        let metrics = Metrics::new();
        let limit = ClientLimit::new(1, &metrics);
        let (publish, latest) = watch::channel(summary(1));
        let mut stream = stream_of(latest, limit.admit().unwrap(), |summary| summary.sequence);
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        publish.send(summary(2)).unwrap();
        assert_eq!(stream.next().await.unwrap().unwrap(), 2);
        assert_eq!(metrics.grpc_summaries_skipped.get(), 0);
        // Published while the client was not reading: it gets the last, and 3 are skipped.
        for sequence in 3..=6 {
            publish.send(summary(sequence)).unwrap();
        }
        assert_eq!(stream.next().await.unwrap().unwrap(), 6);
        assert_eq!(metrics.grpc_summaries_skipped.get(), 3);
        drop(stream);
        assert_eq!(metrics.grpc_clients.get(), 0, "the place is given back");
    }

    /// What the logs at `level` and above say while `run` runs on this thread.
    async fn logs_at<F: std::future::Future<Output = ()>>(
        level: tracing::Level,
        run: impl FnOnce() -> F,
    ) -> String {
        let logs = crate::log_limit::CapturedLogs::default();
        let _logging = logs.start(level);
        run().await;
        logs.text()
    }

    /// A client that reads fewer summaries than are published is what a latest-value
    /// stream is for: nothing at info level, one debug line a stream however often.
    #[tokio::test]
    async fn a_client_skipping_summaries_is_logged_once_at_debug_level() {
        let skip_twice = || async {
            let metrics = Metrics::new();
            let limit = ClientLimit::new(1, &metrics);
            let (publish, latest) = watch::channel(summary(1));
            let mut stream = stream_of(latest, limit.admit().unwrap(), |s| s.sequence);
            assert_eq!(stream.next().await.unwrap().unwrap(), 1);
            for burst in [2..=4, 5..=9] {
                for sequence in burst {
                    publish.send(summary(sequence)).unwrap();
                }
                stream.next().await.unwrap().unwrap();
            }
            assert_eq!(metrics.grpc_summaries_skipped.get(), 6);
        };
        assert_eq!(logs_at(tracing::Level::INFO, skip_twice).await, "");
        let debug = logs_at(tracing::Level::DEBUG, skip_twice).await;
        assert_eq!(
            debug
                .matches("reads fewer summaries than are published")
                .count(),
            1
        );
    }

    /// A configuration of one instrument, ETH/BTC on Binance.
    fn eth_btc() -> Config {
        let text = "[[instruments]]\nname = \"ETH/BTC\"\nsymbols = { binance = \"ETHBTC\" }\n";
        let config = crate::config::RawConfig::parse(text, "test.toml");
        config.and_then(|raw| raw.validate()).unwrap()
    }

    /// A server of `config`'s instruments, each one's summaries from `summaries`.
    fn aggregator(
        config: &Config,
        summaries: &[watch::Receiver<Arc<Summary>>],
        quotes: QuoteSender,
        metrics: &Metrics,
    ) -> Aggregator {
        let catalog = crate::publish::catalog::fixed(&config.instruments, summaries);
        Aggregator::new(config, catalog, quotes, metrics)
    }

    /// `Book` answers the instrument's latest summary once: UNAVAILABLE before its first,
    /// NOT_FOUND for an instrument not configured.
    #[tokio::test]
    async fn a_book_on_request_is_the_latest_summary_once_there_is_one() {
        let (publish, latest) = watch::channel(Arc::new(Summary::default()));
        let quotes = crate::merger::quote::quote_queue(1).0;
        let aggregator = aggregator(&eth_btc(), &[latest], quotes, &Metrics::new());
        let ask = |instrument: &str| {
            Request::new(proto::SummaryRequest {
                instrument: instrument.into(),
                ..Default::default()
            })
        };
        let before = aggregator.book(ask("ETH/BTC")).await.unwrap_err();
        assert_eq!(before.code(), tonic::Code::Unavailable);
        publish.send(summary(7)).unwrap();
        let book = aggregator.book(ask("ETH/BTC")).await.unwrap().into_inner();
        assert_eq!((book.instrument.as_str(), book.seq), ("ETH/BTC", 7));
        let first = aggregator.book(ask("")).await.unwrap().into_inner();
        assert_eq!(first.seq, 7);
        let unknown = aggregator.book(ask("XRP/EUR")).await.unwrap_err();
        assert_eq!(unknown.code(), tonic::Code::NotFound);
    }

    /// Each `Quote` is counted by its outcome, and an answered one's time observed.
    #[tokio::test]
    async fn quotes_are_counted_by_outcome() {
        use crate::merger::quote::{Quote, SourceFill, quote_queue};
        let metrics = Metrics::new();
        let (_publish, latest) = watch::channel(Arc::new(Summary::default()));
        let (quotes, inbox, _) = quote_queue(1);
        let aggregator = aggregator(&eth_btc(), &[latest], quotes, &metrics);
        let ask = |quantity: &str| {
            Request::new(proto::QuoteRequest {
                instrument: "ETH/BTC".into(),
                side: proto::quote_request::Side::Buy as i32,
                quantity: quantity.into(),
                ..Default::default()
            })
        };
        // The merger's round, as a task: the first waiting quote answered, the next refused
        // for want of a summary.
        let merger = tokio::spawn(async move {
            let mut answers = [
                Ok(Quote {
                    sequence: 3,
                    filled: 0,
                    notional: 0,
                    average_price: None,
                    worst_price: None,
                    exhausted: true,
                    fills: [SourceFill::default(); crate::merger::summary::MAX_SOURCES],
                    sources: 1,
                }),
                Err(QuoteError::NoSummary),
            ]
            .into_iter();
            while answers.len() > 0 {
                inbox.answer_some(|_| answers.next().unwrap());
                tokio::task::yield_now().await;
            }
        });
        let answered = aggregator.quote(ask("1")).await.unwrap().into_inner();
        assert_eq!((answered.seq, answered.depth_exhausted), (3, true));
        let unavailable = aggregator.quote(ask("1")).await.unwrap_err();
        assert_eq!(unavailable.code(), tonic::Code::Unavailable);
        merger.await.unwrap();
        let invalid = aggregator.quote(ask("-1")).await.unwrap_err();
        assert_eq!(invalid.code(), tonic::Code::InvalidArgument);
        let count = |outcome: &str| metrics.quotes.with_label_values(&[outcome]).get();
        assert_eq!(
            ["answered", "unavailable", "invalid", "overloaded"].map(count),
            [1, 1, 1, 0]
        );
        assert_eq!(metrics.quote_seconds.get_sample_count(), 1);
    }
}
