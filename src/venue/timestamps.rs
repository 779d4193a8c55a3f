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
    fn parse(text: &[u8]) -> Option<UnixTime> {
        let number = |range: std::ops::Range<usize>| -> Option<u64> {
            let digits = text.get(range)?;
            digits.iter().try_fold(0u64, |value, &byte| {
                byte.is_ascii_digit()
                    .then(|| value * 10 + u64::from(byte - b'0'))
            })
        };
        let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
        if separators
            .iter()
            .any(|&(at, byte)| text.get(at) != Some(&byte))
        {
            return None;
        }
        let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
        let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let rest = text.get(19..)?.strip_suffix(b"Z")?;
        let (nanos, fraction_digits) = match rest {
            [] => (0, 0),
            [b'.', fraction @ ..] if (1..=9).contains(&fraction.len()) => {
                let digits = fraction.len();
                (
                    number(20..20 + digits)? * 10u64.pow(9 - digits as u32),
                    digits,
                )
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        Some(UnixTime {
            seconds: ((days * 24 + hour) * 60 + minute) * 60 + second,
            nanos,
            fraction_digits,
        })
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
pub(crate) fn write_timestamp(micros: u64, out: &mut Vec<u8>) {
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
}
