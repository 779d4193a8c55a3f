//! `mergebook watch` as a user runs it: in a pseudo-terminal, against the service on the
//! simulator, over gRPC or from NATS. The screen is what a terminal would show (`vt100`
//! interprets the output).

use crate::common;

use common::KillOnDrop;
use common::nats::NatsServer;
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

/// The service with `config`, serving gRPC on `grpc_port` (0: any free port), with `extra`
/// flags. Its log goes to a file, printed if the test fails: a viewer that never sees a
/// shard's book is explained by that shard's log.
fn service(config: &str, grpc_port: u16, extra: &[&str]) -> Service {
    static STARTED: AtomicUsize = AtomicUsize::new(0);
    let log = std::env::temp_dir().join(format!(
        "mergebook-watch-{}-{}.log",
        std::process::id(),
        STARTED.fetch_add(1, Ordering::Relaxed)
    ));
    let child = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["--config", config, "--grpc-listen"])
        .arg(format!("127.0.0.1:{grpc_port}"))
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    Service {
        process: KillOnDrop(child),
        log,
    }
}

struct Service {
    process: KillOnDrop,
    log: PathBuf,
}

impl Drop for Service {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let exited = self.process.0.try_wait().ok().flatten();
            eprintln!(
                "service {} (exited: {exited:?}) logged:\n{log}",
                self.process.0.id()
            );
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// `mergebook watch ARGS` in a pseudo-terminal, and the screen it draws.
struct Terminal {
    pty: Box<dyn MasterPty + Send>,
    watch: Box<dyn Child + Send + Sync>,
    keys: Box<dyn Write + Send>,
    screen: Arc<Mutex<vt100::Parser>>,
}

fn cells(count: u16) -> NonZeroU16 {
    NonZeroU16::new(count).unwrap()
}

impl Terminal {
    fn watch(args: &[&str], rows: u16, columns: u16) -> Terminal {
        let pty = native_pty_system()
            .openpty(Self::size(rows, columns))
            .unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_mergebook"));
        command.arg("watch");
        command.args(args);
        command.env("TERM", "xterm-256color");
        let watch = pty.slave.spawn_command(command).unwrap();
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            cells(rows),
            cells(columns),
            0,
        )));
        let mut output = pty.master.try_clone_reader().unwrap();
        let terminal = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0; 4096];
            while let Ok(read @ 1..) = output.read(&mut buffer) {
                terminal.lock().unwrap().process(&buffer[..read]);
            }
        });
        let keys = pty.master.take_writer().unwrap();
        Terminal {
            pty: pty.master,
            watch,
            keys,
            screen,
        }
    }

    fn size(rows: u16, cols: u16) -> PtySize {
        PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        }
    }

    fn text(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, what: &str, accept: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = self.text();
            if accept(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not on the screen within {WAIT:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn press(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
    }

    fn resize(&self, rows: u16, columns: u16) {
        self.pty.resize(Self::size(rows, columns)).unwrap();
        self.screen
            .lock()
            .unwrap()
            .set_size(cells(rows), cells(columns));
    }

    /// Quits with `q`: exit 0, the terminal's own screen back.
    fn quit(mut self) {
        self.press("q");
        let status = common::wait_until("watch to quit", WAIT, || self.watch.try_wait().unwrap());
        assert!(status.success(), "{status:?}");
        // Its last output may still be on its way through the pseudo-terminal.
        common::wait_until("the terminal's own screen back", WAIT, || {
            let alternate = self.screen.lock().unwrap().screen().alternate_screen();
            (!alternate).then_some(())
        });
    }
}

/// A live ladder of `instrument` (shown as the `position`th of the instruments known):
/// the header, `venues` synced in the panel, a spread between asks and bids.
fn live_ladder(text: &str, instrument: &str, position: &str, venues: &[impl AsRef<str>]) -> bool {
    text.starts_with("mergebook watch")
        && text.contains(&format!("{instrument} ({position})"))
        && text.contains("\nlive · seq ")
        && text.contains("── spread ")
        && venues.iter().all(|venue| {
            text.lines().any(|line| {
                // "venue synced", or "venue USDT synced" where its book is converted.
                let panel = line.rsplit('│').nth(1).unwrap_or_default();
                let mut words = panel.split_whitespace();
                words.next() == Some(venue.as_ref()) && words.take(2).any(|word| word == "synced")
            })
        })
}

/// The offline demo merges every venue, in one instrument or another.
#[test]
fn the_demo_merges_every_venue() {
    let merged: std::collections::BTreeSet<String> = common::demo_instruments()
        .into_iter()
        .flat_map(|(_, venues)| venues)
        .collect();
    for venue in mergebook::venue::VenueId::ALL {
        assert!(
            merged.contains(venue.name()),
            "config/sim.toml does not merge {venue}"
        );
    }
}

#[test]
fn watch_shows_the_ladder_and_survives_the_service_s_restart() {
    let grpc_port = common::free_port();
    let mut first = service("config/sim.toml", grpc_port, &[]);
    let address = format!("127.0.0.1:{grpc_port}");
    let mut terminal = Terminal::watch(&["--grpc", &address, "--instrument", "ETH/BTC"], 30, 120);
    // gRPC lists the instruments in the configuration's order.
    let names: Vec<String> = common::demo_instruments()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let index = |name: &str| names.iter().position(|known| known == name).unwrap();
    let position = |name: &str| format!("{}/{}", index(name) + 1, names.len());

    let text = terminal.wait_for("the live ladder", |text| {
        live_ladder(
            text,
            "ETH/BTC",
            &position("ETH/BTC"),
            &common::demo_venues("ETH/BTC"),
        )
    });
    let spread = text.find("── spread ").unwrap();
    let ask = text.find(" 0.0").unwrap();
    assert!(ask < spread, "asks above the spread:\n{text}");

    // The size box: 25 ETH bought across the venues, the service's quote of it, each
    // venue's share adding up to what was filled; Esc closes it.
    terminal.press("s25\r");
    let text = terminal.wait_for("the quote of 25 ETH", |text| text.contains("average "));
    // The README's picture of it.
    if let Some(path) = std::env::var_os("MERGEBOOK_WATCH_SCREEN") {
        std::fs::write(path, &text).unwrap();
    }
    let box_lines: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.contains("buy 25 ETH"))
        .take_while(|line| !line.starts_with('└'))
        .map(|line| line.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect();
    let decimal = |text: &str| text.parse::<mergebook::fixed::FixedPoint>().unwrap();
    let filled = box_lines
        .get(2)
        .and_then(|line| line.strip_prefix("filled "));
    let filled = filled.and_then(|rest| rest.split(' ').next());
    assert_eq!(filled, Some("25"), "{text}");
    let venues = &box_lines[3..];
    let shares = venues.iter().map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(
            common::demo_venues("ETH/BTC")
                .iter()
                .any(|venue| venue.as_str() == words[0])
                && words[3].starts_with("level"),
            "a venue's share: {line:?}\n{text}"
        );
        decimal(words[1]).raw()
    });
    assert_eq!(shares.sum::<u64>(), decimal("25").raw(), "{text}");
    terminal.press("\x1b");
    terminal.wait_for("the size box closed", |text| !text.contains("┌ size "));

    // A narrower, taller terminal: the venue panel moves below the ladder.
    terminal.resize(40, 70);
    terminal.wait_for("the venue panel below the ladder", |text| {
        let line_of = |what| text.lines().position(|line| line.contains(what));
        matches!((line_of("── spread "), line_of(" venues ")), (Some(spread), Some(venues)) if spread < venues)
            && text.lines().all(|line| line.chars().count() <= 70)
    });

    // The service goes away: the loss is shown, the last book kept, not live.
    drop(first.process.0.kill());
    let _ = first.process.0.wait();
    terminal.wait_for("the lost connection", |text| {
        text.contains("connection lost") && text.contains("last book received, not live")
    });

    // It comes back on the same port: the viewer reconnects by itself.
    let _second = service("config/sim.toml", grpc_port, &[]);
    terminal.wait_for("the ladder after the restart", |text| {
        live_ladder(
            text,
            "ETH/BTC",
            &position("ETH/BTC"),
            &common::demo_venues("ETH/BTC"),
        )
    });

    // Keys: the other instrument (the BTC perpetuals, Hyperliquid's among them), fewer
    // levels, then quit, leaving the terminal as it was.
    terminal.press("\t");
    terminal.wait_for("the BTC perpetuals", |text| {
        live_ladder(
            text,
            "BTC/USDC",
            &position("BTC/USDC"),
            &common::demo_venues("BTC/USDC"),
        )
    });
    terminal.press("-");
    terminal.wait_for("depth 9", |text| text.contains("BTC/USDC: top 9"));
    terminal.quit();
}

/// Two shards publish to NATS; `watch --nats` sees both shards' instruments and follows
/// the one chosen with the arrow keys.
#[test]
fn watch_reads_every_shard_s_instruments_from_nats() {
    let Some(nats) = NatsServer::start(common::free_port(), "") else {
        return;
    };
    let config = std::env::temp_dir().join(format!("mergebook-watch-nats-{}.toml", nats.port));
    // The simulator config and one more instrument, on two shards, publishing on NATS.
    let sim = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/sim.toml"));
    let sim = sim.unwrap().replace(
        "[grpc]",
        &format!("[nats]\nurl = \"{}\"\n\n[grpc]", nats.url()),
    );
    let second = "[[instruments]]\nname = \"BTC/USD\"\nsymbols = { binance = \"BTCUSDT\", bitstamp = \"btcusd\" }\n[[rates]]\npair = \"USDT/USD\"\nfixed = \"1\"\n";
    std::fs::write(&config, format!("{sim}\n{second}")).unwrap();
    let config = config.to_str().unwrap();
    let _shards = [
        service(config, 0, &["--shard", "1/2"]),
        service(config, 0, &["--shard", "2/2"]),
    ];

    let mut terminal =
        Terminal::watch(&["--nats", &nats.url(), "--instrument", "ETH/BTC"], 30, 120);
    // NATS lists the instruments in name order.
    let mut names: Vec<String> = common::demo_instruments()
        .into_iter()
        .map(|(name, _)| name)
        .chain(["BTC/USD".to_owned()])
        .collect();
    names.sort();
    let index = |name: &str| names.iter().position(|known| known == name).unwrap();
    let position = |name: &str| format!("{}/{}", index(name) + 1, names.len());
    terminal.wait_for("ETH/BTC from NATS, every instrument known", |text| {
        live_ladder(
            text,
            "ETH/BTC",
            &position("ETH/BTC"),
            &common::demo_venues("ETH/BTC"),
        )
    });
    // Tab steps to the next instrument in that order, wrapping round.
    let steps = (names.len() + index("BTC/USD") - index("ETH/BTC")) % names.len();
    terminal.press(&"\t".repeat(steps));
    terminal.wait_for("BTC/USD from the other shard", |text| {
        live_ladder(
            text,
            "BTC/USD",
            &position("BTC/USD"),
            &["binance", "bitstamp"],
        )
    });
    // NATS carries no quotes: the size box says where to ask them.
    terminal.press("s1\r");
    terminal.wait_for("quotes asked over gRPC", |text| {
        text.contains("quotes are asked over gRPC: mergebook watch --grpc HOST:PORT")
    });
    terminal.quit();
}
