//! `mergebook replay … --parquet`: the consolidated summaries written as Parquet, read back
//! by an independent reader (pyarrow), are the JSON lines the same replay prints, row for
//! row, decimals exact; market-data archives of the same messages replay to the same rows.

use crate::common;
use serde_json::Value;

const BINANCE_TIMELINE: &str = "tests/fixtures/binance/timeline_NKNUSDT_LRCBTC.jsonl";
const BITSTAMP_TIMELINE: &str = "tests/fixtures/bitstamp/timeline_ethusd_batbtc_usdteur.jsonl";

/// Reads a Parquet file with pyarrow and prints each row as the JSON line mergebook
/// writes for a summary (the members both hold): decimals as their text, times in ns.
const PARQUET_TO_LINES: &str = r#"
import json, sys
import pyarrow as pa
import pyarrow.parquet as pq
table = pq.read_table(sys.argv[1])
assert str(table.schema.field("ts").type) == "timestamp[ns, tz=UTC]"
# Times as their integer ns (Python's datetime stops at microseconds).
for index, field in enumerate(table.schema):
    if pa.types.is_timestamp(field.type):
        table = table.set_column(index, field.name, table.column(index).cast(pa.int64()))
names = table.schema.names
def text(decimal):
    return format(decimal, "f")  # all 8 places, never an exponent
depth = sum(1 for name in names if name.startswith("bid_price_"))
sources = [name[len("state_"):] for name in names if name.startswith("state_")]
for field in ("bid_price_1", "ask_amount_1", "spread"):
    assert str(table.schema.field(field).type) == "decimal128(38, 8)", field
for row in table.to_pylist():
    def side(prefix):
        levels = []
        for n in range(1, depth + 1):
            if row[f"{prefix}_price_{n}"] is None:
                break
            levels.append({"exchange": row[f"{prefix}_venue_{n}"],
                           "price": text(row[f"{prefix}_price_{n}"]),
                           "amount": text(row[f"{prefix}_amount_{n}"])})
        return levels
    spread = row["spread"]
    print(json.dumps({
        "instrument": row["instrument"], "seq": row["seq"],
        "ts_ns": row["ts"],
        "spread": None if spread is None else text(spread),
        "bids": side("bid"), "asks": side("ask"),
        "venues": {s: row[f"state_{s}"] for s in sources if row[f"state_{s}"] is not None},
        # The JSON line says a unit other than the coin's only.
        "unit_size": None if row["unit_size"] == "1" else row["unit_size"],
    }))
"#;

/// What `script` prints, run by `python` with `arguments`; its failure fails the test.
fn run_python(python: &std::path::Path, script: &str, arguments: &[&str]) -> String {
    let run = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .args(arguments)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8(run.stdout).unwrap()
}

/// The members of a JSON line both outputs hold.
fn comparable(line: &Value) -> Value {
    let keep = [
        "instrument",
        "seq",
        "ts_ns",
        "spread",
        "bids",
        "asks",
        "venues",
        "unit_size",
    ];
    Value::Object(
        keep.iter()
            .map(|key| ((*key).to_owned(), line[*key].clone()))
            .collect(),
    )
}

#[test]
fn a_replay_to_parquet_holds_the_json_lines_row_for_row() {
    let Some(python) = common::python_with("pyarrow") else {
        return;
    };
    let venues = [
        "--venue",
        &format!("binance={BINANCE_TIMELINE}"),
        "--venue",
        &format!("bitstamp={BITSTAMP_TIMELINE}"),
    ];
    let (lines, _) = common::run_ok(&[&["replay", "diff"][..], &venues[..]].concat());
    let dir = std::env::temp_dir().join(format!("mergebook-history-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("summaries.parquet");
    let file_text = file.display().to_string();
    let (stdout, _) = common::run_ok(
        &[
            &["replay", "diff", "--parquet", &file_text][..],
            &venues[..],
        ]
        .concat(),
    );
    assert!(stdout.is_empty(), "the summaries go to the file: {stdout}");
    let from_parquet: Vec<Value> = run_python(&python, PARQUET_TO_LINES, &[&file_text])
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let printed: Vec<Value> = lines
        .lines()
        .map(|line| comparable(&serde_json::from_str(line).unwrap()))
        .collect();
    assert!(printed.len() > 400, "{} summaries", printed.len());
    assert_eq!(from_parquet.len(), printed.len());
    for (index, (parquet, line)) in from_parquet.iter().zip(&printed).enumerate() {
        assert_eq!(parquet, line, "row {index}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

const GATE_TIMELINE: &str =
    "tests/fixtures/gate/spot_timeline_order_book_update_7pairs_2021-04-22.jsonl";
const USDM_TIMELINE: &str =
    "tests/fixtures/binance_futures/usdm_timeline_AKROUSDT_2021-07-22.jsonl";
const COINM_TIMELINE: &str =
    "tests/fixtures/binance_futures/coinm_timeline_TRXUSD_PERP_2021-07-21.jsonl";

/// `ns` since the Unix epoch as an archive writes a receive time:
/// `2021-10-12T00:28:33.2644690Z` (100 ns steps): the simulator's microsecond timestamp,
/// and the tenth of a microsecond after it.
fn archive_time(ns: u64) -> String {
    let mut text = Vec::new();
    mergebook::venue::write_timestamp(ns / 1_000, &mut text);
    text.insert(text.len() - 1, b'0' + (ns / 100 % 10) as u8);
    String::from_utf8(text).unwrap()
}

/// The message an archive stores for `venue`'s REST snapshot of `url` (docs/history.md).
fn archived_snapshot(venue: &str, url: &str, body: &str) -> String {
    let query = |key: &str| {
        url.split(['?', '&'])
            .find_map(|pair| pair.strip_prefix(key))
            .unwrap()
            .to_owned()
    };
    match venue {
        // Binance's spot and futures alike (tardis-node's one Binance feed).
        "binance" | "binance_usdm" | "binance_coinm" => format!(
            r#"{{"stream":"{}@depthSnapshot","generated":true,"data":{body}}}"#,
            query("symbol=").to_ascii_lowercase()
        ),
        "bitstamp" => {
            let pair = url.trim_end_matches('/').rsplit('/').next().unwrap();
            format!(
                r#"{{"data":{body},"event":"snapshot","channel":"diff_order_book_{pair}","generated":true}}"#
            )
        }
        "gate" => format!(
            r#"{{"result":{body},"event":"snapshot","channel":"spot.order_book_update","symbol":"{}","generated":true}}"#,
            query("currency_pair=")
        ),
        _ => unreachable!(),
    }
}

/// A recorded timeline rewritten as a market-data archive: each received frame, and each
/// REST snapshot as the archive stores it, after its receive time; gzip-compressed if
/// asked. `bad_line` is put in after the first line.
fn archive_of(venue: &str, timeline: &str, dir: &std::path::Path, gzip: bool) -> String {
    let mut text = String::new();
    for line in std::fs::read_to_string(timeline).unwrap().lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        // The receive time's own text: exact, where a float would round it.
        let recv_ts = line
            .split(r#""recv_ts": "#)
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        let received_ns = mergebook::record::timeline::parse_time(recv_ts).unwrap();
        let raw = entry["raw"].as_str().unwrap_or_default();
        let message = match entry["kind"].as_str().unwrap() {
            "ws_recv" => raw.to_owned(),
            "rest_response" => archived_snapshot(venue, entry["url"].as_str().unwrap(), raw),
            _ => continue,
        };
        text.push_str(&format!("{} {message}\n", archive_time(received_ns)));
        if text.lines().count() == 1 {
            text.push_str("not an archive line\n");
        }
    }
    let path = dir.join(format!("{venue}.archive{}", if gzip { ".gz" } else { "" }));
    match gzip {
        false => std::fs::write(&path, text).unwrap(),
        true => {
            use std::io::Write;
            let mut encoder = flate2::write::GzEncoder::new(
                std::fs::File::create(&path).unwrap(),
                flate2::Compression::default(),
            );
            encoder.write_all(text.as_bytes()).unwrap();
            encoder.finish().unwrap();
        }
    }
    path.display().to_string()
}

#[test]
fn archive_times_are_written_as_archives_write_them() {
    assert_eq!(
        archive_time(1_633_998_513_264_469_000),
        "2021-10-12T00:28:33.2644690Z"
    );
    assert_eq!(
        mergebook::record::timeline::parse_time("2021-10-12T00:28:33.2644690Z"),
        Some(1_633_998_513_264_469_000)
    );
}

/// The recorded timelines of five REST-seeded venues (Binance spot, USDⓈ-M and COIN-M
/// futures, Bitstamp, Gate spot) rewritten as archives (the same messages in the
/// archive's lines, snapshots as it stores them; three gzip-compressed, an unreadable line
/// in each) replay to the summaries of the recordings themselves: the same JSON lines, the
/// same Parquet rows. Each unreadable line is named.
#[test]
fn archives_replay_to_the_rows_of_the_same_messages_recorded() {
    let dir = std::env::temp_dir().join(format!("mergebook-archives-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let recorded = [
        "--venue",
        &format!("binance={BINANCE_TIMELINE}"),
        "--venue",
        &format!("bitstamp={BITSTAMP_TIMELINE}"),
        "--venue",
        &format!("gate={GATE_TIMELINE}"),
        "--venue",
        &format!("binance_usdm={USDM_TIMELINE}"),
        "--venue",
        &format!("binance_coinm={COINM_TIMELINE}"),
    ];
    let archived = [
        "--venue",
        &format!(
            "binance={}",
            archive_of("binance", BINANCE_TIMELINE, &dir, true)
        ),
        "--venue",
        &format!(
            "bitstamp={}",
            archive_of("bitstamp", BITSTAMP_TIMELINE, &dir, false)
        ),
        "--venue",
        &format!("gate={}", archive_of("gate", GATE_TIMELINE, &dir, true)),
        "--venue",
        &format!(
            "binance_usdm={}",
            archive_of("binance_usdm", USDM_TIMELINE, &dir, false)
        ),
        "--venue",
        &format!(
            "binance_coinm={}",
            archive_of("binance_coinm", COINM_TIMELINE, &dir, true)
        ),
    ];
    let (from_recordings, _) = common::run_ok(&[&["replay", "diff"][..], &recorded[..]].concat());
    let (from_archives, stderr) =
        common::run_ok(&[&["replay", "diff"][..], &archived[..]].concat());
    for venue in [
        "binance.archive.gz",
        "bitstamp.archive",
        "gate.archive.gz",
        "binance_usdm.archive",
        "binance_coinm.archive.gz",
    ] {
        let named = format!(
            "{venue}: 1 line(s) without a receive time before the message, left out (the first: line 2)"
        );
        assert!(stderr.contains(&named), "{named}\n{stderr}");
    }
    assert!(from_recordings.lines().count() > 700);
    for symbol in ["AKROUSDT", "TRXUSDPERP"] {
        let of_symbol = format!(r#""instrument":"{symbol}""#);
        assert!(from_archives.matches(&of_symbol).count() > 100, "{symbol}");
    }
    assert_eq!(from_archives, from_recordings, "the same summaries");

    let Some(python) = common::python_with("pyarrow") else {
        return;
    };
    let parquet = |arguments: &[&str], name: &str| {
        let file = dir.join(name).display().to_string();
        common::run_ok(&[&["replay", "diff", "--parquet", &file][..], arguments].concat());
        file
    };
    let (a, b) = (
        parquet(&recorded, "recorded.parquet"),
        parquet(&archived, "archived.parquet"),
    );
    let compare = "import sys, pyarrow.parquet as pq\n\
                   a, b = pq.read_table(sys.argv[1]), pq.read_table(sys.argv[2])\n\
                   assert a.num_rows > 400 and a.equals(b), (a.num_rows, b.num_rows)";
    run_python(&python, compare, &[&a, &b]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--from` writes no summary published before it (the books built from the start all
/// the same) and `--until` stops after the last frame at or before it: the summaries of
/// the window are those of the whole replay that fall in it.
#[test]
fn a_window_of_a_replay_is_the_whole_replay_s_summaries_in_it() {
    let venue = format!("bitstamp={BITSTAMP_TIMELINE}");
    let (whole, _) = common::run_ok(&["replay", "diff", "--venue", &venue]);
    let (from, until) = ("2022-01-05T00:48:30Z", "1641343715");
    let (window, _) = common::run_ok(&[
        "replay", "diff", "--venue", &venue, "--from", from, "--until", until,
    ]);
    let from_ns = mergebook::record::timeline::parse_time(from).unwrap();
    let until_ns = 1_641_343_715_000_000_000;
    let in_window: Vec<&str> = whole
        .lines()
        .filter(|line| {
            let ts: u64 = serde_json::from_str::<Value>(line).unwrap()["ts_ns"]
                .as_u64()
                .unwrap();
            (from_ns..=until_ns).contains(&ts)
        })
        .collect();
    assert!(in_window.len() > 20 && in_window.len() + 100 < whole.lines().count());
    assert_eq!(window.lines().collect::<Vec<_>>(), in_window);
}

/// The configuration the archive replays below merge with: five levels, both venues in
/// diff mode, three instruments named as the configuration names them, NKN/USDT's amounts
/// in USDT (`unit = "quote"`); Bitstamp's `batbtc` and `usdteur` not followed.
fn archive_config(dir: &std::path::Path) -> String {
    use mergebook::venue::VenueId::{Binance, Bitstamp};
    let config = common::config::TestConfig::new()
        .set("service.depth", 5)
        .set("venues.binance.mode", "diff")
        .set("venues.bitstamp.mode", "diff")
        .instrument("NKN/USDT", &[(Binance, "NKNUSDT")])
        .last_instrument("unit", "quote")
        .instrument("LRC/BTC", &[(Binance, "LRCBTC")])
        .instrument("ETH/USD", &[(Bitstamp, "ethusd")]);
    let path = dir.join("archive.toml");
    std::fs::write(&path, config.toml()).unwrap();
    path.display().to_string()
}

/// A decimal's text as an integer of 10⁻⁸.
fn units_of(text: &str) -> i128 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let fraction = format!("{fraction:0<8}");
    whole.parse::<i128>().unwrap() * 100_000_000 + fraction.parse::<i128>().unwrap()
}

/// Archives replayed with a configuration (`replay archive`) merge as it says: its
/// instruments' names, its depth, its units. Each instrument's summaries are those the
/// symbol-by-symbol replay (`replay diff`) makes of the same messages at the same depth,
/// number for number, with NKN/USDT's amounts each level's value in USDT (price times
/// amount, rounded down to 10⁻⁸); the books it does not follow are not in it.
#[test]
fn archives_replayed_with_a_configuration_merge_its_instruments_in_its_units() {
    let dir = std::env::temp_dir().join(format!("mergebook-configured-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = archive_config(&dir);
    let binance = archive_of("binance", BINANCE_TIMELINE, &dir, true);
    let bitstamp = archive_of("bitstamp", BITSTAMP_TIMELINE, &dir, false);
    let (configured, _) = common::run_ok(&[
        "replay",
        "archive",
        "--config",
        &config,
        "--venue",
        &format!("binance={binance}"),
        "--venue",
        &format!("bitstamp={bitstamp}"),
    ]);
    let (by_symbol, _) = common::run_ok(&[
        "replay",
        "diff",
        "--depth",
        "5",
        "--venue",
        &format!("binance={BINANCE_TIMELINE}"),
        "--venue",
        &format!("bitstamp={BITSTAMP_TIMELINE}"),
        "--symbol",
        "binance=NKNUSDT",
        "--symbol",
        "binance=LRCBTC",
        "--symbol",
        "bitstamp=ethusd",
    ]);
    let of = |lines: &str, name: &str| -> Vec<Value> {
        (lines.lines())
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|line| line["instrument"] == name)
            .map(|line| comparable(&line))
            .collect()
    };
    let configured_names: std::collections::BTreeSet<String> = (configured.lines())
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["instrument"].to_string())
        .collect();
    assert_eq!(
        configured_names.into_iter().collect::<Vec<_>>(),
        [r#""ETH/USD""#, r#""LRC/BTC""#, r#""NKN/USDT""#]
    );
    for (name, symbol) in [
        ("NKN/USDT", "NKNUSDT"),
        ("LRC/BTC", "LRCBTC"),
        ("ETH/USD", "ETHUSD"),
    ] {
        let (mine, theirs) = (of(&configured, name), of(&by_symbol, symbol));
        assert!(theirs.len() > 10, "{symbol}: {} summaries", theirs.len());
        assert_eq!(mine.len(), theirs.len(), "{name}");
        let most = theirs
            .iter()
            .map(|line| line["bids"].as_array().unwrap().len());
        assert_eq!(most.max(), Some(5), "{symbol}: five levels deep");
        for (index, (mine, theirs)) in mine.iter().zip(&theirs).enumerate() {
            let mut expected = theirs.clone();
            expected["instrument"] = name.into();
            if name == "NKN/USDT" {
                for side in ["bids", "asks"] {
                    for level in expected[side].as_array_mut().unwrap() {
                        let price = units_of(level["price"].as_str().unwrap());
                        let amount = units_of(level["amount"].as_str().unwrap());
                        let value = price * amount / 100_000_000;
                        level["amount"] =
                            format!("{}.{:08}", value / 100_000_000, value % 100_000_000).into();
                    }
                }
            }
            assert_eq!(mine, &expected, "{name} summary {index}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--venue-books` samples each source's own book every `--every-ms`: at every whole
/// second from the first message to the last, one row a source; each synced book sampled
/// at T is the one its instrument's latest summary at or before T merged (read back with
/// pyarrow from both files). The Bitstamp timeline's three books, each an instrument.
#[test]
fn each_source_s_own_book_is_sampled_at_fixed_times() {
    use mergebook::venue::VenueId::Bitstamp;
    let Some(python) = common::python_with("pyarrow") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mergebook-sampled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = common::config::TestConfig::new()
        .set("service.depth", 5)
        .set("venues.bitstamp.mode", "diff")
        .instrument("ETH/USD", &[(Bitstamp, "ethusd")])
        .instrument("BAT/BTC", &[(Bitstamp, "batbtc")])
        .instrument("USDT/EUR", &[(Bitstamp, "usdteur")]);
    let config_path = dir.join("sampled.toml");
    std::fs::write(&config_path, config.toml()).unwrap();
    let (summaries, books) = (dir.join("summaries.parquet"), dir.join("books.parquet"));
    let (summaries, books) = (summaries.display().to_string(), books.display().to_string());
    common::run_ok(&[
        "replay",
        "archive",
        "--config",
        &config_path.display().to_string(),
        "--venue",
        &format!(
            "bitstamp={}",
            archive_of("bitstamp", BITSTAMP_TIMELINE, &dir, true)
        ),
        "--parquet",
        &summaries,
        "--venue-books",
        &books,
        "--every-ms",
        "1000",
    ]);
    let check = r#"
import sys, bisect, pyarrow as pa, pyarrow.parquet as pq
def rows(path):
    table = pq.read_table(path)
    for index, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            table = table.set_column(index, field.name, table.column(index).cast(pa.int64()))
    return table.to_pylist()
summaries, books = rows(sys.argv[1]), rows(sys.argv[2])
assert str(pq.read_schema(sys.argv[2]).field("bid_price_1").type) == "decimal128(38, 8)"
instruments = {"ETH/USD", "BAT/BTC", "USDT/EUR"}
times = sorted({row["ts"] for row in books})
# Every whole second from the archive's first message (at 1641343696.46) to its last (at
# 1641343721.56), no gap, three rows (one a source) each.
assert times == list(range(1641343697_000_000_000, 1641343721_000_000_001, 1_000_000_000))
assert len(books) == 3 * len(times), len(books)
by_instrument = {}
for row in summaries:
    by_instrument.setdefault(row["instrument"], []).append(row)
compared = 0
for book in books:
    assert book["instrument"] in instruments
    merged = by_instrument[book["instrument"]]
    at = bisect.bisect_right([row["ts"] for row in merged], book["ts"]) - 1
    if book["state"] != "synced":
        assert book["bid_price_1"] is None and book["received_ts"] is None
        continue
    assert at >= 0 and merged[at]["state_" + book["source"]] == "synced", book
    assert book["received_ts"] <= book["ts"], book
    for side in ("bid", "ask"):
        for n in range(1, 6):
            for part in ("price", "amount"):
                name = f"{side}_{part}_{n}"
                assert book[name] == merged[at][name], (book["ts"], name)
    compared += 1
assert compared > 60, compared
print(compared)
"#;
    let compared = run_python(&python, check, &[&summaries, &books]);
    assert!(!compared.trim().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A plain recording (one frame a line, no receive time) rewritten as an archive: each
/// frame after a receive time a millisecond after the one before.
fn archive_of_plain(venue: &str, frames: &str, dir: &std::path::Path) -> String {
    const START_NS: u64 = 1_754_956_800_000_000_000; // 2025-08-12T00:00:00Z
    let text: String = (std::fs::read_to_string(frames).unwrap().lines())
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(index, line)| {
            format!(
                "{} {line}\n",
                archive_time(START_NS + index as u64 * 1_000_000)
            )
        })
        .collect();
    let path = dir.join(format!("{venue}.plain.archive"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Venues whose books start from a snapshot on their stream need nothing from the
/// archive but their messages: the OKX, Kraken, Bybit and Deribit recordings rewritten as
/// archives replay to the books of the recordings themselves (checksums and sequence
/// chains followed as they are), summary for summary, the times apart (a plain
/// recording's are its line numbers).
#[test]
fn in_band_venues_archives_replay_to_the_books_of_their_recordings() {
    let dir = std::env::temp_dir().join(format!("mergebook-in-band-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let recordings = [
        (
            "okx",
            "tests/fixtures/okx/books_BTC-USDT_subscribe_ack_snapshot_updates_2022.jsonl",
        ),
        (
            "kraken",
            "tests/fixtures/kraken/v2_book_ETHBTC_depth10_ack_snapshot_update_2026-08-26.jsonl",
        ),
        (
            "bybit",
            "tests/fixtures/bybit/spot_orderbook50_BTCUSDT_snapshot_delta_2024-11-08.jsonl",
        ),
        (
            "deribit",
            "tests/fixtures/deribit/timeline_options_raw_2021-07-22.jsonl",
        ),
    ];
    let without_times = |lines: &str| -> Vec<Value> {
        (lines.lines())
            .map(|line| {
                let mut line = comparable(&serde_json::from_str(line).unwrap());
                line.as_object_mut().unwrap().remove("ts_ns");
                line
            })
            .collect()
    };
    for (venue, recording) in recordings {
        let archive = match recording.contains("timeline") {
            true => archive_of(venue, recording, &dir, true),
            false => archive_of_plain(venue, recording, &dir),
        };
        let replay = |file: &str| {
            let venue = format!("{venue}={file}");
            common::run_ok(&["replay", "diff", "--venue", &venue]).0
        };
        let (recorded, archived) = (replay(recording), replay(&archive));
        assert!(recorded.lines().count() >= 2, "{venue}: {recorded}");
        assert_eq!(
            without_times(&archived),
            without_times(&recorded),
            "{venue}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What `replay archive` cannot do it says: a venue given twice, a venue the
/// configuration does not follow (refused, nothing replayed), and a book its file never
/// fed (named at the end: here the configuration's Binance book is a snapshot stream and
/// the file holds diff events).
#[test]
fn an_archive_replay_names_what_its_configuration_and_files_do_not_match() {
    use mergebook::venue::VenueId::Binance;
    let dir = std::env::temp_dir().join(format!("mergebook-mismatch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = common::config::TestConfig::new().instrument("NKN/USDT", &[(Binance, "NKNUSDT")]);
    let config_path = dir.join("snapshot.toml");
    std::fs::write(&config_path, config.toml()).unwrap();
    let config = config_path.display().to_string();
    let binance = format!("binance={BINANCE_TIMELINE}");
    let archive = [
        "replay", "archive", "--config", &config, "--venue", &binance,
    ];
    let twice = common::run_failing(&[&archive[..], &["--venue", &binance]].concat());
    assert!(twice.contains("binance is given twice"), "{twice}");
    let bitstamp = format!("bitstamp={BITSTAMP_TIMELINE}");
    let unfollowed = common::run_failing(&[&archive[..], &["--venue", &bitstamp]].concat());
    assert!(
        unfollowed.contains("the configuration follows no bitstamp book"),
        "{unfollowed}"
    );
    let (summaries, stderr) = common::run_ok(&archive);
    assert!(summaries.is_empty(), "{summaries}");
    assert!(
        stderr.contains("NKN/USDT: its binance book (NKNUSDT) got nothing from the file"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
