// The consolidated book of one instrument, pushed by the service as Server-Sent Events
// (/book/stream): a ladder, a depth chart and the venues' states. Prices and sizes stay
// exact decimal text; totals are summed as integers of 10^-8 (BigInt). Plain JavaScript,
// no library: the page works offline.
"use strict";

const SCALE = 100000000n;
const picker = document.getElementById("instrument");
const link = document.getElementById("link");
let source = null;

/** "12.5" → 1250000000n (units of 10^-8). */
function raw(text) {
  const [whole, fraction = ""] = text.split(".");
  return BigInt(whole) * SCALE + BigInt((fraction + "00000000").slice(0, 8));
}

/** 1250000000n → "12.5". */
function decimal(units) {
  const whole = units / SCALE;
  const fraction = (units % SCALE).toString().padStart(8, "0").replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}

/** A venue's colour, the same on every load. */
function colour(venue) {
  let hash = 0;
  for (const c of venue) hash = (hash * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${hash}, 65%, 60%)`;
}

function cell(row, text, style) {
  const td = row.insertCell();
  td.textContent = text;
  if (style) td.style.color = style;
  return td;
}

/** Each level with its running total from the best outward. */
function withTotals(levels) {
  let total = 0n;
  return levels.map((level) => {
    total += raw(level.amount);
    return { ...level, total };
  });
}

function drawLadder(book) {
  const body = document.querySelector("#ladder tbody");
  body.replaceChildren();
  const asks = withTotals(book.asks);
  const bids = withTotals(book.bids);
  // Where venues are converted from another currency, both prices: the book's and, in a
  // last column, the venue's own.
  const converts = book.venue_quotes.some((venue) => venue.rate_pair);
  document.getElementById("native-head").textContent = converts ? "venue's price" : "";
  const row = (level, side) => {
    const tr = body.insertRow();
    tr.className = `level ${side}`;
    tr.dataset.venue = level.exchange;
    const converted = level.native_price ? "~" : "";
    cell(tr, level.exchange + converted, colour(level.exchange));
    cell(tr, level.price);
    cell(tr, level.amount);
    cell(tr, decimal(level.total));
    cell(tr, converts ? level.native_price || level.price : "");
  };
  for (const level of asks.slice().reverse()) row(level, "ask");
  const spread = body.insertRow();
  spread.className = "spread";
  const td = spread.insertCell();
  td.colSpan = 5;
  td.textContent = `── spread ${book.spread || "–"} ──`;
  for (const level of bids) row(level, "bid");
}

function drawDepth(book) {
  const svg = document.getElementById("depth");
  svg.replaceChildren();
  const bids = withTotals(book.bids);
  const asks = withTotals(book.asks);
  if (!bids.length && !asks.length) return;
  const prices = [...bids, ...asks].map((l) => Number(l.price));
  const low = Math.min(...prices);
  const high = Math.max(...prices);
  const most = Number([...bids, ...asks].reduce((m, l) => (l.total > m ? l.total : m), 0n)) / 1e8;
  const x = (price) => (high === low ? 300 : ((price - low) / (high - low)) * 580 + 10);
  const y = (size) => 290 - (size / (most || 1)) * 270;
  // Each level a bar from the total before it to its own, in its venue's colour: the
  // venues' shares stacked along each side's cumulative curve.
  const bar = (level, before, side, next) => {
    const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    const left = Math.min(x(Number(level.price)), x(next));
    const width = Math.max(Math.abs(x(next) - x(Number(level.price))), 2);
    rect.setAttribute("x", left);
    rect.setAttribute("width", width);
    rect.setAttribute("y", y(Number(level.total) / 1e8));
    rect.setAttribute("height", Math.max(y(before) - y(Number(level.total) / 1e8), 1));
    rect.setAttribute("fill", colour(level.exchange));
    rect.setAttribute("class", `depth ${side}`);
    rect.dataset.venue = level.exchange;
    svg.appendChild(rect);
  };
  bids.forEach((level, i) => {
    const next = i + 1 < bids.length ? Number(bids[i + 1].price) : low;
    bar(level, i ? Number(bids[i - 1].total) / 1e8 : 0, "bid", next);
  });
  asks.forEach((level, i) => {
    const next = i + 1 < asks.length ? Number(asks[i + 1].price) : high;
    bar(level, i ? Number(asks[i - 1].total) / 1e8 : 0, "ask", next);
  });
}

function drawVenues(book) {
  const body = document.querySelector("#venues tbody");
  body.replaceChildren();
  for (const venue of book.venue_quotes) {
    const tr = body.insertRow();
    tr.dataset.venue = venue.exchange;
    const name = venue.rate_pair ? `${venue.exchange} ${venue.currency}` : venue.exchange;
    cell(tr, name, colour(venue.exchange));
    cell(tr, venue.state).className = venue.state === "synced" ? "state-synced" : "state-other";
    cell(tr, venue.best_bid || "–");
    cell(tr, venue.best_ask || "–");
    cell(tr, venue.book_age_ns ? `${Math.round(venue.book_age_ns / 1e6)} ms` : "–");
  }
}

function draw(book) {
  document.body.dataset.seq = book.seq;
  document.getElementById("seq").textContent = `seq ${book.seq}`;
  const units = book.currency ? ` in ${book.currency}` : "";
  const sizes = book.amount_unit && book.amount_unit === book.currency ? `, sizes in ${book.amount_unit}` : "";
  const lots = book.unit_size && book.unit_size !== "1" ? `, amounts in units of ${book.unit_size}` : "";
  document.getElementById("ladder-title").textContent = `${book.instrument}${units}${sizes}${lots}`;
  const [bid, ask] = [book.bids[0], book.asks[0]];
  let spread = "";
  let cross = "";
  if (bid && ask) {
    const mid = (Number(bid.price) + Number(ask.price)) / 2;
    spread = `spread ${book.spread} (${((Number(book.spread) / mid) * 1e4).toFixed(2)} bp)`;
    const gap = raw(ask.price) - raw(bid.price);
    cross = gap < 0n ? "crossed" : gap === 0n ? "locked" : "";
  }
  document.getElementById("spread").textContent = spread;
  document.getElementById("cross").textContent = cross;
  drawLadder(book);
  drawDepth(book);
  drawVenues(book);
}

function setLink(live, text) {
  link.className = live ? "live" : "down";
  link.textContent = text;
}

function follow(instrument) {
  if (source) source.close();
  location.hash = encodeURIComponent(instrument);
  source = new EventSource(`/book/stream?instrument=${encodeURIComponent(instrument)}`);
  source.onopen = () => setLink(true, "live");
  source.onmessage = (event) => draw(JSON.parse(event.data));
  // The browser reconnects by itself; until then the last book stays, marked not live.
  source.onerror = () => setLink(false, "connection lost, retrying: last book received, not live");
}

async function start() {
  const names = await (await fetch("/book/instruments")).json();
  for (const name of names) picker.add(new Option(name, name));
  const wanted = decodeURIComponent(location.hash.slice(1));
  picker.value = names.includes(wanted) ? wanted : names[0];
  picker.onchange = () => follow(picker.value);
  follow(picker.value);
}

start().catch((error) => setLink(false, `cannot load the instruments: ${error}`));
