//! RFC 3339 times, as venues stamp their messages (Kraken, Coinbase), read exactly into
//! unix microseconds, and written for the simulator.

use super::DecodeError;

/// [`unix_micros`], or the error saying what was `expected` (`"a time like
/// 2021-04-17T16:43:37.083117Z"`).
pub(crate) fn unix_micros_or(text: &[u8], expected: &'static str) -> Result<u64, DecodeError> {
    unix_micros(text).ok_or(DecodeError::Invalid(expected))
}

/// `2026-08-12T19:28:08.631028Z` as unix microseconds (UTC, up to 6 fractional digits).
pub(crate) fn unix_micros(text: &[u8]) -> Option<u64> {
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
    let micros = match rest {
        [] => 0,
        [b'.', fraction @ ..] if (1..=6).contains(&fraction.len()) => {
            number(20..20 + fraction.len())? * 10u64.pow(6 - fraction.len() as u32)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + micros)
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
}
