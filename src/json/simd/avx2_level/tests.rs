use super::*;
use crate::json::Walker;
use proptest::prelude::*;

/// The level and its length as the exact (general) path reads it.
fn exact(window: &[u8]) -> Option<(Level, usize)> {
    let mut walker = Walker::new(window);
    let level = walker.any_level().ok()?;
    Some((level, walker.position()))
}

/// The vector reader's level and length.
fn read(window: &[u8; READ_AHEAD]) -> Option<(Level, usize)> {
    compact_level(window).map(|(level, len, _)| (level, len))
}

/// Whether `window` holds, as the exact path reads it, `level` followed by `,` or `, `
/// that end at `len`.
fn is_exactly(window: &[u8], level: Level, len: usize) -> bool {
    exact(window).is_some_and(|(exact_level, level_len)| {
        exact_level == level && matches!(window.get(level_len..len), Some(b",") | Some(b", "))
    })
}

/// `text` followed by what may follow a level in a frame, to the read-ahead length.
fn window(text: &str) -> [u8; READ_AHEAD] {
    window_with(text, r#",["9","9"]"#)
}

/// `text` followed by `next_levels`, repeated to the read-ahead length.
fn window_with(text: &str, next_levels: &str) -> [u8; READ_AHEAD] {
    let text = text.as_bytes();
    let next_levels = next_levels.as_bytes();
    std::array::from_fn(|i| match text.get(i) {
        Some(&byte) => byte,
        None => next_levels[(i - text.len()) % next_levels.len()],
    })
}

fn level(price: &str, amount: &str) -> Level {
    Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    }
}

#[test]
fn reads_the_layouts_venues_send() {
    let cases = [
        // Binance partial depth (tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json).
        (r#"["91234.56000000","0.00123000"]"#, "91234.56", "0.00123"),
        // Bitstamp order_book (tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl).
        (r#"["9328.28", "0.05925332"]"#, "9328.28", "0.05925332"),
        (
            r#"["0.00002835", "7159.36203756"]"#,
            "0.00002835",
            "7159.36203756",
        ),
        // Integers, the longest integer part, the longest lane (8 + dot + 7).
        (r#"["3800","10"]"#, "3800", "10"),
        (r#"["99999999","00000001"]"#, "99999999", "1"),
        (r#"["12345678.1234567","1.5"]"#, "12345678.1234567", "1.5"),
    ];
    for (text, price, amount) in cases {
        assert_eq!(
            read(&window(text)),
            Some((level(price, amount), text.len())),
            "{text}"
        );
    }
}

#[test]
fn leaves_everything_else_to_the_exact_path() {
    let cases = [
        r#"["12345678.12345678","1"]"#, // 17 bytes: more than a lane
        r#"["123456789","1"]"#,         // 9 integer digits
        r#"["1.123456789","1"]"#,       // 9 fraction digits
        r#"["1.","1"]"#,
        r#"[".5","1"]"#,
        r#"["1.2.3","1"]"#,
        r#"["","1"]"#,
        r#"["1","-1"]"#,
        r#"["1e5","1"]"#,
        r#"["1",1]"#,
        r#"[1,"1"]"#,
        r#"["1" ,"1"]"#,
        r#"["1","1" ]"#,
        r#"["1"  ,  "1"]"#,
        r#"["1","1","1"]"#,
        r#"{"1","1"]"#,
        r#"["1":"1"]"#,
        r#"["1234567.12345678","1234567.12345678"]"#, // 39 bytes
    ];
    for text in cases {
        assert_eq!(read(&window(text)), None, "{text}");
    }
}

/// A [`PatternRead`] in comparable form (a new pattern by its length).
#[derive(Debug, PartialEq)]
enum Outcome {
    Same(Level),
    NewAmount(Level, usize, Option<usize>),
    Other,
}

fn outcome(read: PatternRead) -> Outcome {
    match read {
        PatternRead::Same(level) => Outcome::Same(level),
        PatternRead::NewAmount(level, len, pattern) => {
            Outcome::NewAmount(level, len, pattern.map(|pattern| pattern.len))
        }
        PatternRead::Other => Outcome::Other,
    }
}

/// [`compact_level`]'s reading in the same form.
fn read_in_full(window: &[u8; READ_AHEAD]) -> Outcome {
    match compact_level(window) {
        Some((level, len, pattern)) => {
            Outcome::NewAmount(level, len, pattern.map(|pattern| pattern.len))
        }
        None => Outcome::Other,
    }
}

#[test]
fn a_pattern_reads_a_level_of_its_shape_at_once_and_a_new_amount_alone() {
    let binance = compact_level(&window(r#"["91234.56000000","0.00123000"]"#));
    let Some((_, 31, Some(pattern))) = binance else {
        panic!("{binance:?}");
    };
    let next = window(r#"["91234.55000000","7.10000000"]"#);
    assert_eq!(
        outcome(pattern.read(&next)),
        Outcome::Same(level("91234.55", "7.1"))
    );
    assert_eq!(pattern.len, 32, "through the `,`");
    let new_amounts = [
        // One more integer digit, then the side's end (no `,`: no pattern).
        (r#"["91234.55000000","17.10000000"]"#, "17.1", 32, Some(33)),
        (r#"["91234.55000000","7.10000000"]]"#, "7.1", 31, None),
        (r#"["91234.55000000","7"]"#, "7", 22, Some(23)),
    ];
    for (text, amount, len, pattern_len) in new_amounts {
        let expected = Outcome::NewAmount(level("91234.55", amount), len, pattern_len);
        assert_eq!(outcome(pattern.read(&window(text))), expected, "{text}");
        assert_eq!(read_in_full(&window(text)), expected, "{text}");
    }
    for other in [
        r#"["91234.5500000","7.10000000"]"#,   // one fewer price digit
        r#"["91234.55000000", "7.10000000"]"#, // a space
        r#"["9123.455000000","7.10000000"]"#,  // the dot moved
        r#"["91234.55000000","7.10000000" "#,  // no `]`
        r#"["91234.55000000","7.1000000a"]"#,  // not a digit
        r#"["91234.55000000","7.123456789"]"#, // 9 fraction digits
    ] {
        assert_eq!(
            outcome(pattern.read(&window(other))),
            Outcome::Other,
            "{other}"
        );
    }
    assert_eq!(outcome(LevelPattern::none().read(&next)), Outcome::Other);

    // Bitstamp's `, ` is part of the pattern: the next level starts after it.
    let bitstamp = r#"["9328.28", "0.05925332"]"#;
    let Some((_, 25, Some(pattern))) = compact_level(&window_with(bitstamp, r#", ["1", "1"]"#))
    else {
        panic!("{bitstamp}");
    };
    assert_eq!(pattern.len, 27);
    let next = window_with(r#"["9327.34", "0.43120000"]"#, r#", ["1", "1"]"#);
    assert_eq!(
        outcome(pattern.read(&next)),
        Outcome::Same(level("9327.34", "0.4312"))
    );
    // The side's last level: no pattern, the old one stays.
    assert!(matches!(
        compact_level(&window_with(bitstamp, "]")),
        Some((_, 25, None))
    ));
}

/// This thread's kept patterns after reading `levels` in full (each followed by `,`).
fn kept_after(levels: &[&str]) {
    for text in levels {
        let Some((_, _, Some(pattern))) = compact_level(&window(text)) else {
            panic!("{text}");
        };
        KeptPatterns::remember(&pattern);
    }
}

fn read_kept(text: &str, next_levels: &str, len: usize) -> Option<Level> {
    KeptPatterns::with(|kept| kept.read(&window_with(text, next_levels), len))
}

#[test]
fn kept_patterns_read_every_shape_kept_and_nothing_else() {
    // Two amounts' digit counts in turn, as most books have (and the simulator).
    kept_after(&[
        r#"["91234.56000000","0.00123000"]"#,
        r#"["91234.55000000","17.10000000"]"#,
    ]);
    let next = r#",["9","9"]"#;
    for (text, amount) in [
        (r#"["91234.54000000","7.50000000"]"#, "7.5"),
        (r#"["91234.53000000","12.00000000"]"#, "12"),
        (r#"["91234.52000000","3.00000001"]"#, "3.00000001"),
    ] {
        let len = text.len() + 1;
        assert_eq!(
            read_kept(text, next, len),
            Some(level(&text[2..16], amount)),
            "{text}"
        );
        // Its length must be the distance to the next level's `[`.
        assert_eq!(read_kept(text, next, len + 1), None, "{text}");
        assert_eq!(read_kept(text, next, len - 1), None, "{text}");
    }
    for text in [
        r#"["91234.51000000","170.10000000"]"#, // three integer digits: none kept
        r#"["9123.451000000","7.10000000"]"#,   // the price's dot moved
        r#"["91234.5100000","7.10000000"]"#,    // one fewer price digit
        r#"["91234.51000000","7.1000000a"]"#,   // not a digit
        r#"["91234.51000000", "7.10000000"]"#,  // a space
        r#"{"91234.51000000","7.10000000"]"#,   // not a level
        r#"[[91234.51000000","7.10000000"]"#,
    ] {
        assert_eq!(read_kept(text, next, text.len() + 1), None, "{text}");
    }
    // The side's last level: `]` where the pattern has `,`.
    let last = r#"["91234.54000000","7.50000000"]"#;
    assert_eq!(read_kept(last, "]]", last.len() + 1), None);

    // Another venue's layout is kept beside, not over, these (its price is shorter).
    let bitstamp = r#"["9328.28", "0.05925332"]"#;
    let Some((_, _, Some(pattern))) = compact_level(&window_with(bitstamp, r#", ["1", "1"]"#))
    else {
        panic!("{bitstamp}");
    };
    KeptPatterns::remember(&pattern);
    let next_bitstamp = r#"["9327.34", "0.43120000"]"#;
    assert_eq!(
        read_kept(next_bitstamp, r#", ["1", "1"]"#, next_bitstamp.len() + 2),
        Some(level("9327.34", "0.4312"))
    );
    let text = r#"["91234.54000000","7.50000000"]"#;
    assert!(read_kept(text, next, text.len() + 1).is_some());
}

/// The positions of `[` from `from` on, the simple way.
fn opens_from(bytes: &[u8], from: usize) -> Vec<u32> {
    (from..bytes.len())
        .filter(|&at| bytes[at] == b'[')
        .map(|at| at as u32)
        .collect()
}

#[test]
fn level_starts_are_the_opening_brackets_in_order() {
    let side = r#"[["91234.56000000","0.00123000"],["91234.55000000","17.10000000"],["91234.54000000","7.50000000"],["91234.53000000","12.00000000"],["91234.52000000","3.00000001"]]"#;
    let mut starts = [0u32; 8 + STARTS_SLACK];
    let found = level_starts(side.as_bytes(), 1, 8, &mut starts);
    // The last 64-byte step that fits ends before the fifth level.
    assert_eq!(found, 4);
    assert_eq!(starts[..found], opens_from(side.as_bytes(), 1)[..found]);
    // Fewer than 64 bytes: none.
    assert_eq!(
        level_starts(side.as_bytes(), side.len() - 63, 8, &mut starts),
        0
    );
}

/// `text` with its digits replaced, in order, by `digits` (cycled): the same shape.
fn same_shape(text: &str, digits: &[u8]) -> String {
    let mut replacements = digits.iter().cycle();
    text.bytes()
        .map(|byte| match byte {
            b'0'..=b'9' => char::from(*replacements.next().unwrap()),
            _ => char::from(byte),
        })
        .collect()
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,9}",
        "[0-9]{0,9}\\.[0-9]{0,9}",
        "[0-9.]{0,10}",
        "[0-9.\"eE+ ,\\]-]{0,8}",
    ]
}

fn is_readable(number: &str) -> bool {
    let (integer, fraction) = number.split_once('.').unwrap_or((number, "1"));
    number.len() <= 16
        && (1..=8).contains(&integer.len())
        && (1..=8).contains(&fraction.len())
        && integer
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever the vector reader reads, the exact path reads the same (value and
    /// length); and it reads every venue-layout level of numbers it is meant for.
    #[test]
    fn agrees_with_the_exact_path(
        price in number(),
        amount in number(),
        separator in prop_oneof![
            Just(r#"",""#),
            Just(r#"", ""#),
            Just(r#"" ,""#),
            Just(r#"",  ""#),
            Just(r#"":""#),
            Just(r#"", 1"#),
            Just(r#"",1"#),
        ],
    ) {
        let text = format!(r#"["{price}{separator}{amount}"]"#);
        prop_assume!(text.len() <= READ_AHEAD);
        let window = window(&text);
        let read = read(&window);
        if let Some(read) = read {
            prop_assert_eq!(Some(read), exact(&window));
        }
        // (A quote inside a generated number moves the level's end: no claim then.)
        if !price.contains('"') && !amount.contains('"') {
            let meant_for = text.len() <= PRICE + 32
                && matches!(separator, r#"",""# | r#"", ""#)
                && is_readable(&price)
                && is_readable(&amount);
            prop_assert_eq!(read.is_some(), meant_for, "{}", text);
        }
    }

    /// A level's pattern reads every level of its shape, as the exact path does, and
    /// whatever else it reads (one byte changed anywhere) it reads as the exact path
    /// does. So do the kept patterns, once it is kept, told the next level's start
    /// right or one byte off.
    #[test]
    fn a_pattern_agrees_with_the_exact_path(
        price in "[0-9]{1,8}(\\.[0-9]{1,8})?",
        amount in "[0-9]{1,8}(\\.[0-9]{1,8})?",
        separator in prop_oneof![Just(r#"",""#), Just(r#"", ""#)],
        digits in proptest::collection::vec(b'0'..=b'9', 1..32),
        changed_at in 0..READ_AHEAD,
        changed_to in proptest::sample::select(b"0159.\",: []/e-".to_vec()),
        len_off in -1i64..=1,
    ) {
        let text = format!(r#"["{price}{separator}{amount}"]"#);
        let next_levels = if separator.contains(' ') { r#", ["9", "9"]"# } else { r#",["9","9"]"# };
        let Some((_, _, Some(pattern))) = compact_level(&window_with(&text, next_levels)) else {
            // Longer than a lane, or the level and its separator longer than the
            // structure register: not this module's.
            prop_assert!(
                price.len() > 16
                    || amount.len() > 16
                    || text.len() + next_levels.find('[').unwrap() > PRICE + 32
            );
            return Ok(());
        };
        let twin = window_with(&same_shape(&text, &digits), next_levels);
        let read = pattern.read(&twin);
        prop_assert!(
            matches!(read, PatternRead::Same(level) if is_exactly(&twin, level, pattern.len))
        );

        let mut changed = twin;
        changed[changed_at] = changed_to;
        match pattern.read(&changed) {
            PatternRead::Same(level) => prop_assert!(is_exactly(&changed, level, pattern.len)),
            PatternRead::NewAmount(level, len, new_pattern) => {
                prop_assert_eq!(exact(&changed), Some((level, len)));
                prop_assert_eq!(
                    read_in_full(&changed),
                    Outcome::NewAmount(level, len, new_pattern.map(|pattern| pattern.len))
                );
            }
            PatternRead::Other => {}
        }

        KeptPatterns::remember(&pattern);
        let read = KeptPatterns::with(|kept| kept.read(&twin, pattern.len));
        prop_assert!(read.is_some_and(|level| is_exactly(&twin, level, pattern.len)));
        let len = (pattern.len as i64 + len_off) as usize;
        if let Some(level) = KeptPatterns::with(|kept| kept.read(&changed, len)) {
            prop_assert!(is_exactly(&changed, level, len));
        }
    }

    /// After a level, one of the same price shape and any amount is read as
    /// [`compact_level`] reads it: by the pattern alone if the amount's shape is the
    /// same, by its amount alone if not.
    #[test]
    fn a_new_amount_is_read_as_the_full_reader_reads_it(
        price in "[0-9]{1,8}(\\.[0-9]{1,8})?",
        amount in "[0-9]{1,8}(\\.[0-9]{1,8})?",
        next_amount in number(),
        separator in prop_oneof![Just(r#"",""#), Just(r#"", ""#)],
        next_levels in prop_oneof![Just(r#",["9","9"]"#), Just(r#", ["9", "9"]"#), Just("]]")],
        digits in proptest::collection::vec(b'0'..=b'9', 1..32),
    ) {
        let text = format!(r#"["{price}{separator}{amount}"]"#);
        let Some((_, _, Some(pattern))) = compact_level(&window_with(&text, r#",["9","9"]"#)) else {
            return Ok(());
        };
        let next_price = same_shape(&price, &digits);
        let next = window_with(&format!(r#"["{next_price}{separator}{next_amount}"]"#), next_levels);
        let full = read_in_full(&next);
        match outcome(pattern.read(&next)) {
            Outcome::Same(level) => prop_assert!(
                matches!(full, Outcome::NewAmount(full_level, _, _) if full_level == level)
            ),
            Outcome::Other => prop_assert_eq!(full, Outcome::Other),
            new_amount => prop_assert_eq!(new_amount, full),
        }
    }

    /// [`level_starts`] finds the first `[` bytes from where it starts, in order.
    #[test]
    fn level_starts_agree_with_a_simple_search(
        bytes in proptest::collection::vec(
            proptest::sample::select(b"[[]\"0,.9 ".to_vec()), 0..400),
        from in 0usize..80,
        wanted in 0usize..22,
    ) {
        let mut starts = [0u32; 21 + STARTS_SLACK];
        let found = level_starts(&bytes, from, wanted, &mut starts);
        let opens = opens_from(&bytes, from.min(bytes.len()));
        prop_assert!(found <= opens.len());
        prop_assert_eq!(&starts[..found], &opens[..found]);
    }
}
