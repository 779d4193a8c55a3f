use super::*;
use crate::merger::summary::MAX_SOURCES;

fn validate(text: &str) -> Result<Config, ConfigError> {
    RawConfig::parse(text, "test.toml")?.validate()
}

const MINIMAL: &str = "[[instruments]]\nname = \"ETH/BTC\"\nsymbols = { binance = \"ETHBTC\" }\n";

#[test]
fn a_merger_that_never_sleeps_takes_its_cpu_from_the_runtime() {
    for idle in [IdleStrategy::Spin, IdleStrategy::SpinThenYield] {
        assert_eq!(workers_beside_merger(idle, 4), 3, "{idle:?}");
        assert_eq!(workers_beside_merger(idle, 2), 1, "{idle:?}");
        assert_eq!(workers_beside_merger(idle, 1), 1, "{idle:?}: never none");
    }
    for idle in [IdleStrategy::Park, IdleStrategy::Batch] {
        assert_eq!(workers_beside_merger(idle, 2), 2, "{idle:?}");
        assert_eq!(workers_beside_merger(idle, 1), 1, "{idle:?}");
    }
    // The service's configuration is what chooses the rule.
    let spinning = validate(&format!("[merger]\nidle = \"spin\"\n{MINIMAL}")).unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(spinning.runtime_workers(), cpus.saturating_sub(1).max(1));
    assert_eq!(validate(MINIMAL).unwrap().runtime_workers(), cpus);
}

/// The whole market's settings: the merger in batches, the readers sharing threads that
/// read their sockets once a period. By default, neither.
#[test]
fn the_batching_settings_are_read() {
    let config = validate(&format!(
        "[merger]\nidle = \"batch\"\nbatch_us = 500\n[feed]\nreader_threads = 2\nbatch_us = 1000\n{MINIMAL}"
    ))
    .unwrap();
    assert_eq!(config.idle, IdleStrategy::Batch);
    assert_eq!(config.merger_batch, Duration::from_micros(500));
    assert_eq!(config.feed.reader_threads, std::num::NonZeroUsize::new(2));
    assert_eq!(config.feed.read_batch, Some(Duration::from_millis(1)));
    let default = validate(MINIMAL).unwrap();
    assert_eq!(default.merger_batch, Duration::from_micros(200));
    assert_eq!(
        (default.feed.reader_threads, default.feed.read_batch),
        (None, None)
    );
}

#[test]
fn a_minimal_file_gets_the_documented_defaults() {
    let config = validate(MINIMAL).unwrap();
    assert_eq!(config.depth, 10);
    assert_eq!(config.idle, IdleStrategy::Park);
    assert_eq!(
        config.venues,
        [VenueConfig {
            venue: VenueId::Binance,
            url: VenueId::Binance.facts().default_url.into(),
            mode: FeedMode::Snapshot,
            allow_one_sided: false,
            client_ping: None,
            read_idle_timeout: Duration::from_secs(30),
            // Binance closes a connection after 24 hours: renewed half an hour before.
            renew_after: Some(Duration::from_secs(23 * 3600 + 1800)),
            api_key: None,
            listing_url: None,
            token_url: None,
        }]
    );
    // Safe defaults (docs/reliability.md): loopback only, bounded clients.
    assert_eq!(config.grpc_listen.to_string(), "127.0.0.1:50051");
    assert_eq!(config.metrics_listen.to_string(), "127.0.0.1:9898");
    assert_eq!(config.grpc_max_clients, 1024);
    assert_eq!(config.grpc_client_buffer_bytes, 262_144);
    assert!(config.simulator.is_none());
}

#[test]
fn a_venue_read_idle_timeout_overrides_the_feed_one() {
    let config = validate(&format!(
        "[feed]\nread_idle_timeout_ms = 5000\n[venues.binance]\nread_idle_timeout_ms = 120000\n\
         {MINIMAL}[[instruments]]\nname = \"ETH/USD\"\nsymbols = {{ bitstamp = \"ethusd\" }}\n"
    ))
    .unwrap();
    let allowances: Vec<_> = config
        .venues
        .iter()
        .map(|venue| (venue.venue, venue.read_idle_timeout))
        .collect();
    assert_eq!(
        allowances,
        [
            (VenueId::Binance, Duration::from_secs(120)),
            (VenueId::Bitstamp, Duration::from_secs(5)),
        ]
    );
}

/// Shards split one list between them: each instrument to exactly one, whatever the
/// list's order; a shard left with none is refused.
#[test]
fn shards_split_the_instruments_between_them() {
    let list = |names: &mut dyn Iterator<Item = usize>| -> String {
        names
            .map(|i| {
                format!("[[instruments]]\nname = \"I{i}\"\nsymbols = {{ binance = \"S{i}\" }}\n")
            })
            .collect()
    };
    let served = |shard: &str, instruments: &str| -> Vec<String> {
        let config = validate(&format!("[service]\nshard = \"{shard}\"\n{instruments}")).unwrap();
        config.instruments.into_iter().map(|i| i.name).collect()
    };
    let forwards = list(&mut (0..12));
    let backwards = list(&mut (0..12).rev());
    let mut all = Vec::new();
    for shard in ["1/3", "2/3", "3/3"] {
        let names = served(shard, &forwards);
        assert!(!names.is_empty(), "{shard}");
        let mut reversed = served(shard, &backwards);
        reversed.reverse();
        assert_eq!(names, reversed, "{shard}: the same whatever the order");
        all.extend(names);
    }
    all.sort_by_key(|name| name[1..].parse::<usize>().unwrap());
    let expected: Vec<String> = (0..12).map(|i| format!("I{i}")).collect();
    assert_eq!(all, expected, "each instrument in exactly one shard");
    let one = list(&mut (0..1));
    let empty = ["1/2", "2/2"]
        .iter()
        .find(|shard| validate(&format!("[service]\nshard = \"{shard}\"\n{one}")).is_err())
        .unwrap();
    let error = validate(&format!("[service]\nshard = \"{empty}\"\n{one}")).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "service.shard = \"{empty}\": no instrument falls to this shard: fewer shards, or more instruments"
        )
    );
}

#[test]
fn more_instruments_than_max_instruments_are_refused() {
    let two = format!(
        "[service]\nmax_instruments = 1\n{MINIMAL}[[instruments]]\nname = \"BTC/USDT\"\nsymbols = {{ binance = \"BTCUSDT\" }}\n"
    );
    assert_eq!(
        validate(&two).unwrap_err().to_string(),
        "instruments = 2 instruments: at most service.max_instruments = 1"
    );
}

/// Each bad value stops start-up with a message naming the key and the value.
#[test]
fn errors_name_the_key_and_the_value() {
    let cases: &[(&str, &str)] = &[
        (
            "[service]\ndepth = 0\n",
            "service.depth = 0: must be between 1 and 100",
        ),
        (
            "[service]\ndepth = 101\n",
            "service.depth = 101: must be between 1 and 100",
        ),
        (
            "[service]\noutput = \"xml\"\n",
            "service.output = \"xml\": expected \"jsonl\" or \"none\"",
        ),
        (
            "[merger]\nbatch_us = 5\n",
            "merger.batch_us = 5: must be between 10 and 100000",
        ),
        (
            "[feed]\nreader_threads = 65\n",
            "feed.reader_threads = 65: must be between 0 and 64",
        ),
        (
            "[feed]\nbatch_us = -1\n",
            "feed.batch_us = -1: must be between 0 and 100000",
        ),
        (
            "[merger]\nidle = \"nap\"\n",
            "merger.idle = \"nap\": expected \"spin\", \"spin-then-yield\", \"park\" or \"batch\"",
        ),
        (
            "[grpc]\nmax_clients = 0\n",
            "grpc.max_clients = 0: must be between 1 and 65536",
        ),
        (
            "[grpc]\nclient_buffer_bytes = 100\n",
            "grpc.client_buffer_bytes = 100: must be between 16384 and 67108864",
        ),
        (
            "[service]\nmax_instruments = 2000\n",
            "service.max_instruments = 2000: must be between 1 and 1024",
        ),
        (
            "[grpc]\nlisten = \"localhost\"\n",
            "grpc.listen = \"localhost\": expected an address like 127.0.0.1:9898",
        ),
        (
            "[venues.binance]\nurl = \"http://x\"\n",
            "venues.binance.url = \"http://x\": expected a ws:// or wss:// URL with a host",
        ),
        (
            "[venues.binance]\nurl = \"ws://\"\n",
            "venues.binance.url = \"ws://\": expected a ws:// or wss:// URL with a host",
        ),
        (
            "[venues.binance]\nurl = \"wss://:443/stream\"\n",
            "venues.binance.url = \"wss://:443/stream\": expected a ws:// or wss:// URL with a host",
        ),
        (
            "[simulator]\n[venues.binance]\nurl = \"wss://stream.binance.com:9443/stream\"\n",
            "venues.binance.url = \"wss://stream.binance.com:9443/stream\": a [simulator] section replaces the venues' URLs: remove one of the two",
        ),
        (
            "[venues.binance]\nmode = \"delta\"\n",
            "venues.binance.mode = \"delta\": expected \"snapshot\" or \"diff\"",
        ),
        (
            "[venues.binance]\nmode = \"diff\"\nsnapshot_depth = 6000\n",
            "venues.binance.snapshot_depth = 6000: must be between 1 and 5000",
        ),
        (
            "[venues.binance]\nmode = \"diff\"\nrest_url = \"ws://x\"\n",
            "venues.binance.rest_url = \"ws://x\": expected an http:// or https:// URL",
        ),
        (
            "[venues.binance]\nmode = \"diff\"\nsnapshot_weight_per_minute = 10\n",
            "venues.binance.snapshot_weight_per_minute = 10: below the weight of one \
             snapshot of 1000 levels (50)",
        ),
        (
            "[venues.binance]\nmode = \"diff\"\nsnapshot_retry_max_ms = 100\n",
            "venues.binance.snapshot_retry_max_ms = 100: must be at least \
             snapshot_retry_initial_ms (500)",
        ),
        (
            "[venues.binance]\nmode = \"diff\"\naudit_every_ms = 1000\n",
            "venues.binance.audit_every_ms = 1000: this venue's streams show a lost event: \
             its books are not audited",
        ),
        (
            "[venues.coinbase_exchange]\naudit_settle_ms = 70000\n\
             [[instruments]]\nname = \"ETH/USD\"\nsymbols = { coinbase_exchange = \"ETH-USD\" }\n",
            "venues.coinbase_exchange.audit_settle_ms = 70000: must be between 0 and 60000",
        ),
        (
            "[venues.binance]\nping_interval_ms = 1000\n",
            "venues.binance.ping_interval_ms = 1000: the venue takes no application pings",
        ),
        (
            "[service]\nbands_bps = [10, 5]\n",
            "service.bands_bps = [10, 5]: at most 8 distances in basis points, ascending, \
             each from 1 to 5000",
        ),
        (
            "[service]\nbands_bps = [0]\n",
            "service.bands_bps = [0]: at most 8 distances in basis points, ascending, \
             each from 1 to 5000",
        ),
        (
            "[venues.binance]\ntaker_fee_bps = \"1000.5\"\n",
            "venues.binance.taker_fee_bps = \"1000.5\": basis points from \"0\" to \"1000\", \
             at most 4 fractional digits (\"7.5\")",
        ),
        (
            "[venues.kraken]\ntaker_fee_bps = \"2.00001\"\n",
            "venues.kraken.taker_fee_bps = \"2.00001\": basis points from \"0\" to \"1000\", \
             at most 4 fractional digits (\"7.5\")",
        ),
        (
            "[venues.kraken]\ntaker_fee_bps = \"-1\"\n",
            "venues.kraken.taker_fee_bps = \"-1\": basis points from \"0\" to \"1000\", \
             at most 4 fractional digits (\"7.5\")",
        ),
        (
            "[venues.binance]\nread_idle_timeout_ms = 50\n",
            "venues.binance.read_idle_timeout_ms = 50: must be between 100 and 600000",
        ),
        (
            "[simulator]\nrate_per_second = 5\n",
            "simulator.rate_per_second = 5: must be between 10 and 100000",
        ),
        (
            "[feed]\nbackoff_reset_after_ms = 0\n",
            "feed.backoff_reset_after_ms = 0: must be between 1000 and 3600000",
        ),
        (
            "[feed]\nbackoff_initial_ms = 500\nbackoff_max_ms = 100\n",
            "feed.backoff_max_ms = 100: must not be below feed.backoff_initial_ms",
        ),
        (
            "[service]\nshard = \"3/2\"\n",
            "service.shard = \"3/2\": expected \"K/N\": shard K of N, 1 <= K <= N <= 1024",
        ),
        (
            "[nats]\nurl = \"http://nats\"\n",
            "nats.url = \"http://nats\": expected a nats:// or tls:// URL with a host \
             (several: comma-separated)",
        ),
        (
            "[nats]\nurl = \"nats://nats\"\nsubject_prefix = \"books..eu\"\n",
            "nats.subject_prefix = \"books..eu\": subject tokens of A-Z a-z 0-9 - _, \
             separated by '.'",
        ),
        (
            "[nats]\nurl = \"nats://nats\"\nformat = \"xml\"\n",
            "nats.format = \"xml\": expected \"protobuf\" or \"json\"",
        ),
        (
            "[nats]\nurl = \"nats://nats\"\ncredentials_file = \"/no/such.creds\"\n",
            "nats.credentials_file = \"/no/such.creds\": no such file",
        ),
    ];
    for (extra, message) in cases {
        let error = validate(&format!("{extra}{MINIMAL}")).unwrap_err();
        assert_eq!(error.to_string(), *message);
    }
    let unknown = validate(&format!("[venues.mtgox]\n{MINIMAL}")).unwrap_err();
    let known: Vec<_> = VenueId::ALL.iter().map(|venue| venue.name()).collect();
    assert_eq!(
        unknown.to_string(),
        format!(
            "venues.mtgox = {{…}}: unknown venue (known: {})",
            known.join(", ")
        )
    );
    let no_instruments = validate("").unwrap_err().to_string();
    assert_eq!(
        no_instruments,
        "instruments = []: configure at least one [[instruments]]"
    );
    let bad_name = validate("[[instruments]]\nname = \"ETH BTC\"\nsymbols = { binance = \"X\" }\n")
        .unwrap_err();
    assert!(
        bad_name
            .to_string()
            .starts_with("instruments[0].name = \"ETH BTC\""),
        "{bad_name}"
    );
    let twice = validate(
        "[[instruments]]\nname = \"A\"\nsymbols = { binance = \"ETHBTC\" }\n\
         [[instruments]]\nname = \"B\"\nsymbols = { binance = \"ethbtc\" }\n",
    )
    .unwrap_err();
    assert_eq!(
        twice.to_string(),
        "instruments[1].symbols.binance = \"ethbtc\": already used by instrument \"A\""
    );
    let bad_venue =
        validate("[[instruments]]\nname = \"A\"\nsymbols = { ftx = \"X\" }\n").unwrap_err();
    assert!(
        bad_venue
            .to_string()
            .starts_with("instruments[0].symbols.ftx = \"X\": unknown venue"),
        "{bad_venue}"
    );
}

/// A symbol sized in contracts needs its contract size, and only such a symbol takes
/// one: an exact positive decimal.
#[test]
fn contracts_need_their_size_and_only_they_take_one() {
    let instrument = |symbols: &str, sizes: &str| {
        validate(&format!(
            "[[instruments]]\nname = \"BTC\"\nsymbols = {{ {symbols} }}\n{sizes}"
        ))
    };
    let config = instrument(
        "okx = \"BTC-USDT-SWAP\", binance = \"BTCUSDT\"",
        "contract_sizes = { okx = \"0.01\" }\n",
    )
    .unwrap();
    let btc = &config.instruments[0];
    assert_eq!(
        btc.source_of(VenueId::Okx)
            .and_then(|source| btc.contract_size(source)),
        Some("0.01".parse().unwrap())
    );
    assert_eq!(
        btc.source_of(VenueId::Binance)
            .and_then(|source| btc.contract_size(source)),
        None
    );
    let errors = [
        (
            instrument("okx = \"BTC-USDT-SWAP\"", ""),
            "instruments[0].symbols.okx = \"BTC-USDT-SWAP\": sized in contracts: set \
             instruments[0].contract_sizes.okx to the base currency one contract is (\"0.01\")",
        ),
        (
            instrument(
                "okx = \"BTC-USDT\"",
                "contract_sizes = { okx = \"0.01\" }\n",
            ),
            "instruments[0].contract_sizes.okx = \"0.01\": \"BTC-USDT\" is sized in the \
             base currency, not in contracts",
        ),
        (
            instrument(
                "okx = \"BTC-USDT-SWAP\"",
                "contract_sizes = { okx = \"0\" }\n",
            ),
            "instruments[0].contract_sizes.okx = \"0\": a positive decimal of at most 8 \
             fractional digits",
        ),
        (
            instrument(
                "okx = \"BTC-USDT-SWAP\"",
                "contract_sizes = { okx = \"0.000000001\" }\n",
            ),
            "instruments[0].contract_sizes.okx = \"0.000000001\": a positive decimal of at \
             most 8 fractional digits",
        ),
        (
            instrument(
                "okx = \"BTC-USDT-SWAP\"",
                "contract_sizes = { okx = \"0.01\", bybit = \"1\" }\n",
            ),
            "instruments[0].contract_sizes.bybit = \"1\": no book of this name: a venue of \
             the instrument, or venue:symbol where it takes several books of the venue",
        ),
    ];
    for (result, expected) in errors {
        assert_eq!(result.unwrap_err().to_string(), expected);
    }
}

/// An instrument may take several books of one venue (its spot pair and its perpetual):
/// each is a source of its own, named `venue:symbol`, and the keys that say something of
/// one book name it so.
#[test]
fn one_venue_s_spot_and_perpetual_are_two_books_of_an_instrument() {
    let instrument = |symbols: &str, rest: &str| {
        validate(&format!(
            "[[instruments]]\nname = \"BTC/USDT\"\nsymbols = {{ {symbols} }}\n{rest}"
        ))
    };
    let config = instrument(
        "okx = [\"BTC-USDT\", \"BTC-USDT-SWAP\"], binance = \"BTCUSDT\"",
        "contract_sizes = { \"okx:BTC-USDT-SWAP\" = \"0.01\" }\n",
    )
    .unwrap();
    let btc = &config.instruments[0];
    assert_eq!(
        btc.source_names,
        ["binance", "okx:BTC-USDT", "okx:BTC-USDT-SWAP"]
    );
    assert_eq!(btc.symbols[2], (VenueId::Okx, "BTC-USDT-SWAP".to_owned()));
    assert_eq!(btc.contract_sizes, [(2, "0.01".parse().unwrap())]);
    // Each book is its own stream of the venue's one connection.
    let plan = crate::service::plan_connections(&config);
    let okx: Vec<_> = plan.iter().filter(|c| c.venue == VenueId::Okx).collect();
    assert_eq!(okx.len(), 1);
    let sources: Vec<_> = okx[0]
        .streams
        .iter()
        .map(|s| (s.source, s.contract_size))
        .collect();
    assert_eq!(sources, [(1, None), (2, Some("0.01".parse().unwrap()))]);

    let errors = [
        (
            instrument(
                "okx = [\"BTC-USDT\", \"BTC-USDT-SWAP\"]",
                "contract_sizes = { okx = \"0.01\", \"okx:BTC-USDT-SWAP\" = \"0.01\" }\n",
            ),
            "instruments[0].contract_sizes.okx = \"0.01\": no book of this name: a venue of the \
             instrument, or venue:symbol where it takes several books of the venue",
        ),
        (
            instrument("okx = [\"BTC-USDT\", \"BTC-USDT-SWAP\"]", ""),
            "instruments[0].symbols.okx = \"BTC-USDT-SWAP\": sized in contracts: set \
             instruments[0].contract_sizes.\"okx:BTC-USDT-SWAP\" to the base currency one \
             contract is (\"0.01\")",
        ),
        (
            instrument("okx = [\"BTC-USDT\", \"BTC-USDT\"]", ""),
            "instruments[0].symbols.okx = \"BTC-USDT\": listed twice",
        ),
        (
            instrument(
                "hyperliquid = [\"BTC\", \"ETH\"]",
                "currency = \"USD\"\nquotes = { hyperliquid = \"USDC\" }\n",
            ),
            "instruments[0].quotes.hyperliquid = \"USDC\": no book of this name: a venue of \
             the instrument, or venue:symbol where it takes several books of the venue",
        ),
    ];
    for (result, expected) in errors {
        assert_eq!(result.unwrap_err().to_string(), expected);
    }
    let many: Vec<String> = (0..=MAX_SOURCES).map(|n| format!("\"X{n}USDT\"")).collect();
    let too_many = instrument(&format!("binance = [{}]", many.join(", ")), "");
    assert_eq!(
        too_many.unwrap_err().to_string(),
        format!(
            "instruments[0].symbols = {} symbols: an instrument merges at most \
             {MAX_SOURCES} books",
            MAX_SOURCES + 1
        )
    );
}

/// A venue that needs an API key is refused without one, its key is read from the
/// file or variable named, and never shown; a venue that takes none refuses one.
#[test]
fn api_keys_are_read_where_a_venue_needs_one_and_never_shown() {
    let config = |venue_keys: &str| {
        validate(&format!(
            "[venues.binance_sbe]\n{venue_keys}\n[[instruments]]\nname = \"BTC/USDT\"\n\
             symbols = {{ binance_sbe = \"BTCUSDT\", binance = \"BTCUSDT\" }}\n\
             [venues.binance]\n"
        ))
    };
    let error = |venue_keys: &str| config(venue_keys).unwrap_err().to_string();
    assert!(
        error("").starts_with("venues.binance_sbe.api_key_env = (unset): ")
            && error("").contains("X-MBX-APIKEY"),
        "{}",
        error("")
    );
    assert!(
        error("api_key_env = \"MERGEBOOK_TEST_NO_SUCH_VARIABLE\"")
            .contains("no such environment variable")
    );
    let dir = std::env::temp_dir().join(format!("mergebook-api-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        format!("api_key_file = {:?}", path.display().to_string())
    };
    let secret = "a-test-value-in-place-of-an-api-key";
    let config = config(&file("key", &format!("{secret}\n"))).unwrap();
    let key = config.venues[1]
        .api_key
        .as_ref()
        .expect("binance_sbe's key");
    assert_eq!(key.expose(), secret);
    assert!(!format!("{config:?}").contains(secret));
    assert_eq!(config.venues[0].api_key, None);
    assert!(error(&file("empty", " \n")).contains("holds no API key"));
    assert!(error(&file("spaced", "a b")).contains("visible ASCII"));
    let missing = format!(
        "api_key_file = {:?}",
        dir.join("missing").display().to_string()
    );
    assert!(error(&missing).contains("cannot read it"));
    let both = format!("{}\napi_key_env = \"HOME\"", file("key", secret));
    assert!(error(&both).contains("name one source of the key"));
    let refused = validate(
        "[venues.binance]\napi_key_env = \"HOME\"\n[[instruments]]\nname = \"ETH/BTC\"\n\
         symbols = { binance = \"ETHBTC\" }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(refused.contains("the venue takes no API key"), "{refused}");
    std::fs::remove_dir_all(&dir).unwrap();
    // The simulator takes any key: none is needed with one (it is sent a stand-in).
    let simulated = validate(
        "[simulator]\n[[instruments]]\nname = \"BTC/USDT\"\n\
         symbols = { binance_sbe = \"BTCUSDT\" }\n",
    )
    .unwrap();
    assert_eq!(simulated.venues[0].api_key, None);
}

/// Credentials sent in a request (Deribit's) are optional, and must be
/// `client_id:client_secret`; the secret is never shown.
#[test]
fn client_credentials_are_optional_and_need_both_parts() {
    let config = |venue_keys: &str| {
        validate(&format!(
            "[venues.deribit]\n{venue_keys}\n[[instruments]]\nname = \"BTC/USDC\"\n\
             symbols = {{ deribit = \"BTC_USDC-PERPETUAL\" }}\n"
        ))
    };
    assert_eq!(config("").unwrap().venues[0].api_key, None);
    let dir = std::env::temp_dir().join(format!("mergebook-credentials-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        format!("api_key_file = {:?}", path.display().to_string())
    };
    let secret = "a-test-secret";
    let config_with = config(&file("both", &format!("client-id:{secret}\n"))).unwrap();
    let key = config_with.venues[0]
        .api_key
        .as_ref()
        .expect("the credentials");
    assert_eq!(key.client_credentials(), Some(("client-id", secret)));
    assert!(!format!("{config_with:?}").contains(secret));
    for half in ["client-id", "client-id:", ":a-test-secret"] {
        let error = config(&file("half", half)).unwrap_err().to_string();
        assert!(error.contains("client_id:client_secret"), "{half}: {error}");
        assert!(!error.contains(secret), "{error}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A key that signs REST requests (KuCoin's) is optional, must be `key:secret:passphrase`,
/// and turns the venue's diff snapshots into its whole book; its secret is never shown.
#[test]
fn a_signing_key_is_optional_needs_three_parts_and_asks_for_the_whole_book() {
    let config = |venue_keys: &str| {
        validate(&format!(
            "[venues.kucoin]\nmode = \"diff\"\n{venue_keys}\n[[instruments]]\n\
             name = \"BTC/USDT\"\nsymbols = {{ kucoin = \"BTC-USDT\" }}\n"
        ))
    };
    let whole_book = |config: &Config| config.venues[0].mode.diff_settings().unwrap().whole_book;
    let public = config("").unwrap();
    assert_eq!(
        (public.venues[0].api_key.is_none(), whole_book(&public)),
        (true, false)
    );
    let dir = std::env::temp_dir().join(format!("mergebook-signing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        format!("api_key_file = {:?}", path.display().to_string())
    };
    let secret = "a-signing-secret";
    let keyed = config(&file("all", &format!("the-key:{secret}:the-passphrase\n"))).unwrap();
    assert!(whole_book(&keyed));
    let parts = keyed.venues[0].api_key.as_ref().unwrap().signing_parts();
    assert_eq!(parts, Some(("the-key", secret, "the-passphrase")));
    assert!(!format!("{keyed:?}").contains(secret));
    for part in [
        "the-key",
        "the-key:a-signing-secret",
        "the-key::the-passphrase",
    ] {
        let error = config(&file("part", part)).unwrap_err().to_string();
        assert!(error.contains("key:secret:passphrase"), "{part}: {error}");
        assert!(!error.contains(secret), "{error}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_keys_are_refused_by_name() {
    let error = validate(&format!("[service]\ndepht = 10\n{MINIMAL}"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown field `depht`"), "{error}");
}

/// Every file shipped in config/ is valid.
/// A value of a TOML file by its dotted path.
fn at<'a>(file: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let (tables, leaf) = path.rsplit_once('.').unwrap_or(("", path));
    let mut table = file;
    for name in tables.split('.').filter(|name| !name.is_empty()) {
        table = table.get(name)?.as_table()?;
    }
    table.get(leaf)
}

/// The sharded compose stack runs `config/sim-nats.toml` as shard 1/2 and 2/2: each
/// gets instruments, together all of them, published on NATS.
#[test]
fn the_sharded_stack_s_shards_each_serve_instruments() {
    let (text, _) = shipped("sim-nats.toml");
    let mut served = Vec::new();
    for shard in ["1/2", "2/2"] {
        let mut raw = RawConfig::parse(&text, "sim-nats.toml").unwrap();
        let listed = raw.instruments.len();
        raw.service.shard = Some(shard.to_owned());
        let config = raw.validate().unwrap();
        assert!(config.nats.is_some());
        assert!(!config.instruments.is_empty() && config.instruments.len() < listed);
        served.extend(config.instruments.into_iter().map(|i| i.name));
    }
    assert_eq!(served.len(), 4);
}

fn shipped(name: &str) -> (String, toml::Table) {
    let path = format!("{}/config/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let table = text.parse().unwrap();
    (text, table)
}

/// Whether `text` has the commented-out line `# {key} = {value}` (keys that apply only
/// in another mode are shown so).
fn states_in_comment(text: &str, key: &str, value: &str) -> bool {
    let line = format!("# {key} = {value}");
    text.lines().any(|l| {
        l.trim_start()
            .strip_prefix(&line)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
    })
}

/// Every default is written once (`defaults`, the venues' URLs) and the files a user
/// copies state each: `config/default.toml` the service's and the venues', and
/// `config/sim.toml` the simulator's.
#[test]
fn the_shipped_files_state_every_default() {
    let (text, file) = shipped("default.toml");
    for setting in defaults::SERVICE_INTS {
        let value = at(&file, setting.key).and_then(toml::Value::as_integer);
        assert_eq!(value, Some(setting.default), "{}", setting.key);
    }
    for setting in defaults::SERVICE_TEXTS {
        let value = at(&file, setting.key).and_then(toml::Value::as_str);
        assert_eq!(value, Some(setting.default), "{}", setting.key);
    }
    let bands = at(&file, "service.bands_bps").and_then(toml::Value::as_array);
    let bands: Option<Vec<i64>> =
        bands.map(|bands| bands.iter().filter_map(toml::Value::as_integer).collect());
    let default: Vec<i64> = defaults::BANDS_BPS
        .iter()
        .map(|&bp| i64::from(bp))
        .collect();
    assert_eq!(bands, Some(default), "service.bands_bps");
    for setting in [&defaults::FULL_DEPTH, &defaults::WEB_ENABLED] {
        let value = at(&file, setting.key).and_then(toml::Value::as_bool);
        assert_eq!(value, Some(setting.default), "{}", setting.key);
    }
    for &venue in VenueId::ALL {
        let key = |name: &str| format!("venues.{venue}.{name}");
        let text_at = |name: &str| at(&file, &key(name)).and_then(toml::Value::as_str);
        match venue.streams().token_path() {
            // Its token request names where to connect: `url` is refused, and the file
            // says where that is.
            "" => assert_eq!(text_at("url"), Some(venue.facts().default_url), "{venue}"),
            path => assert!(text.contains(&format!("rest_url + {path}")), "{venue}"),
        }
        let mode = text_at(defaults::MODE.key);
        assert_eq!(mode, Some(defaults::default_mode(venue)), "{venue}");
        let allow = at(&file, &key(defaults::ALLOW_ONE_SIDED.key));
        let allow = allow.and_then(toml::Value::as_bool);
        assert_eq!(allow, Some(defaults::ALLOW_ONE_SIDED.default), "{venue}");
        let rest_url = format!("{:?}", venue.facts().default_rest_url);
        assert!(states_in_comment(&text, "rest_url", &rest_url), "{venue}");
    }
    for setting in defaults::VENUE_INTS {
        let default = setting.default.to_string();
        assert!(
            states_in_comment(&text, setting.key, &default),
            "{}",
            setting.key
        );
    }

    let nats_texts = [&defaults::NATS_SUBJECT_PREFIX, &defaults::NATS_FORMAT];
    for setting in nats_texts {
        let (_, key) = setting.key.split_once('.').unwrap();
        let value = format!("{:?}", setting.default);
        assert!(states_in_comment(&text, key, &value), "{}", setting.key);
    }
    for setting in defaults::RECORD_INTS {
        let (_, key) = setting.key.split_once('.').unwrap();
        let value = setting.default.to_string();
        assert!(states_in_comment(&text, key, &value), "{}", setting.key);
    }
    let web = at(&file, defaults::WEB_ENABLED.key).and_then(toml::Value::as_bool);
    assert_eq!(web, Some(defaults::WEB_ENABLED.default));
    let health_every = defaults::NATS_HEALTH_EVERY_MS.default.to_string();
    assert!(states_in_comment(&text, "health_every_ms", &health_every));
    let tls_required = defaults::NATS_TLS_REQUIRED.default.to_string();
    assert!(states_in_comment(&text, "tls_required", &tls_required));

    let (_, simulator) = shipped("sim.toml");
    for setting in [&defaults::SIMULATOR_RATE, &defaults::SIMULATOR_SEED] {
        let value = at(&simulator, setting.key).and_then(toml::Value::as_integer);
        assert_eq!(value, Some(setting.default), "{}", setting.key);
    }
    let listen = at(&simulator, defaults::SIMULATOR_LISTEN.key).and_then(toml::Value::as_str);
    assert_eq!(listen, Some(defaults::SIMULATOR_LISTEN.default));
}

#[test]
fn every_shipped_config_file_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            RawConfig::load(&path)
                .and_then(|raw| raw.validate())
                .unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
    }
    assert!(
        checked >= 2,
        "config/default.toml and config/sim.toml at least"
    );
}

/// `BTC/USD` across venues quoted in USD, USDT and USDC: the currencies read from each
/// symbol or stated, and each other currency converted through its pair's rate.
const BTC_USD: &str = "[[instruments]]\nname = \"USDT/USD\"\n\
    symbols = { kraken = \"USDT/USD\", bitstamp = \"usdtusd\" }\n\
    [[instruments]]\nname = \"BTC/USD\"\nprice_step = \"0.01\"\n\
    symbols = { kraken = \"BTC/USD\", binance = \"BTCUSDT\", okx = \"BTC-USDC-SWAP\", coinbase = \"BTC-PERP-INTX\" }\n\
    contract_sizes = { okx = \"0.01\" }\nquotes = { coinbase = \"USDC\" }\n";

const BTC_USD_RATES: &str = "[[rates]]\npair = \"USDT/USD\"\ninstrument = \"USDT/USD\"\n\
    [[rates]]\npair = \"USD/USDC\"\nfixed = \"1.0001\"\n";

#[test]
fn venues_quoted_in_other_currencies_go_through_a_configured_rate() {
    let config = validate(&format!("{BTC_USD}{BTC_USD_RATES}")).unwrap();
    let usd = crate::units::Currency::parse("USD");
    let btc_usd = &config.instruments[1];
    assert_eq!(btc_usd.currency, usd);
    assert_eq!(btc_usd.price_step, 1_000_000);
    let quotes: Vec<_> = btc_usd
        .quotes
        .iter()
        .map(|&(source, quote)| format!("{}:{quote}", btc_usd.source_names[source]))
        .collect();
    assert_eq!(
        quotes,
        ["binance:USDT", "coinbase:USDC", "kraken:USD", "okx:USDC"]
    );
    use crate::units::{Conversion, Direction};
    let conversion = |direction| Conversion::new(direction, 1_000_000);
    assert_eq!(
        btc_usd.conversions,
        [
            SourceConversion {
                source: btc_usd.source_of(VenueId::Binance).unwrap(),
                rate: Some(0),
                conversion: conversion(Direction::Multiply)
            },
            SourceConversion {
                source: btc_usd.source_of(VenueId::Coinbase).unwrap(),
                rate: Some(1),
                conversion: conversion(Direction::Divide)
            },
            SourceConversion {
                source: btc_usd.source_of(VenueId::Okx).unwrap(),
                rate: Some(1),
                conversion: conversion(Direction::Divide)
            },
        ]
    );
    assert_eq!(config.rates[0].from, RateFrom::Instrument(0));
    assert_eq!(config.rates[1].pair(), "USD/USDC");
    assert!(config.instruments[0].conversions.is_empty());
}

/// BTC counted in USD (`unit = "quote"`), where inverse contracts merge as their value:
/// OKX's and Bybit's inverse perpetuals beside Kraken (USD) and Binance (USDT) spot.
const BTC_NOTIONAL: &str = "[[instruments]]\nname = \"BTC/USD-notional\"\ncurrency = \"USD\"\n\
    unit = \"quote\"\nprice_step = \"0.01\"\n\
    symbols = { okx = \"BTC-USD-SWAP\", bybit = \"inverse:BTCUSD\", kraken = \"BTC/USD\", binance = \"BTCUSDT\" }\n\
    contract_sizes = { okx = \"100\", bybit = \"1\" }\n\
    [[rates]]\npair = \"USDT/USD\"\nfixed = \"1.0002\"\n";

#[test]
fn inverse_contracts_merge_where_amounts_are_counted_in_the_currency() {
    use crate::units::{Amounts, Conversion, Currency, Direction};
    let config = validate(BTC_NOTIONAL).unwrap();
    let notional = &config.instruments[0];
    assert_eq!(notional.unit, AmountUnit::Quote);
    assert_eq!(notional.amount_unit(), Currency::parse("USD"));
    assert_eq!(
        notional
            .source_of(VenueId::Okx)
            .and_then(|source| notional.contract_size(source)),
        Some("100".parse().unwrap())
    );
    // The inverse contracts, in USD, merge as they come (contracts times their value);
    // Kraken's BTC amounts become their value at its prices, Binance's through the rate.
    let through_rate = Conversion::new(Direction::Multiply, 1_000_000);
    assert_eq!(
        notional.conversions,
        [
            SourceConversion {
                source: notional.source_of(VenueId::Binance).unwrap(),
                rate: Some(0),
                conversion: through_rate.with_amounts(Amounts::Notional)
            },
            SourceConversion {
                source: notional.source_of(VenueId::Kraken).unwrap(),
                rate: None,
                conversion: Conversion::prices_kept(Amounts::Notional)
            },
        ]
    );
    // An inverse contract in a USDT book: its USD value through the rate.
    let in_usdt = BTC_NOTIONAL
        .replace("BTC/USD-notional", "BTC/USDT-notional")
        .replace("currency = \"USD\"", "currency = \"USDT\"");
    let config = validate(&in_usdt).unwrap();
    let bybit = config.instruments[0].source_of(VenueId::Bybit);
    let bybit = config.instruments[0]
        .conversions
        .iter()
        .find(|c| Some(c.source) == bybit);
    assert_eq!(
        bybit.map(|c| c.conversion.amounts),
        Some(Amounts::NotionalConverted)
    );
    // Base-coin books keep their amounts.
    let config = validate(&format!("{BTC_USD}{BTC_USD_RATES}")).unwrap();
    assert_eq!(config.instruments[1].amount_unit(), Currency::parse("BTC"));
    let amounts = config.instruments[1]
        .conversions
        .iter()
        .map(|c| c.conversion.amounts);
    assert!(
        amounts
            .into_iter()
            .all(|amounts| amounts == Amounts::AsGiven)
    );
}

/// Euro books join a dollar book as the stablecoins' do: through a EUR/USD rate read from
/// the venues that list the pair.
#[test]
fn a_venue_quoted_in_euros_goes_through_a_euro_rate() {
    use crate::units::{Conversion, Direction};
    let config = validate(
        "[[instruments]]\nname = \"EUR/USD\"\nsymbols = { kraken = \"EUR/USD\", bitstamp = \"eurusd\" }\n\
         [[instruments]]\nname = \"BTC/USD\"\nprice_step = \"0.01\"\n\
         symbols = { kraken = \"BTC/EUR\", bitstamp = \"btcusd\", coinbase_exchange = \"BTC-EUR\" }\n\
         [[rates]]\npair = \"EUR/USD\"\ninstrument = \"EUR/USD\"\n",
    )
    .unwrap();
    let btc_usd = &config.instruments[1];
    let through_euros = |venue| SourceConversion {
        source: btc_usd.source_of(venue).unwrap(),
        rate: Some(0),
        conversion: Conversion::new(Direction::Multiply, 1_000_000),
    };
    assert_eq!(
        config.instruments[1].conversions,
        [
            through_euros(VenueId::CoinbaseExchange),
            through_euros(VenueId::Kraken)
        ]
    );
}

/// Binance COIN-M's perpetual in a book of BTC amounts is refused, as every inverse
/// contract; counted in dollars, it merges as its contracts times their value.
#[test]
fn binance_coin_m_merges_only_where_amounts_are_counted_in_dollars() {
    let in_coins = "[[instruments]]\nname = \"BTC/USD\"\n\
        symbols = { binance_coinm = \"BTCUSD_PERP\", kraken = \"BTC/USD\" }\n\
        contract_sizes = { binance_coinm = \"100\" }\n";
    assert_eq!(
        validate(in_coins).unwrap_err().to_string(),
        "instruments[0].symbols.binance_coinm = \"BTCUSD_PERP\": an inverse contract, sized in \
         its quote currency: it merges where amounts are counted in the instrument's currency \
         (set instruments[0].unit = \"quote\")"
    );
    let in_dollars = in_coins.replace(
        "name = \"BTC/USD\"\n",
        "name = \"BTC/USD\"\nunit = \"quote\"\n",
    );
    let config = validate(&in_dollars).unwrap();
    assert_eq!(
        config.instruments[0]
            .source_of(VenueId::BinanceCoinm)
            .and_then(|source| config.instruments[0].contract_size(source)),
        Some("100".parse().unwrap())
    );
}

#[test]
fn an_inverse_contract_where_amounts_are_of_the_coin_is_refused() {
    let error = |text: &str| validate(text).unwrap_err().to_string();
    assert_eq!(
        error(&BTC_NOTIONAL.replace("unit = \"quote\"", "unit = \"base\"")),
        "instruments[0].symbols.bybit = \"inverse:BTCUSD\": an inverse contract, sized in its \
         quote currency: it merges where amounts are counted in the instrument's currency \
         (set instruments[0].unit = \"quote\")"
    );
    assert_eq!(
        error(&BTC_NOTIONAL.replace("unit = \"quote\"", "unit = \"coins\"")),
        "instruments[0].unit = \"coins\": \"base\" (amounts of the base coin) or \"quote\" \
         (their notional in the instrument's currency)"
    );
    assert_eq!(
        error(&BTC_NOTIONAL.replace(", bybit = \"1\"", "")),
        "instruments[0].symbols.bybit = \"inverse:BTCUSD\": an inverse contract: set \
         instruments[0].contract_sizes.bybit to the value of one contract in its quote \
         currency (\"100\")"
    );
    assert_eq!(
        error(&BTC_NOTIONAL.replace("currency = \"USD\"\n", "")),
        "instruments[0].unit = \"BTC/USD-notional\": the instrument's currency is not known: \
         set instruments[0].currency"
    );
}

#[test]
fn a_currency_without_a_rate_or_a_quote_that_cannot_be_read_is_refused() {
    let error = |text: &str| validate(text).unwrap_err().to_string();
    let only_usdt = "[[rates]]\npair = \"USDT/USD\"\ninstrument = \"USDT/USD\"\n";
    assert_eq!(
        error(&format!("{BTC_USD}{only_usdt}")),
        "instruments[1].symbols.coinbase = \"BTC-PERP-INTX\": quoted in USDC, the instrument \
         in USD: configure a [[rates]] pair = \"USDC/USD\""
    );
    let unstated = BTC_USD.replace("quotes = { coinbase = \"USDC\" }\n", "");
    assert_eq!(
        error(&format!("{unstated}{BTC_USD_RATES}")),
        "instruments[1].symbols.coinbase = \"BTC-PERP-INTX\": the currency it is quoted in \
         cannot be read from it: set instruments[1].quotes.coinbase (\"USDC\")"
    );
    let cases = [
        (
            "[[rates]]\npair = \"USDT\"\nfixed = \"1\"\n",
            "rates[0].pair = \"USDT\": a currency pair BASE/QUOTE of two different codes \
             (\"USDT/USD\")",
        ),
        (
            "[[rates]]\npair = \"USDT/USD\"\nfixed = \"0\"\n",
            "rates[0].fixed = \"0\": a positive decimal of at most 8 fractional digits",
        ),
        (
            "[[rates]]\npair = \"USDT/USD\"\n",
            "rates[0] = \"USDT/USD\": set one of `instrument` (its merged book is the rate) \
             and `fixed`",
        ),
        (
            "[[rates]]\npair = \"USDT/USD\"\nfixed = \"1\"\n[[rates]]\npair = \"USD/USDT\"\nfixed = \"1\"\n",
            "rates[1].pair = \"USD/USDT\": the pair (either way round) has a rate already",
        ),
        (
            "[[rates]]\npair = \"USDT/USD\"\ninstrument = \"ETH/BTC\"\n",
            "rates[0].instrument = \"ETH/BTC\": the rate of USDT/USD is read from an \
             instrument named USDT/USD",
        ),
        (
            "[[rates]]\npair = \"USDT/USD\"\ninstrument = \"NONE\"\n",
            "rates[0].instrument = \"NONE\": no such instrument",
        ),
    ];
    for (rates, expected) in cases {
        assert_eq!(error(&format!("{MINIMAL}{rates}")), expected);
    }
}

#[test]
fn a_shard_keeps_only_instruments_whose_rate_it_merges() {
    let text = format!("{BTC_USD}{BTC_USD_RATES}");
    let shard_of = |name: &str| (1..=2).find(|&k| Shard { index: k, count: 2 }.serves(name));
    let (rate_shard, btc_shard) = (shard_of("USDT/USD"), shard_of("BTC/USD"));
    assert_ne!(rate_shard, btc_shard, "the names fall to different shards");
    for index in 1..=2 {
        let sharded = validate(&format!("[service]\nshard = \"{index}/2\"\n{text}"));
        match Some(index) {
            shard if shard == btc_shard && shard != rate_shard => {
                let error = sharded.unwrap_err().to_string();
                assert!(
                    error.contains("whose instrument \"USDT/USD\" falls to another shard"),
                    "{error}"
                );
            }
            shard => {
                let config = sharded.unwrap();
                let rate_instrument = config.rates.iter().find_map(|rate| match rate.from {
                    RateFrom::Instrument(at) => Some(config.instruments[at].name.as_str()),
                    RateFrom::Fixed(_) => None,
                });
                let keeps_rate = shard == rate_shard;
                assert_eq!(rate_instrument, keeps_rate.then_some("USDT/USD"));
            }
        }
    }
}

/// Every configuration the repository ships validates, and so does the example of
/// `config/default.toml`'s comments: one BTC book across every venue's BTC books.
#[test]
fn the_shipped_configurations_and_the_documented_example_validate() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    for path in &files {
        let config = RawConfig::load(path).and_then(|raw| raw.validate());
        assert!(config.is_ok(), "{}: {:?}", path.display(), config.err());
    }
    // The commented example: from its first `# [[instruments]]` to the blank comment line
    // after the last entry.
    let text = std::fs::read_to_string(dir.join("default.toml")).unwrap();
    let start = text
        .find("# [[instruments]]\n# name = \"BTC/USD\"")
        .unwrap();
    let example: String = text[start..]
        .lines()
        .take_while(|line| line.starts_with('#') && !line.starts_with("# With "))
        .map(|line| line.trim_start_matches('#').trim_start())
        .map(|line| format!("{line}\n"))
        .collect();
    let config = validate(&example).unwrap();
    let btc = &config.instruments[0];
    assert_eq!(btc.name, "BTC/USD");
    for venue in VenueId::ALL.iter().filter(|v| **v != VenueId::BinanceSbe) {
        let listed = config
            .instruments
            .iter()
            .any(|i| i.source_of(*venue).is_some());
        assert!(listed, "{venue} is not in the example");
    }
    assert!(btc.source_names.contains(&"okx:BTC-USDT-SWAP".to_owned()));
}

/// Audits are on by default where a venue's streams cannot show a lost event, and off
/// where `audit_every_ms = 0`.
#[test]
fn books_on_streams_that_cannot_show_a_loss_are_audited_by_default() {
    let audit = |text: &str, venue: VenueId| {
        let symbol = match venue {
            VenueId::Bitstamp => "ethbtc",
            VenueId::CoinbaseExchange => "ETH-BTC",
            _ => "ETHBTC",
        };
        let instrument = format!(
            "[[instruments]]\nname = \"ETH/BTC\"\nsymbols = {{ {venue} = \"{symbol}\" }}\n"
        );
        let config = validate(&format!("{text}{instrument}")).unwrap();
        let configured = config.venues.iter().find(|v| v.venue == venue).cloned();
        match configured.map(|v| v.mode) {
            Some(FeedMode::Diff(settings)) => settings.audit,
            other => panic!("{venue} in diff mode: {other:?}"),
        }
    };
    let every_minute = Some(crate::feed::core::audit::AuditSettings {
        every: Duration::from_secs(60),
        settle: Duration::from_secs(1),
    });
    assert_eq!(
        audit("[venues.bitstamp]\nmode = \"diff\"\n", VenueId::Bitstamp),
        every_minute
    );
    assert_eq!(
        audit("[venues.coinbase_exchange]\n", VenueId::CoinbaseExchange),
        every_minute
    );
    assert_eq!(
        audit("[venues.binance]\nmode = \"diff\"\n", VenueId::Binance),
        None
    );
    let off = "[venues.bitstamp]\nmode = \"diff\"\naudit_every_ms = 0\n";
    assert_eq!(audit(off, VenueId::Bitstamp), None);
}

#[test]
fn an_instruments_fee_names_one_of_its_books() {
    let text = "[[instruments]]\nname = \"ETH/BTC\"\nsymbols = { binance = \"ETHBTC\" }\n\
                taker_fees_bps = { okx = \"8\" }\n";
    assert_eq!(
        validate(text).unwrap_err().to_string(),
        "instruments[0].taker_fees_bps.okx = \"8\": no book of this name: a venue of the \
         instrument, or venue:symbol where it takes several books of the venue"
    );
    let text = "[venues.okx]\ntaker_fee_bps = \"8\"\n[[instruments]]\nname = \"BTC/USDT\"\n\
                symbols = { okx = [\"BTC-USDT\", \"BTC-USDT-SWAP\"] }\n\
                contract_sizes = { \"okx:BTC-USDT-SWAP\" = \"0.01\" }\n\
                taker_fees_bps = { \"okx:BTC-USDT-SWAP\" = \"5.25\" }\n";
    let config = validate(text).expect("valid");
    let bps: Vec<FixedPoint> = config.instruments[0]
        .taker_fees
        .iter()
        .map(|fee| fee.bps())
        .collect();
    let expected = ["8", "5.25"].map(|text| text.parse::<FixedPoint>().unwrap());
    assert_eq!(bps, expected, "the venue's, then the book's own");
}

/// A reload changes the instruments alone: an instrument added, or one moved in the list
/// (a rate's among them, compared by its name), is no difference; any other setting, a
/// venue both configure differently, or a rate's source, is named.
#[test]
fn a_reload_s_difference_is_named_unless_only_instruments_change() {
    let running = validate(&format!("{BTC_USD}{BTC_USD_RATES}")).unwrap();
    let eth_btc = "[[instruments]]\nname = \"ETH/BTC\"\nsymbols = { binance = \"ETHBTC\" }\n";
    // USDT/USD, the rate's instrument, now second: its index moved, its name did not.
    let (usdt_usd, btc_usd) =
        BTC_USD.split_at(BTC_USD.find("[[instruments]]\nname = \"BTC/USD\"").unwrap());
    let reordered = format!("{eth_btc}{btc_usd}{usdt_usd}{BTC_USD_RATES}");
    assert_eq!(
        running.reload_difference(&validate(&reordered).unwrap()),
        None
    );
    for (changed, named) in [
        (
            format!("[service]\ndepth = 5\n{BTC_USD}{BTC_USD_RATES}"),
            "service.depth",
        ),
        (
            format!("[venues.kraken]\nread_idle_timeout_ms = 9000\n{BTC_USD}{BTC_USD_RATES}"),
            "[venues]",
        ),
        (
            format!("{BTC_USD}{}", BTC_USD_RATES.replace("1.0001", "1.0002")),
            "[[rates]]",
        ),
        (
            format!("[merger]\nidle = \"spin\"\n{BTC_USD}{BTC_USD_RATES}"),
            "merger.idle",
        ),
    ] {
        let changed = validate(&changed).unwrap();
        assert_eq!(running.reload_difference(&changed), Some(named));
    }
}

/// An instrument's `unit_size` is a power of ten of coins, for one whose amounts count
/// coins; its books go on connections of their own unit, since a connection's frames are
/// read in one.
#[test]
fn a_unit_size_is_a_power_of_ten_of_coins_with_connections_of_its_own() {
    let text = "[[instruments]]\nname = \"PEPE/USDT\"\nunit_size = \"1000000\"\n\
        symbols = { binance = \"PEPEUSDT\", okx = \"PEPE-USDT\" }\n\
        [[instruments]]\nname = \"BTC/USDT\"\nsymbols = { binance = \"BTCUSDT\", okx = \"BTC-USDT\" }\n\
        [[instruments]]\nname = \"SHIB/USDT\"\nunit_size = \"1000000\"\n\
        symbols = { binance = \"SHIBUSDT\", okx = \"SHIB-USDT\" }\n";
    let config = validate(text).unwrap();
    let million = UnitSize::parse("1000000").unwrap();
    let units: Vec<_> = config.instruments.iter().map(|i| i.unit_size).collect();
    assert_eq!(units, [million, UnitSize::COIN, million]);
    let connections = crate::service::plan_connections(&config);
    let carried: Vec<(VenueId, Vec<&str>)> = (connections.iter())
        .map(|connection| {
            let symbols = connection
                .streams
                .iter()
                .map(|s| s.symbol.as_str())
                .collect();
            (connection.venue, symbols)
        })
        .collect();
    assert_eq!(
        carried,
        [
            (VenueId::Binance, vec!["PEPEUSDT", "SHIBUSDT"]),
            (VenueId::Okx, vec!["PEPE-USDT", "SHIB-USDT"]),
            (VenueId::Binance, vec!["BTCUSDT"]),
            (VenueId::Okx, vec!["BTC-USDT"]),
        ]
    );
    for connection in &connections {
        let unit = connection.streams[0].unit;
        assert!(connection.streams.iter().all(|stream| stream.unit == unit));
    }

    let error =
        |size: &str| validate(&MINIMAL.replace("name", &format!("unit_size = {size:?}\nname")));
    let refused = |size: &str| error(size).unwrap_err().to_string();
    let read = |size: &str| {
        error(size)
            .ok()
            .map(|config| config.instruments[0].unit_size.exponent())
    };
    assert_eq!(
        (read("1000"), read("1"), read("0.001")),
        (Some(3), Some(0), Some(-3))
    );
    assert_eq!(
        refused("2000"),
        "instruments[0].unit_size = \"2000\": a power of ten of coins from 10^-18 to 10^18, as \
         \"1000000\", \"1\" or \"0.001\""
    );
    assert_eq!(
        validate(
            &BTC_NOTIONAL.replace("unit = \"quote\"", "unit = \"quote\"\nunit_size = \"1000\"")
        )
        .unwrap_err()
        .to_string(),
        "instruments[0].unit_size = \"1000\": the instrument's amounts count its currency \
         (unit = \"quote\"), not coins"
    );
    let rate_in_thousands = "[[instruments]]\nname = \"BTC/USD\"\n\
        symbols = { kraken = \"BTC/USD\", binance = \"BTCUSDT\" }\n\
        [[instruments]]\nname = \"USDT/USD\"\nunit_size = \"1000\"\nsymbols = { kraken = \"USDT/USD\" }\n\
        [[rates]]\npair = \"USDT/USD\"\ninstrument = \"USDT/USD\"\n";
    assert_eq!(
        validate(rate_in_thousands).unwrap_err().to_string(),
        "rates[0].instrument = \"USDT/USD\": a rate is a coin's price: this instrument's are a \
         unit's of 1000 coins (its unit_size)"
    );
    assert!(validate(&rate_in_thousands.replace("unit_size = \"1000\"\n", "")).is_ok());
}
