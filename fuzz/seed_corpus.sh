#!/usr/bin/env bash
# Seeds each fuzz target's corpus with the recorded frames (one file per frame, prefixed
# with a depth byte of 10 for the decoders).
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../tests/fixtures
seed() { # target, file of frames (one per line)
  mkdir -p "corpus/$1"
  local n=0
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    n=$((n + 1))
    { printf '\x0a'; printf '%s' "$line"; } > "corpus/$1/$(basename "$2").$n"
  done < "$2"
}
for f in "$fixtures"/binance/*; do seed binance_depth "$f"; done
for f in "$fixtures"/bitstamp/*; do seed bitstamp_order_book "$f"; done
for f in "$fixtures"/kraken/*; do seed kraken_book "$f"; done
for f in "$fixtures"/bybit/*; do seed bybit_book "$f"; done
for f in "$fixtures"/okx/*; do seed okx_books "$f"; done
for f in "$fixtures"/bitget/*; do seed bitget_books "$f"; seed bitget_futures_books "$f"; done
# Deribit's plain files (its timeline's lines are the recorder's, not frames).
for f in "$fixtures"/deribit/*; do [[ "$f" == *timeline* ]] || seed deribit_book "$f"; done
for f in "$fixtures"/coinbase/exchange_*; do seed coinbase_exchange_level2 "$f"; done
# KuCoin's documented frames, and its timelines' frames and REST bodies as sent.
for f in "$fixtures"/kucoin/docs_*; do seed kucoin_level2 "$f"; done
for f in "$fixtures"/kucoin/futures_*; do seed kucoin_futures_obu "$f"; done
for f in "$fixtures"/kucoin/timeline_*; do
  python3 -c 'import json, sys
frames = [json.loads(line)["raw"] for line in open(sys.argv[1]) if "raw" in line]
print("\n".join(frames[:40]))' "$f" > "/tmp/kucoin_frames_$(basename "$f")"
  seed kucoin_level2 "/tmp/kucoin_frames_$(basename "$f")"
done
for f in "$fixtures"/coinbase/advanced_trade_*; do seed coinbase_level2 "$f"; done
mkdir -p corpus/fixed_point
for n in 35496.06000000 0.29859300 9328.28 0 1.000000000 184467440737.09551615 1e5 -1; do
  printf '%s' "$n" > "corpus/fixed_point/$n"
done
# diff_books: a venue byte, then a recording: the first diff event, `S` and the REST
# snapshot, the remaining events.
mkdir -p corpus/diff_books
seed_recording() { # venue byte, diffs file, snapshot file
  { printf "$1"; head -n 2 "$2"; printf 'S'; cat "$3"; echo; tail -n +3 "$2"; } \
    > "corpus/diff_books/$(basename "$2")"
}
for pair in NKNUSDT LRCBTC; do
  seed_recording '\x00' "$fixtures/binance/diff_depth_${pair}_combined_stream.jsonl" \
    "$fixtures/binance/rest_depth_snapshot_${pair}_limit1000.json"
done
for pair in ethusd batbtc usdteur; do
  seed_recording '\x01' "$fixtures/bitstamp/diff_order_book_$pair.jsonl" \
    "$fixtures/bitstamp/rest_order_book_$pair.json"
done
