//! Layer 1, buckets: token buckets by key, in memory. Each key has one
//! bucket per kind (`Rate`s, fixed at start); a bucket starts full, gives
//! one token per request, and fills back at its rate. Empty, it says how
//! long until the next token.
//!
//! This module owns that arithmetic and the bound on its memory: at most
//! `max_keys` keys are held. A key whose every bucket has filled back up is
//! idle, the same as one never seen, and is dropped on the way (a sweep at
//! most every `SWEEP_EVERY`, and whenever the table is full); when the table
//! is still full of busy keys, the quarter heard from least recently goes
//! (they start full again: a client with that many addresses at once gains
//! nothing it did not have). It must not know what a key or a kind is (the
//! callers do), and takes the time as an argument, so tests need no clock.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Idle keys are looked for at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A bucket's rule: `burst` tokens at most, one more every `every`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub burst: u32,
    pub every: Duration,
}

impl Rate {
    pub const fn new(burst: u32, every: Duration) -> Rate {
        Rate { burst, every }
    }

    /// The tokens a bucket holds `elapsed` after it held `tokens`.
    fn filled(&self, tokens: f64, elapsed: Duration) -> f64 {
        let back = elapsed.as_secs_f64() / self.every.as_secs_f64();
        (tokens + back).min(f64::from(self.burst))
    }
}

/// One bucket: its tokens when last looked at, and when that was.
#[derive(Clone, Copy, Debug)]
struct Level {
    tokens: f64,
    at: Instant,
}

/// A key's buckets, one per rate, and when it was last heard from.
struct Entry {
    levels: Vec<Level>,
    seen: Instant,
}

struct Table<K> {
    keys: HashMap<K, Entry>,
    swept: Option<Instant>,
}

/// Buckets by key, one per rate of `rates` for each key.
pub struct Buckets<K> {
    rates: Vec<Rate>,
    max_keys: usize,
    table: Mutex<Table<K>>,
}

impl<K: Hash + Eq + Clone> Buckets<K> {
    /// `max_keys` is at least 4.
    pub fn new(rates: Vec<Rate>, max_keys: usize) -> Buckets<K> {
        Buckets {
            rates,
            max_keys: max_keys.max(4),
            table: Mutex::new(Table {
                keys: HashMap::new(),
                swept: None,
            }),
        }
    }

    /// Takes a token from `key`'s bucket `kind` at `now`; empty, how long
    /// until one is back (nothing is taken then).
    pub fn take(&self, key: &K, kind: usize, now: Instant) -> Result<(), Duration> {
        let rate = self.rates[kind];
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        self.sweep(&mut table, now);
        if !table.keys.contains_key(key) {
            if table.keys.len() >= self.max_keys {
                self.make_room(&mut table, now);
            }
            let full = self
                .rates
                .iter()
                .map(|r| Level {
                    tokens: f64::from(r.burst),
                    at: now,
                })
                .collect();
            table.keys.insert(
                key.clone(),
                Entry {
                    levels: full,
                    seen: now,
                },
            );
        }
        let entry = table.keys.get_mut(key).expect("inserted above");
        entry.seen = entry.seen.max(now);
        let level = &mut entry.levels[kind];
        let tokens = rate.filled(level.tokens, now.saturating_duration_since(level.at));
        level.at = level.at.max(now);
        if tokens >= 1.0 {
            level.tokens = tokens - 1.0;
            Ok(())
        } else {
            level.tokens = tokens;
            Err(rate.every.mul_f64(1.0 - tokens))
        }
    }

    /// Whether `key`'s bucket `kind` holds a token at `now`, taking none;
    /// empty, how long until one is back.
    pub fn peek(&self, key: &K, kind: usize, now: Instant) -> Result<(), Duration> {
        let rate = self.rates[kind];
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = table.keys.get(key) else {
            return Ok(());
        };
        let level = entry.levels[kind];
        let tokens = rate.filled(level.tokens, now.saturating_duration_since(level.at));
        if tokens >= 1.0 {
            Ok(())
        } else {
            Err(rate.every.mul_f64(1.0 - tokens))
        }
    }

    /// The keys held now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table.keys.len()
    }

    /// Whether every bucket of `entry` is full again at `now`.
    fn idle(&self, entry: &Entry, now: Instant) -> bool {
        self.rates.iter().zip(&entry.levels).all(|(rate, level)| {
            rate.filled(level.tokens, now.saturating_duration_since(level.at))
                >= f64::from(rate.burst)
        })
    }

    /// Drops idle keys, at most every `SWEEP_EVERY`.
    fn sweep(&self, table: &mut Table<K>, now: Instant) {
        if table
            .swept
            .is_some_and(|at| now.saturating_duration_since(at) < SWEEP_EVERY)
        {
            return;
        }
        table.swept = Some(now);
        table.keys.retain(|_, e| !self.idle(e, now));
    }

    /// Room for one key more: idle keys go; if none was, the quarter heard
    /// from least recently.
    fn make_room(&self, table: &mut Table<K>, now: Instant) {
        table.swept = Some(now);
        table.keys.retain(|_, e| !self.idle(e, now));
        if table.keys.len() < self.max_keys {
            return;
        }
        let mut seen: Vec<Instant> = table.keys.values().map(|e| e.seen).collect();
        let quarter = seen.len() / 4;
        let (_, cut, _) = seen.select_nth_unstable(quarter);
        let cut = *cut;
        table.keys.retain(|_, e| e.seen > cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_bucket_gives_its_burst_then_one_per_period() {
        let b: Buckets<&str> = Buckets::new(vec![Rate::new(3, 2 * S)], 16);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(b.take(&"a", 0, t0), Ok(()));
        }
        assert_eq!(b.take(&"a", 0, t0), Err(2 * S), "empty: a whole period");
        assert_eq!(b.peek(&"a", 0, t0 + S), Err(S), "half of one back");
        assert_eq!(b.take(&"a", 0, t0 + 2 * S), Ok(()));
        assert_eq!(b.take(&"a", 0, t0 + 2 * S), Err(2 * S));
        // Another key is untouched by the first's use.
        assert_eq!(b.peek(&"b", 0, t0), Ok(()));
        assert_eq!(b.take(&"b", 0, t0), Ok(()));
        // Filled back up, never past the burst.
        let later = t0 + 100 * S;
        for _ in 0..3 {
            assert_eq!(b.take(&"a", 0, later), Ok(()));
        }
        assert!(b.take(&"a", 0, later).is_err());
    }

    #[test]
    fn each_kind_is_a_bucket_of_its_own() {
        let b: Buckets<u8> = Buckets::new(vec![Rate::new(1, S), Rate::new(2, S)], 16);
        let t0 = Instant::now();
        assert_eq!(b.take(&1, 0, t0), Ok(()));
        assert!(b.take(&1, 0, t0).is_err());
        assert_eq!(b.take(&1, 1, t0), Ok(()));
        assert_eq!(b.take(&1, 1, t0), Ok(()));
        assert!(b.take(&1, 1, t0).is_err());
    }

    #[test]
    fn idle_keys_are_dropped_and_the_table_stays_bounded() {
        let b: Buckets<u32> = Buckets::new(vec![Rate::new(2, S)], 100);
        let t0 = Instant::now();
        for k in 0..100 {
            b.take(&k, 0, t0).unwrap();
        }
        assert_eq!(b.len(), 100);
        // Two seconds on, every one of them is full again: the next new key
        // finds them idle, and they go.
        b.take(&1000, 0, t0 + 2 * S).unwrap();
        assert_eq!(b.len(), 1);
        // A full table of busy keys: the least recently heard quarter goes,
        // never the key just used.
        let t1 = t0 + 10 * S;
        for k in 0..100u32 {
            let at = t1 + Duration::from_millis(u64::from(k));
            b.take(&k, 0, at).unwrap();
            b.take(&k, 0, at).unwrap();
        }
        assert_eq!(b.len(), 100);
        let t2 = t1 + Duration::from_millis(200);
        b.take(&5000, 0, t2).unwrap();
        assert!(b.len() <= 100, "{}", b.len());
        assert!(b.len() >= 75, "{}", b.len());
        assert!(b.take(&99, 0, t2).is_err(), "a recent busy key is kept");
        assert_eq!(b.peek(&0, 0, t2), Ok(()), "the oldest went");
        // The periodic sweep drops idle keys without a full table.
        let t3 = t2 + 120 * S;
        b.take(&7000, 0, t3).unwrap();
        assert_eq!(b.len(), 1);
    }
}
