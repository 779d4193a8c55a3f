//! `mergebook replay … --parquet`: the consolidated summaries written as Parquet, read back
//! by an independent reader (pyarrow), are the JSON lines the same replay prints, row for
//! row, decimals exact.

use crate::common;
use serde_json::Value;

const BINANCE_TIMELINE: &str = "tests/fixtures/binance/session_timeline_NKNUSDT_LRCBTC.jsonl";
const BITSTAMP_TIMELINE: &str =
    "tests/fixtures/bitstamp/session_timeline_ethusd_batbtc_usdteur.jsonl";

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
    }))
"#;

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
    let read = std::process::Command::new(python)
        .args(["-c", PARQUET_TO_LINES, &file_text])
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let from_parquet: Vec<Value> = String::from_utf8(read.stdout)
        .unwrap()
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
