//! Venues' times read exactly: RFC 3339 text (Kraken, Coinbase) into unix microseconds
//! or nanoseconds, and written for the simulator; integer milliseconds and microseconds
//! into nanoseconds, the unit of `TopBook::exchange_time_ns`.

use super::DecodeError;

/// [`unix_micros`], or the error saying what was `expected` (`"a time like
/// 2021-04-17T16:43:37.083117Z"`).
pub(crate) fn unix_micros_or(text: &[u8], expected: &'static str) -> Result<u64, DecodeError> {
    unix_micros(text).ok_or(DecodeError::Invalid(expected))
}

/// `2026-08-12T19:28:08.631028Z` as unix microseconds (UTC, up to 6 fractional digits).
pub(crate) fn unix_micros(text: &[u8]) -> Option<u64> {
    let time = UnixTime::parse(text)?;
    (time.fraction_digits <= 6).then(|| time.seconds * 1_000_000 + time.nanos / 1_000)
}

/// `2026-09-07T23:37:22.278662782Z` as unix nanoseconds (UTC, up to 9 fractional digits;
/// none after the year 2554, where a `u64` of them ends).
pub(crate) fn unix_nanos(text: &[u8]) -> Option<u64> {
    let time = UnixTime::parse(text)?;
    time.seconds
        .checked_mul(1_000_000_000)?
        .checked_add(time.nanos)
}

/// [`unix_nanos`], or the error saying what was `expected`.
pub(crate) fn unix_nanos_or(text: &[u8], expected: &'static str) -> Result<u64, DecodeError> {
    unix_nanos(text).ok_or(DecodeError::Invalid(expected))
}

/// A venue's time in milliseconds since the Unix epoch (Binance's `E`, OKX's `ts`…) as
/// nanoseconds, or an error where it is beyond what a `u64` of them holds.
pub(crate) fn nanos_from_millis(millis: u64) -> Result<u64, DecodeError> {
    millis
        .checked_mul(1_000_000)
        .ok_or(DecodeError::Invalid("a time in ms beyond the year 2554"))
}

/// As [`nanos_from_millis`], from microseconds (Bitstamp's `microtimestamp`, SBE's
/// `eventTime`).
pub(crate) fn nanos_from_micros(micros: u64) -> Result<u64, DecodeError> {
    micros
        .checked_mul(1_000)
        .ok_or(DecodeError::Invalid("a time in µs beyond the year 2554"))
}

/// An RFC 3339 UTC time, split.
struct UnixTime {
    seconds: u64,
    /// The fraction of the second, in nanoseconds.
    nanos: u64,
    /// How many fractional digits the text had (at most 9).
    fraction_digits: usize,
}

impl UnixTime {
    /// A venue's time is read once a message, on the hot path, and its messages share
    /// their second: the seconds come from the last time read on this thread whose first
    /// 19 bytes (`YYYY-MM-DDTHH:MM:SS`) are the same, and only the fraction is read anew.
    #[inline]
    fn parse(text: &[u8]) -> Option<UnixTime> {
        use std::cell::Cell;
        thread_local! {
            /// The last time's first 19 bytes (as three overlapping words) and their
            /// seconds; at first, the epoch's.
            static LAST_SECOND: Cell<([u64; 3], u64)> = const {
                Cell::new((words(b"1970-01-01T00:00:00"), 0))
            };
        }
        let head: &[u8; 19] = text.first_chunk()?;
        let key = words(head);
        let seconds = match LAST_SECOND.get() {
            (last, seconds) if last == key => seconds,
            _ => {
                let seconds = head_seconds(key)?;
                LAST_SECOND.set((key, seconds));
                seconds
            }
        };
        let (nanos, fraction_digits) = fraction(&text[19..])?;
        Some(UnixTime {
            seconds,
            nanos,
            fraction_digits,
        })
    }
}

/// `YYYY-MM-DDTHH:MM:SS` as the words at bytes 0, 8 and 11.
const fn words(head: &[u8; 19]) -> [u64; 3] {
    [word_at(head, 0), word_at(head, 8), word_at(head, 11)]
}

/// The eight bytes of `head` from `at`, first byte lowest.
const fn word_at(head: &[u8; 19], at: usize) -> u64 {
    let mut bytes = [0; 8];
    let mut index = 0;
    while index < 8 {
        bytes[index] = head[at + index];
        index += 1;
    }
    u64::from_le_bytes(bytes)
}

/// The seconds since the epoch of `YYYY-MM-DDTHH:MM:SS` ([`words`]), if it is a UTC time
/// from 1970 on (without leap seconds, as Unix time): its separators checked, its two runs
/// of eight digits read at once. Once a second on a busy feed: kept out of line, so that
/// the usual path (a cached second) stays short.
#[cold]
#[inline(never)]
fn head_seconds([date, day_and_time, clock]: [u64; 3]) -> Option<u64> {
    // `YYYY-MM-` and `DD`, the dashes left out: YYYYMMDD. `HH:MM:SS`, the colons made
    // zeros: HH0MM0SS.
    const DASHES: u64 = 0xFF00_00FF_0000_0000;
    const COLONS: u64 = 0x0000_FF00_00FF_0000;
    let day = day_and_time & 0xFFFF;
    let yyyymmdd = (date & 0xFFFF_FFFF) | (date >> 8 & 0xFFFF_0000_0000) | day << 48;
    let hh0mm0ss = clock & !COLONS | (0x3030_3030_3030_3030 & COLONS);
    let separators = (date & DASHES, day_and_time >> 16 & 0xFF, clock & COLONS);
    if separators
        != (
            0x2D00_002D_0000_0000,
            u64::from(b'T'),
            0x0000_3A00_003A_0000,
        )
        || !crate::fixed::is_eight_digits(yyyymmdd)
        || !crate::fixed::is_eight_digits(hh0mm0ss)
    {
        return None;
    }
    let (yyyymmdd, hh0mm0ss) = (
        crate::fixed::eight_digits_value(yyyymmdd),
        crate::fixed::eight_digits_value(hh0mm0ss),
    );
    let (year, month, day) = (yyyymmdd / 10_000, yyyymmdd / 100 % 100, yyyymmdd % 100);
    let (hour, minute, second) = (
        hh0mm0ss / 1_000_000,
        hh0mm0ss / 1_000 % 1_000,
        hh0mm0ss % 1_000,
    );
    if year < 1970
        || !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + (hour * 60 + minute) * 60 + second)
}

/// A time's end after its seconds: `Z`, or `.`, 1 to 9 digits and `Z`; the fraction in
/// nanoseconds and its digits.
#[inline]
fn fraction(rest: &[u8]) -> Option<(u64, usize)> {
    const SCALE: [u64; 10] = [
        1_000_000_000,
        100_000_000,
        10_000_000,
        1_000_000,
        100_000,
        10_000,
        1_000,
        100,
        10,
        1,
    ];
    let (&b'Z', rest) = rest.split_last()? else {
        return None;
    };
    let digits = match rest {
        [] => return Some((0, 0)),
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => digits,
        _ => return None,
    };
    let (eight, tail) = match digits.first_chunk::<8>() {
        Some(word) => {
            let word = u64::from_le_bytes(*word);
            if !crate::fixed::is_eight_digits(word) {
                return None;
            }
            (crate::fixed::eight_digits_value(word), &digits[8..])
        }
        None => (0, digits),
    };
    let mut value = eight;
    for &byte in tail {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value * 10 + u64::from(byte - b'0');
    }
    Some((value * SCALE[digits.len()], digits.len()))
}

/// The days of `month` (1 to 12) of `year`, by the Gregorian rules.
fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar, from 1970 on
/// (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    (era * 146_097 + day_of_era).saturating_sub(719_468)
}

/// Unix microseconds as `2026-08-12T19:28:08.631028Z` (the simulator's timestamps).
pub fn write_timestamp(micros: u64, out: &mut Vec<u8>) {
    use std::io::Write;
    let (days, rest) = (micros / 86_400_000_000, micros % 86_400_000_000);
    // Howard Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    let (seconds, fraction) = (rest / 1_000_000, rest % 1_000_000);
    write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{fraction:06}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
    .expect("writing to a Vec cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_unix_microseconds_and_back() {
        let micros = unix_micros(b"2026-08-12T19:28:08.631028Z").unwrap();
        // 2026-08-12 is day 20,677 since 1970-01-01.
        assert_eq!(
            micros,
            ((20_677 * 24 + 19) * 3600 + 28 * 60 + 8) * 1_000_000 + 631_028
        );
        let mut text = Vec::new();
        write_timestamp(micros, &mut text);
        assert_eq!(text, b"2026-08-12T19:28:08.631028Z");
        assert_eq!(unix_micros(b"1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_micros(b"2024-02-29T00:00:00.5Z"),
            Some(19_782 * 86_400_000_000 + 500_000)
        );
        for bad in [
            &b"2026-08-12 19:28:08Z"[..],
            b"2026-13-12T19:28:08Z",
            b"2026-02-29T19:28:08Z",
            b"1969-12-31T23:59:59Z",
            b"2026-08-12T23:59:60Z",
            b"2026-08-12T19:28:08.1234567Z",
            b"2026-08-12T19:28:08",
        ] {
            assert_eq!(unix_micros(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn nanosecond_times_keep_every_digit_and_refuse_what_a_u64_cannot_hold() {
        let seconds = ((20_703 * 24 + 23) * 3600 + 37 * 60 + 22) * 1_000_000_000;
        assert_eq!(
            unix_nanos(b"2026-09-07T23:37:22.278662782Z"),
            Some(seconds + 278_662_782)
        );
        assert_eq!(
            unix_nanos(b"2026-09-07T23:37:22.2Z"),
            Some(seconds + 200_000_000)
        );
        assert_eq!(unix_nanos(b"2026-09-07T23:37:22.2786627821Z"), None);
        assert_eq!(unix_nanos(b"2554-07-21T23:34:34Z"), None);
        assert_eq!(
            nanos_from_millis(1_786_540_345_129),
            Ok(1_786_540_345_129_000_000)
        );
        assert!(nanos_from_millis(u64::MAX / 1_000).is_err());
        assert_eq!(
            nanos_from_micros(1_580_336_834_607_546),
            Ok(1_580_336_834_607_546_000)
        );
        assert!(nanos_from_micros(u64::MAX).is_err());
    }

    proptest::proptest! {
        /// Against the `time` crate's RFC 3339 parser: every time of 1970–2500 with 0 to 9
        /// fractional digits, one after another (the date remembered from the last, or
        /// not), and the same text with one byte changed: never a value the reference does
        /// not give.
        #[test]
        fn agrees_with_another_parser(
            times in proptest::collection::vec((0i64..16_725_225_600, 0u32..1_000_000_000, 0usize..10), 1..8),
            changed in proptest::option::of((0usize..30, proptest::num::u8::ANY)),
        ) {
            let rfc3339 = &time::format_description::well_known::Rfc3339;
            for (seconds, nanos, digits) in times {
                let nanos = nanos / 10u32.pow(9 - digits as u32) * 10u32.pow(9 - digits as u32);
                let at = time::OffsetDateTime::from_unix_timestamp(seconds).unwrap();
                let mut text = format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                    at.year(), at.month() as u8, at.day(), at.hour(), at.minute(), at.second()
                );
                if digits > 0 {
                    let fraction = format!("{nanos:09}");
                    text.push('.');
                    text.push_str(&fraction[..digits]);
                }
                text.push('Z');
                let expected = seconds as u64 * 1_000_000_000 + u64::from(nanos);
                proptest::prop_assert_eq!(unix_nanos(text.as_bytes()), Some(expected), "{}", text);
                if let Some((index, byte)) = changed {
                    let mut bytes = text.clone().into_bytes();
                    if let Some(slot) = bytes.get_mut(index) {
                        *slot = byte;
                    }
                    if let Some(value) = unix_nanos(&bytes) {
                        let reference = std::str::from_utf8(&bytes).ok()
                            .and_then(|text| time::OffsetDateTime::parse(text, rfc3339).ok())
                            .map(|at| at.unix_timestamp_nanos());
                        proptest::prop_assert_eq!(Some(i128::from(value)), reference, "{:?}", String::from_utf8_lossy(&bytes));
                    }
                }
            }
        }
    }
}
