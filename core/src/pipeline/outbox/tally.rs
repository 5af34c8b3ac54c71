//! How much of the outbox a sink has still to take, how much of that it keeps
//! from retention, and how many events the outbox holds, for `status` and the
//! API's sink list: bounded reads, whatever the outbox's size.
//!
//! SQLite counts a range by reading every row in it, and a sink paused for
//! six weeks on a year's outbox has 350 000 rows after its cursor, stored
//! with their envelopes (2.8 s for `status`; `bench_year`). So each tally
//! reads at most `EXACT_UP_TO` rows and is exact below that; above it,
//! `behind` is the rowid distance (rowids after a cursor are never reused,
//! and retention deletes nothing after any cursor, so only a forgotten
//! session's events make it high) and `holds_back` is found by a binary
//! search on the events' times (exact while events went in in time order;
//! a backfill of older sessions appended later is counted as the times
//! around it say). Must not write, and must not be used to decide what is
//! deleted or sent: retention and the sinks read the rows themselves.

use super::{Outbox, Result};
use rusqlite::{OptionalExtension, params};

/// Rows read before a tally stops counting and estimates.
pub const EXACT_UP_TO: i64 = 10_000;

/// A count that is exact, or an estimate when the range was too long to
/// read (the person sees "about").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    pub count: i64,
    pub exact: bool,
}

impl Outbox {
    /// How many events are stored after `rowid`.
    pub fn count_after(&self, rowid: i64) -> Result<Tally> {
        let counted: i64 = self.conn.query_row(
            "SELECT count(*) FROM (SELECT 1 FROM events WHERE rowid > ?1 LIMIT ?2)",
            params![rowid, EXACT_UP_TO],
            |r| r.get(0),
        )?;
        if counted < EXACT_UP_TO {
            return Ok(Tally {
                count: counted,
                exact: true,
            });
        }
        // From the oldest event stored when the cursor is before it (the
        // outbox's whole count is `count_after(0)`).
        let oldest: i64 =
            self.conn
                .query_row("SELECT coalesce(min(rowid), 0) FROM events", [], |r| {
                    r.get(0)
                })?;
        let from = rowid.max(oldest - 1);
        Ok(Tally {
            count: (self.newest_rowid()? - from).max(counted),
            exact: false,
        })
    }

    /// How many events stored after `rowid` are older than `before_ms`: what
    /// a sink whose cursor is at `rowid` keeps from retention.
    pub fn count_older_after(&self, rowid: i64, before_ms: i64) -> Result<Tally> {
        // `time` is always `rfc3339_ms`'s fixed form, which sorts as it reads.
        let before = protocol::time::rfc3339_ms(before_ms);
        let (read, old): (i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(time < ?3), 0)
             FROM (SELECT time FROM events WHERE rowid > ?1 ORDER BY rowid LIMIT ?2)",
            params![rowid, EXACT_UP_TO, before],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if read < EXACT_UP_TO {
            return Ok(Tally {
                count: old,
                exact: true,
            });
        }
        // The last event older than `before` in rowid order, by halving the
        // rowids between the cursor and the newest; each probe is one lookup.
        let (mut low, mut high) = (rowid, self.newest_rowid()?);
        let mut last_old = rowid;
        while low < high {
            let mid = low + (high - low + 1) / 2;
            match self.time_at_or_after(mid)? {
                Some((at, time)) if time < before => {
                    last_old = at;
                    low = at;
                }
                _ => high = mid - 1,
            }
        }
        Ok(Tally {
            count: (last_old - rowid).max(old),
            exact: false,
        })
    }

    /// How many sessions the outbox knows (one row each; never pruned).
    pub fn session_count(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?)
    }

    /// The first event at or after `rowid`: its rowid and time.
    fn time_at_or_after(&self, rowid: i64) -> Result<Option<(i64, String)>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT rowid, time FROM events WHERE rowid >= ?1 ORDER BY rowid LIMIT 1",
            )?
            .query_row(params![rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;
    const NOW: i64 = 1_796_000_000_000; // 2026-11-29

    /// `old` events 40 days old, then `young` of yesterday, in one session.
    fn outbox(old: i64, young: i64) -> (tempfile::TempDir, Outbox) {
        let dir = tempfile::tempdir().unwrap();
        let mut ob = Outbox::open(&dir.path().join("o.db")).unwrap();
        // One commit per append; durability is not what this test is about.
        ob.conn.execute_batch("PRAGMA synchronous = OFF").unwrap();
        for i in 0..old + young {
            let t = if i < old {
                NOW - 40 * DAY + i
            } else {
                NOW - DAY + i
            };
            let mut env = crate::pipeline::session::turn_ended_at("s", t);
            ob.append(&mut env).unwrap();
        }
        (dir, ob)
    }

    #[test]
    fn short_ranges_are_counted_exactly() {
        let (_d, ob) = outbox(30, 20);
        let before = NOW - 30 * DAY;
        assert_eq!(
            ob.count_after(10).unwrap(),
            Tally {
                count: 40,
                exact: true
            }
        );
        assert_eq!(
            ob.count_older_after(10, before).unwrap(),
            Tally {
                count: 20,
                exact: true
            }
        );
        assert_eq!(
            ob.count_older_after(35, before).unwrap(),
            Tally {
                count: 0,
                exact: true
            }
        );
        assert_eq!(
            ob.count_after(50).unwrap(),
            Tally {
                count: 0,
                exact: true
            }
        );
    }

    #[test]
    fn long_ranges_are_estimated_from_rowids_and_times_and_say_so() {
        let (_d, ob) = outbox(EXACT_UP_TO + 1500, 700);
        let before = NOW - 30 * DAY;
        // Rowids 1..=12 200: 11 500 old, then 700 young.
        assert_eq!(
            ob.count_after(100).unwrap(),
            Tally {
                count: EXACT_UP_TO + 2100,
                exact: false
            }
        );
        assert_eq!(
            ob.count_older_after(100, before).unwrap(),
            Tally {
                count: EXACT_UP_TO + 1400,
                exact: false
            }
        );
        // Past the old ones, the range is short again.
        assert_eq!(
            ob.count_older_after(EXACT_UP_TO + 1500, before).unwrap(),
            Tally {
                count: 0,
                exact: true
            }
        );
    }
}
