//! `mergebook watch` as a user runs it: in a pseudo-terminal, against the service on the
//! simulator. The screen is what a terminal would show (`vt100` interprets the output).

mod common;

use common::KillOnDrop;
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ROWS: u16 = 30;
const COLUMNS: u16 = 120;
const WAIT: Duration = Duration::from_secs(30);

/// The service on the simulator config, serving gRPC on `grpc_port`.
fn service(grpc_port: u16) -> KillOnDrop {
    let child = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["--config", "config/sim.toml", "--grpc-listen"])
        .arg(format!("127.0.0.1:{grpc_port}"))
        .args(["--metrics-listen", "127.0.0.1:0"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    KillOnDrop(child)
}

/// The text on the terminal's screen now.
fn screen(parser: &Mutex<vt100::Parser>) -> String {
    parser.lock().unwrap().screen().contents()
}

fn wait_for_screen(parser: &Mutex<vt100::Parser>, what: &str, accept: impl Fn(&str) -> bool) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let text = screen(parser);
        if accept(&text) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not on the screen within {WAIT:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A live ladder: the header, the four venues synced, a spread between asks and bids.
fn shows_a_live_ladder(text: &str) -> bool {
    text.starts_with("mergebook watch")
        && text.contains("ETH/BTC (1/1)")
        && text.contains("\nlive · seq ")
        && text.contains("── spread ")
        && ["binance", "bitstamp", "kraken", "bybit"]
            .iter()
            .all(|venue| {
                text.lines().any(|line| {
                    let panel = line.rsplit('│').nth(1).unwrap_or_default();
                    panel.split_whitespace().take(2).eq([*venue, "synced"])
                })
            })
}

#[test]
fn watch_shows_the_ladder_and_survives_the_service_s_restart() {
    let grpc_port = common::free_port();
    let mut first = service(grpc_port);

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: ROWS,
            cols: COLUMNS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_mergebook"));
    command.args(["watch", "--grpc", &format!("127.0.0.1:{grpc_port}")]);
    command.env("TERM", "xterm-256color");
    let mut watch = pty.slave.spawn_command(command).unwrap();
    drop(pty.slave);
    let size = |cells: u16| std::num::NonZeroU16::new(cells).unwrap();
    let parser = Arc::new(Mutex::new(vt100::Parser::new(size(ROWS), size(COLUMNS), 0)));
    let mut output = pty.master.try_clone_reader().unwrap();
    let terminal = Arc::clone(&parser);
    std::thread::spawn(move || {
        let mut buffer = [0; 4096];
        while let Ok(read @ 1..) = output.read(&mut buffer) {
            terminal.lock().unwrap().process(&buffer[..read]);
        }
    });
    let mut keys = pty.master.take_writer().unwrap();

    wait_for_screen(&parser, "the live ladder", shows_a_live_ladder);
    let text = screen(&parser);
    let spread = text.find("── spread ").unwrap();
    let ask = text.find(" 0.0").unwrap();
    assert!(ask < spread, "asks above the spread:\n{text}");
    // The README's picture of it.
    if let Some(path) = std::env::var_os("MERGEBOOK_WATCH_SCREEN") {
        std::fs::write(path, &text).unwrap();
    }

    // A narrower, taller terminal: the venue panel moves below the ladder.
    let narrow = PtySize {
        rows: 40,
        cols: 70,
        pixel_width: 0,
        pixel_height: 0,
    };
    pty.master.resize(narrow).unwrap();
    parser.lock().unwrap().set_size(size(40), size(70));
    wait_for_screen(&parser, "the venue panel below the ladder", |text| {
        let line_of = |what| text.lines().position(|line| line.contains(what));
        matches!((line_of("── spread "), line_of(" venues ")), (Some(spread), Some(venues)) if spread < venues)
            && text.lines().all(|line| line.chars().count() <= 70)
    });

    // The service goes away: the loss is shown, the last book kept, not live.
    drop(first.0.kill());
    let _ = first.0.wait();
    wait_for_screen(&parser, "the lost connection", |text| {
        text.contains("connection lost") && text.contains("last book received, not live")
    });

    // It comes back on the same port: the viewer reconnects by itself.
    let _second = service(grpc_port);
    wait_for_screen(&parser, "the ladder after the restart", shows_a_live_ladder);

    // Keys: fewer levels, then quit, leaving the terminal as it was.
    keys.write_all(b"-").unwrap();
    wait_for_screen(&parser, "depth 9", |text| text.contains("ETH/BTC: top 9"));
    keys.write_all(b"q").unwrap();
    let status = common::wait_until("watch to quit", WAIT, || watch.try_wait().unwrap());
    assert!(status.success(), "{status:?}");
    assert!(
        !parser.lock().unwrap().screen().alternate_screen(),
        "the alternate screen was left"
    );
}
