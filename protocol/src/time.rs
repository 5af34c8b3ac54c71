//! Wall-clock times as the protocol writes them: RFC 3339, UTC, milliseconds,
//! `Z` (`2026-09-28T02:05:03.861Z`), and times read from harnesses' files in any
//! RFC 3339 form. `jiff` does the calendar: an impossible date (`2026-02-31`) or
//! hour is refused, never rolled over. No time zone database is ever read.

use jiff::Timestamp;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `2026-09-28T02:05:03.861Z` for an epoch-millisecond time (clamped to the
/// years -9999 to 9999, which no clock reaches).
pub fn rfc3339_ms(epoch_ms: i64) -> String {
    let ts = Timestamp::from_millisecond(epoch_ms).unwrap_or(if epoch_ms < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    format!("{ts:.3}")
}

/// Parses an RFC 3339 time (any offset, any fraction) into epoch milliseconds;
/// `None` for anything else, a real calendar's impossible dates included.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    // An offset is required: a time without one names no instant.
    let has_offset = s.ends_with(['Z', 'z'])
        || s.get(s.len().checked_sub(6)?..)
            .is_some_and(|o| o.starts_with(['+', '-']) && o.as_bytes()[3] == b':');
    if !has_offset {
        return None;
    }
    s.parse::<Timestamp>().ok().map(|t| t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_790_561_103_861), "2026-09-28T02:05:03.861Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_790_561_103_000), "2026-09-28T02:05:03.000Z");
    }

    #[test]
    fn parses_what_it_formats_and_offsets() {
        for ms in [0, 1_790_561_103_861, 951_782_400_123, 4_102_444_799_999] {
            assert_eq!(parse_rfc3339_ms(&rfc3339_ms(ms)), Some(ms));
        }
        assert_eq!(
            parse_rfc3339_ms("2026-09-28T04:05:03.8612+02:00"),
            Some(1_790_561_103_861)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-09-28T02:05:03Z"),
            Some(1_790_561_103_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-09-28t02:05:03z"),
            Some(1_790_561_103_000)
        );
    }

    #[test]
    fn impossible_and_partial_times_are_refused() {
        for bad in [
            "2026-13-28T02:05:03Z",
            "2026-02-31T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-04-31T10:00:00Z",
            "2026-09-28T24:00:00Z",
            "2026-09-28T02:60:00Z",
            "2026-09-28T02:05:03",
            "2026-09-28",
            "yesterday",
            "",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
        assert!(
            parse_rfc3339_ms("2024-02-29T00:00:00Z").is_some(),
            "a leap day"
        );
    }
}
