use super::*;
use crate::book::{Level, Levels, WireDecimals};

/// A snapshot side deeper than the limit keeps its best levels and skips the rest,
/// which must still be well formed.
#[test]
fn best_levels_keep_the_best_and_check_the_rest() {
    let side = br#"[["5","1"],["4","1"],["3","1"],["2","1"]],"x""#;
    let mut walker = Walker::new(side);
    let mut out = Vec::new();
    walker.best_levels(Side::Bid, 2, &mut out).unwrap();
    let prices: Vec<u64> = out
        .iter()
        .map(|level| level.price.raw() / 100_000_000)
        .collect();
    assert_eq!(prices, [5, 4]);
    assert_eq!(&side[walker.position()..], br#","x""#);
    let broken = br#"[["5","1"],["4","1"],["3","1"],["2","1"#;
    assert!(
        Walker::new(broken)
            .best_levels(Side::Bid, 2, &mut out)
            .is_err()
    );
    let unsorted = br#"[["4","1"],["5","1"]]"#;
    assert_eq!(
        Walker::new(unsorted).best_levels(Side::Bid, 2, &mut out),
        Err(DecodeError::Unsorted(Side::Bid))
    );
    assert_eq!(
        Walker::new(side).all_levels(Some(Side::Bid), 2, &mut out),
        Err(DecodeError::TooManyLevels(2))
    );
}
use proptest::prelude::*;

fn level(price: &str, amount: &str) -> Level {
    Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    }
}

/// The level shapes venues send, each read from an excerpt of a recorded frame.
#[test]
fn every_level_shape_reads_its_recorded_excerpt() {
    // Four strings a level: price, size, a deprecated "0", the order count.
    let four = br#"[["64073.1","1.07909367","0","8"],["64073.6","0.15471482","0","1"],["64074","0.0000102","0","1"]]"#;
    let mut out = Vec::new();
    let mut decimals = WireDecimals::default();
    let mut walker = Walker::new(four);
    walker
        .all_shaped_levels(
            LevelShape::PairThenMore,
            Some(Side::Ask),
            10,
            &mut out,
            Some(&mut decimals),
        )
        .unwrap();
    assert_eq!(walker.position(), four.len());
    assert_eq!(out[2], level("64074", "0.0000102"));
    assert_eq!(
        decimals,
        WireDecimals {
            price: 1,
            amount: 8,
            ..Default::default()
        }
    );
    let mut top = Levels::default();
    Walker::new(four)
        .shaped_levels(LevelShape::PairThenMore, Side::Ask, 2, &mut top)
        .unwrap();
    assert_eq!(top.as_slice(), &out[..2]);

    // Objects of bare JSON numbers, printed with the instrument's precision.
    let objects = br#"[{"price":63299.4,"qty":0.00209987},{"price":63298.0,"qty":0.01534518}]"#;
    let shape = LevelShape::Object {
        price: "price",
        amount: "qty",
    };
    let mut decimals = WireDecimals::default();
    Walker::new(objects)
        .all_shaped_levels(shape, Some(Side::Bid), 10, &mut out, Some(&mut decimals))
        .unwrap();
    assert_eq!(
        out,
        [level("63299.4", "0.00209987"), level("63298", "0.01534518")]
    );
    assert_eq!(
        decimals,
        WireDecimals {
            price: 1,
            amount: 8,
            ..Default::default()
        }
    );
    let reordered = br#"[{"qty":0.5, "price":1.25, "n":[1,{"x":2}]}]"#;
    Walker::new(reordered)
        .all_shaped_levels(shape, None, 10, &mut out, None)
        .unwrap();
    assert_eq!(out, [level("1.25", "0.5")]);

    // Changes that name their side.
    let (mut bids, mut asks) = (Vec::new(), Vec::new());
    let changes = br#"[["sell","14.8098","0.00"],["buy","14.7","1.5"]]"#;
    Walker::new(changes)
        .tagged_levels(TaggedShape::Array, 10, &mut bids, &mut asks, None)
        .unwrap();
    assert_eq!(
        (bids[0], asks[0]),
        (level("14.7", "1.5"), level("14.8098", "0"))
    );
    let updates = br#"[{"side":"offer","event_time":"2026-09-07T01:57:58.894355Z","price_level":"79944.1","new_quantity":"1.2"},{"side":"bid","event_time":"2026-09-07T01:57:58.894355Z","price_level":"79943.9","new_quantity":"3.0105"}]"#;
    let shape = TaggedShape::Object {
        side: "side",
        price: "price_level",
        amount: "new_quantity",
    };
    Walker::new(updates)
        .tagged_levels(shape, 10, &mut bids, &mut asks, None)
        .unwrap();
    assert_eq!(
        (bids[0], asks[0]),
        (level("79943.9", "3.0105"), level("79944.1", "1.2"))
    );
}

#[test]
fn booleans_are_read_and_anything_else_refused() {
    assert_eq!(Walker::new(b" true").boolean(), Ok(true));
    assert_eq!(Walker::new(b"false").boolean(), Ok(false));
    assert_eq!(Walker::new(b"fals").boolean(), Err(DecodeError::Truncated));
    assert!(Walker::new(b"1").boolean().is_err());
}

/// What each shape refuses, with the error that names it.
#[test]
fn malformed_shaped_levels_are_refused_with_typed_errors() {
    let object = LevelShape::Object {
        price: "price",
        amount: "qty",
    };
    let tagged = TaggedShape::Object {
        side: "side",
        price: "p",
        amount: "q",
    };
    let cases: [(&[u8], Result<()>); 9] = [
        (
            br#"[["1","2","3"]]"#,
            Err(DecodeError::LevelShape { at: 10 }),
        ),
        (br#"[{"price":1}]"#, Err(DecodeError::MissingKey("qty"))),
        (
            br#"[{"price":1,"qty":2,"price":3}]"#,
            Err(DecodeError::DuplicateKey("price")),
        ),
        (
            br#"[{"price":1e-5,"qty":2}]"#,
            Err(DecodeError::Number {
                at: 10,
                error: FixedPointError::Exponent,
            }),
        ),
        (
            br#"[["hold","1","2"]]"#,
            Err(DecodeError::Invalid(
                "a side must be bid, buy, ask, offer or sell",
            )),
        ),
        (
            br#"[{"p":"1","q":"2"}]"#,
            Err(DecodeError::MissingKey("side")),
        ),
        (
            br#"[["buy","1","2","3"]]"#,
            Err(DecodeError::LevelShape { at: 16 }),
        ),
        (
            br#"[["1","2"],["1","3"]]"#,
            Err(DecodeError::TooManyLevels(1)),
        ),
        (br#"[["1","2"]"#, Err(DecodeError::Truncated)),
    ];
    for (index, (input, expected)) in cases.into_iter().enumerate() {
        let mut out = Vec::new();
        let (mut bids, mut asks) = (Vec::new(), Vec::new());
        let mut walker = Walker::new(input);
        let got = match index {
            0 => walker.all_shaped_levels(
                LevelShape::Pair,
                None,
                10,
                &mut out,
                Some(&mut WireDecimals::default()),
            ),
            1..=3 => walker.all_shaped_levels(object, None, 10, &mut out, None),
            4 | 6 => walker.tagged_levels(TaggedShape::Array, 10, &mut bids, &mut asks, None),
            5 => walker.tagged_levels(tagged, 10, &mut bids, &mut asks, None),
            _ => walker.all_shaped_levels(LevelShape::PairThenMore, None, 1, &mut out, None),
        };
        assert_eq!(
            got,
            expected,
            "case {index}: {}",
            String::from_utf8_lossy(input)
        );
    }
}

/// A string's end found one byte at a time: the reference for [`Walker::string`]'s
/// word-at-a-time path and its loop.
fn reference_string_len(content_and_rest: &[u8]) -> Option<usize> {
    let mut index = 0;
    loop {
        match *content_and_rest.get(index)? {
            b'"' => return Some(index),
            b'\\' => index += 2,
            _ => index += 1,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Strings of every length around the edges of the two 16-byte windows, with
    /// escapes anywhere and anything after them, end where the byte-at-a-time
    /// reference says.
    #[test]
    fn strings_end_at_their_first_unescaped_quote(
        content in r#"[a-z0-9:,\]\[ ]{0,40}([a-z0-9:,\]\[ ]|\\\\|\\")*"#,
        rest in r#"[a-z",\\:}]{0,24}"#,
    ) {
        let text = format!("\"{content}{rest}");
        let mut walker = Walker::new(text.as_bytes());
        match reference_string_len(&text.as_bytes()[1..]) {
            Some(len) => {
                prop_assert_eq!(walker.string(), Ok(&text.as_bytes()[1..1 + len]));
                prop_assert_eq!(walker.position(), len + 2);
            }
            None => prop_assert_eq!(walker.string(), Err(DecodeError::Truncated)),
        }
    }

    /// Unsigned integers of 1 to 22 digits, bare or quoted, followed by anything:
    /// the value `str::parse` gives, or an overflow error, and the position after.
    #[test]
    fn unsigned_integers_of_any_length_read_exactly(
        digits in "[0-9]{1,22}",
        quoted in any::<bool>(),
        rest in r#"(,|\}|]| )[a-z0-9",:}]{0,20}|"#,
    ) {
        let quote = if quoted { "\"" } else { "" };
        let text = format!("{quote}{digits}{quote}{rest}");
        let mut walker = Walker::new(text.as_bytes());
        match digits.parse::<u64>() {
            Ok(value) => {
                prop_assert_eq!(walker.unsigned(), Ok(value));
                prop_assert_eq!(walker.position(), quote.len() * 2 + digits.len());
            }
            Err(_) => prop_assert_eq!(
                walker.unsigned(),
                Err(DecodeError::IntegerOverflow { at: quote.len() })
            ),
        }
    }

    /// A sign with no digits right after it is no number.
    #[test]
    fn a_sign_alone_is_refused(text in r#""?-( |a|"|\.5|)"#) {
        prop_assert!(Walker::new(text.as_bytes()).signed().is_err(), "{}", text);
    }

    /// Signed integers, bare or quoted: the value `str::parse` gives, or an overflow
    /// error, and the position after.
    #[test]
    fn signed_integers_read_exactly(
        digits in "-?[0-9]{1,21}",
        quoted in any::<bool>(),
        rest in r#"(,|\}|]| )[a-z0-9",:}]{0,20}|"#,
    ) {
        let quote = if quoted { "\"" } else { "" };
        let text = format!("{quote}{digits}{quote}{rest}");
        let mut walker = Walker::new(text.as_bytes());
        match digits.parse::<i64>() {
            Ok(value) => {
                prop_assert_eq!(walker.signed(), Ok(value));
                prop_assert_eq!(walker.position(), quote.len() * 2 + digits.len());
            }
            Err(_) => prop_assert_eq!(
                walker.signed(),
                Err(DecodeError::IntegerOverflow { at: quote.len() })
            ),
        }
    }

    /// A skipped bare number, in a member or at the end of the input, is accepted
    /// exactly when serde_json reads the same text as a number: JSON's grammar, no
    /// more (`01`, `1.`, `.5`, `+1`, `1e`) and no less.
    #[test]
    fn skips_exactly_the_numbers_json_allows(
        pieces in prop::collection::vec(
            prop_oneof![
                Just("-"), Just("+"), Just("0"), Just("1"), Just("907"),
                Just("."), Just("e"), Just("E"),
            ],
            0..8,
        ),
        in_member in any::<bool>(),
    ) {
        let number = pieces.concat();
        let parsed = serde_json::from_str::<serde_json::Value>(&number);
        // serde_json also refuses an exponent beyond f64's range, which the grammar
        // allows (the table test has one): no reference for those.
        prop_assume!(parsed
            .as_ref()
            .err()
            .is_none_or(|error| !error.to_string().starts_with("number out of range")));
        let json_number = parsed.is_ok_and(|value| value.is_number());
        let text = if in_member { format!(r#"{{"E":{number}}}"#) } else { number.clone() };
        let mut walker = Walker::new(text.as_bytes());
        let skipped = walker.skip_value().and_then(|()| walker.finish()).is_ok();
        prop_assert_eq!(skipped, json_number, "{}", text);
    }
}

/// A bid side of `count` levels in Binance's layout whose amounts change their integer
/// digit count from level to level, with the text `between.1` before the level at index
/// `between.0`; and its levels.
fn bid_side(count: usize, between: (usize, &str)) -> (String, Vec<Level>) {
    let levels: Vec<Level> = (0..count)
        .map(|index| Level {
            price: FixedPoint::from_raw(9_123_456_000_000 - index as u64 * 1_000_000),
            amount: FixedPoint::from_raw([50_000_000, 1_200_000_000, 325_000_000][index % 3]),
        })
        .collect();
    let texts: Vec<String> = levels
        .iter()
        .enumerate()
        .map(|(index, level)| {
            let before = if index == between.0 { between.1 } else { "" };
            format!(r#"{before}["{}","{}"]"#, level.price, level.amount)
        })
        .collect();
    (format!("[{}]", texts.join(",")), levels)
}

fn read_bids(side: &str, depth: usize) -> Result<Levels> {
    let mut levels = Levels::default();
    Walker::new(side.as_bytes()).levels(Side::Bid, depth, &mut levels)?;
    Ok(levels)
}

/// With the patterns of a side's shapes kept (the second read on, with AVX2), a side is
/// read as the general path reads it: every level, whitespace before one allowed, and a
/// stray byte before one refused rather than skipped.
/// Every shape a side's read meets is kept, however its level was read: after one read
/// of a side, each of its levels is read by a kept pattern.
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
#[test]
fn a_read_keeps_the_shape_of_every_level_it_meets() {
    let (side, levels) = bid_side(8, (0, ""));
    read_bids(&side, 8).unwrap();
    let starts: Vec<usize> = (0..side.len())
        .filter(|&at| side.as_bytes()[at] == b'[')
        .skip(1)
        .collect();
    for (pair, level) in starts.windows(2).zip(&levels) {
        let window = side.as_bytes()[pair[0]..].first_chunk().unwrap();
        let read = simd::KeptPatterns::with(|kept| kept.read(window, pair[1] - pair[0]));
        assert_eq!(read, Some(*level), "{}", pair[0]);
    }
}

#[test]
fn sides_are_read_as_written_once_their_shapes_are_kept() {
    let (side, levels) = bid_side(30, (0, ""));
    for _ in 0..3 {
        assert_eq!(read_bids(&side, 20).unwrap().as_slice(), &levels[..20]);
        assert_eq!(read_bids(&side, 100).unwrap().as_slice(), &levels[..]);
    }
    for at in [1, 2, 7, 19, 20, 29] {
        let (spaced, _) = bid_side(30, (at, " "));
        assert_eq!(
            read_bids(&spaced, 20).unwrap().as_slice(),
            &levels[..20],
            "{at}"
        );
        let (stray, _) = bid_side(30, (at, "x"));
        assert!(read_bids(&stray, 30).is_err(), "{at}");
        // A price out of order (here, the one before's again) is refused.
        let unsorted = side.replacen(
            &format!(r#"["{}""#, levels[at].price),
            &format!(r#"["{}""#, levels[at - 1].price),
            1,
        );
        assert_eq!(
            read_bids(&unsorted, 30),
            Err(DecodeError::Unsorted(Side::Bid)),
            "{at}"
        );
    }
}

#[test]
fn skips_any_well_formed_value_and_refuses_broken_ones() {
    let good = [
        r#"{"a":[1,-2.5e3,true,false,null,"x\"y",{"b":{}}],"c":[]}"#,
        " [ 1 , { \"k\" : [ ] } ] ",
        "0",
        "-0.5E+3",
        "1e907",
        "\"\\\\\"",
    ];
    for text in good {
        let mut walker = Walker::new(text.as_bytes());
        assert_eq!(
            walker.skip_value().and_then(|()| walker.finish()),
            Ok(()),
            "{text}"
        );
    }
    let bad = [
        "{\"a\" 1}",
        "[1,]",
        "[1 2]",
        "tru",
        "{\"a\":1",
        "\"abc",
        "01x",
        "-",
        "[}",
        "{,}",
        "01",
        "1.",
        ".5",
        "1e+",
    ];
    for text in bad {
        let mut walker = Walker::new(text.as_bytes());
        assert!(
            walker.skip_value().and_then(|()| walker.finish()).is_err(),
            "{text}"
        );
    }
    let deep = "[".repeat(MAX_NESTING as usize + 1) + &"]".repeat(MAX_NESTING as usize + 1);
    assert_eq!(
        Walker::new(deep.as_bytes()).skip_value(),
        Err(DecodeError::TooDeep)
    );
}

/// The fast skip and the exact skip land on the same byte for every layout.
#[test]
fn fast_side_skip_agrees_with_exact_skip() {
    let tails = [
        r#",["1","2"],["0.5","3"]], "next": 1"#,
        r#", ["1", "2"] , [ "0.5" ,"3" ] ] , "next": 1"#,
        r#",["1","2"] ], "asks":[["1","2"]]"#,
        r#",[["1"],"2"]], "x":1"#,
        r#",["1","]]"]], "x":1"#,
        r#",["1","\"]]"]], "x":1"#,
    ];
    // Long tails cross many 32-byte steps and a lane fold (127 steps): 200 levels of
    // about 26 bytes, with an odd element (a quoted "]]", a nested level, a key) placed
    // at the start, in the middle, or at the end.
    let level = r#",["9328.28","0.05925332"]"#;
    let odd_elements = [
        r#",["1","]]"]"#,
        r#",[["1"],"2"]"#,
        r#",["1","2"]],"k":["#,
        "",
    ];
    let long_tails = [0, 1, 100, 199].into_iter().flat_map(|at| {
        odd_elements.map(|odd| {
            let mut tail = String::new();
            for index in 0..200 {
                tail += if index == at { odd } else { level };
            }
            tail + r#"], "next": 1"#
        })
    });
    let plain = level.repeat(200) + "]";
    assert_eq!(
        simd::rest_of_side_len(plain.as_bytes()),
        Some(plain.len()),
        "fast path taken"
    );
    let quoted_end = level.repeat(150) + r#",["1","]]"]"# + &level.repeat(49) + "]";
    assert_eq!(
        simd::rest_of_side_len(quoted_end.as_bytes()),
        None,
        "a ]] inside a string"
    );
    for tail in tails.into_iter().map(String::from).chain(long_tails) {
        // Where `levels` calls the skip: after the separator.
        let tail = tail.strip_prefix(',').expect("a tail starts after a level");
        let mut fast = Walker::new(tail.as_bytes());
        let mut exact = Walker::new(tail.as_bytes());
        fast.skip_rest_of_array().unwrap();
        exact.skip_elements().unwrap();
        assert_eq!(fast.position(), exact.position(), "{tail}");
    }
}

/// Skipping the rest of a side of objects: the fast skip lands where the exact one does,
/// or declines, for every layout; a `]` inside a string or a nested array is not taken
/// for the side's end.
#[test]
fn fast_object_side_skip_agrees_with_exact_skip() {
    let level = r#"{"px":"105055.0","sz":"3.03622","n":5}"#;
    let long = format!("{}]", vec![level; 60].join(","));
    let tails = [
        long.clone(),
        format!("{level} , {level} ] , \"next\": 1"),
        format!(r#"{level},{{"px":"1","sz":"]","n":1}}],"x":1"#),
        format!(r#"{level},{{"px":"1","sz":"\"]","n":1}}],"x":1"#),
        format!(r#"{level},{{"px":["1"],"sz":"2"}}],"x":1"#),
        format!(r#"{level},{{"px":{{"a":1}},"sz":"2"}}],"x":1"#),
    ];
    for tail in &tails {
        let mut fast = Walker::new(tail.as_bytes());
        let mut exact = Walker::new(tail.as_bytes());
        fast.skip_rest_of_object_side().unwrap();
        exact.skip_elements().unwrap();
        assert_eq!(fast.position(), exact.position(), "{tail}");
    }
    assert_eq!(
        side_skip::rest_of_object_side_len(long.as_bytes()),
        Some(long.len())
    );
    for declined in &tails[2..5] {
        assert_eq!(
            side_skip::rest_of_object_side_len(declined.as_bytes()),
            None,
            "{declined}"
        );
    }
}

/// A level of objects with an order count before or after its price and size reads by the
/// compact path as by the object walk; anything else there is the walk's to read or
/// refuse.
#[test]
fn object_levels_with_an_order_count_read_alike_by_both_paths() {
    let shape = LevelShape::Object {
        price: "px",
        amount: "sz",
    };
    let expected = level("1.5", "2");
    for text in [
        r#"{"px":"1.5","sz":"2"}"#,
        r#"{"n":5,"px":"1.5","sz":"2"}"#,
        r#"{"px":"1.5","sz":"2","n":36}"#,
        r#"{"n":0,"px":"1.5","sz":"2","count":12}"#,
    ] {
        let mut walker = Walker::new(text.as_bytes());
        let read = walker
            .compact_object_level("px", "sz")
            .map(|(level, _)| level);
        assert_eq!(read, Some(expected), "{text}");
        let mut walker = Walker::new(text.as_bytes());
        assert_eq!(walker.shaped_level(shape, None), Ok(expected), "{text}");
        assert_eq!(walker.position(), text.len());
    }
    // Duplicates are the walk's to report; numbers of other forms its to read or refuse.
    for text in [
        r#"{"px":"1.5","px":"1","sz":"2"}"#,
        r#"{"sz":"9","px":"1.5","sz":"2"}"#,
        r#"{"n":05,"px":"1.5","sz":"2"}"#,
        r#"{"n":5.5,"px":"1.5","sz":"2"}"#,
        r#"{"px":"1.5","sz":"2","n":"x"}"#,
    ] {
        let mut walker = Walker::new(text.as_bytes());
        assert_eq!(walker.compact_object_level("px", "sz"), None, "{text}");
    }
    let duplicate = |text: &str| Walker::new(text.as_bytes()).shaped_level(shape, None);
    assert_eq!(
        duplicate(r#"{"px":"1.5","px":"1","sz":"2"}"#),
        Err(DecodeError::DuplicateKey("px"))
    );
}
