//! What an adapter's backfill finds, and the skeleton every scanner is built on.
//!
//! A scanner lists a harness's past sessions from its own files (`sessionpipe
//! backfill`; the daemon appends each as a `session.backfill` at seq 0). The
//! listing and the reading of a record are the harness's; the rest is the same
//! for every one and lives here: a file counts when it changed since the cutoff
//! (`modified_since`), a session's records add up in a `Tally` (its first and
//! last instant, its turns counted by the person's asks, its title from the best
//! source seen), and when several files hold one session the newest says it
//! (`newest_first`).

use crate::transcript::Rec;
use protocol::{SessionBlock, TitleSource};
use std::collections::HashMap;
use std::path::Path;

/// What a harness's files say of one past session.
#[derive(Clone, Debug, Default)]
pub struct Backfilled {
    pub session_id: String,
    pub block: SessionBlock,
    pub version: Option<String>,
    pub started_ms: i64,
    pub last_ms: i64,
    pub turns: Option<u64>,
    /// The harness's config dir the session lives in, for a harness whose
    /// service may be asked about it with that dir's sign-in (remote titles).
    pub config_dir: Option<std::path::PathBuf>,
    /// The tokens of each model response the files hold, as the live reads
    /// find them (the same parser), for the daemon's usage table.
    pub usage: Vec<crate::usage::Usage>,
}

/// True when `path` was last modified at or after `since_ms` (epoch ms).
pub fn modified_since(path: &Path, since_ms: i64) -> bool {
    crate::payload::modified_ms(path).is_some_and(|ms| ms >= since_ms)
}

/// One session per id, the newest of its files (by its last instant); newest
/// session first.
pub fn newest_first(found: impl IntoIterator<Item = Backfilled>) -> Vec<Backfilled> {
    let mut by_id: HashMap<String, Backfilled> = HashMap::new();
    for b in found {
        match by_id.get(&b.session_id) {
            Some(known) if known.last_ms >= b.last_ms => {}
            _ => {
                by_id.insert(b.session_id.clone(), b);
            }
        }
    }
    let mut out: Vec<Backfilled> = by_id.into_values().collect();
    out.sort_by_key(|b| std::cmp::Reverse(b.last_ms));
    out
}

/// One session's records, added up as a scanner reads them.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub session_id: Option<String>,
    /// What the records say of the session beyond its title (folder, model...).
    pub block: SessionBlock,
    pub version: Option<String>,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
    turns: u64,
    first_ask: Option<String>,
    /// The newest title of each source the harness names one by.
    custom: Option<String>,
    harness: Option<String>,
    /// The model responses' tokens, as read (`Backfilled::usage`).
    pub usage: Vec<crate::usage::Usage>,
}

impl Tally {
    /// The tally of a session whose id is known before its records are read.
    pub fn of(session_id: impl Into<String>) -> Tally {
        Tally {
            session_id: Some(session_id.into()),
            ..Default::default()
        }
    }

    /// A record's instant.
    pub fn time(&mut self, ms: i64) {
        self.first_ms = Some(self.first_ms.map_or(ms, |f| f.min(ms)));
        self.last_ms = Some(self.last_ms.map_or(ms, |l| l.max(ms)));
    }

    /// What the records say: each of the person's asks is a turn, and the first
    /// one is a `first-ask` title when the harness names none.
    pub fn recs<'a>(&mut self, recs: impl IntoIterator<Item = &'a Rec>) {
        for rec in recs {
            if let Rec::Ask {
                words,
                injected: false,
                ..
            } = rec
            {
                self.turns += 1;
                if self.first_ask.is_none() {
                    self.first_ask = Some(words.clone());
                }
            }
        }
    }

    /// A title the harness gave the session; a later one of the same source
    /// replaces it, and the best source wins (`custom` over `harness`).
    pub fn title(&mut self, title: String, source: TitleSource) {
        match source {
            TitleSource::Custom => self.custom = Some(title),
            TitleSource::Harness => self.harness = Some(title),
            TitleSource::FirstAsk => {
                self.first_ask.get_or_insert(title);
            }
        }
    }

    pub fn turns(&self) -> u64 {
        self.turns
    }

    /// The session, titled by its best source (`first_ask_chars` of the first
    /// ask when nothing better); `None` without an id or any instant.
    pub fn finish(self, first_ask_chars: usize) -> Option<Backfilled> {
        let title = self
            .custom
            .map(|t| (t, TitleSource::Custom))
            .or(self.harness.map(|t| (t, TitleSource::Harness)))
            .or(self.first_ask.map(|t| {
                (
                    crate::payload::one_line(&t, first_ask_chars),
                    TitleSource::FirstAsk,
                )
            }));
        let mut block = self.block;
        if let Some((t, source)) = title {
            block.title = Some(t);
            block.title_source = Some(source);
        }
        Some(Backfilled {
            session_id: self.session_id?,
            block,
            version: self.version,
            started_ms: self.first_ms?,
            last_ms: self.last_ms?,
            turns: Some(self.turns),
            config_dir: None,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(w: &str, injected: bool) -> Rec {
        Rec::Ask {
            words: w.into(),
            prompt_id: None,
            at_ms: None,
            injected,
        }
    }

    #[test]
    fn a_tally_counts_the_persons_asks_and_keeps_the_best_title() {
        let mut t = Tally {
            session_id: Some("s".into()),
            ..Default::default()
        };
        assert!(t.clone().finish(80).is_none(), "no instant");
        t.time(20);
        t.time(10);
        t.recs(&[
            ask("fix the\n parser", false),
            ask("<peer/>", true),
            ask("thanks", false),
        ]);
        assert_eq!(t.turns(), 2);
        let b = t.clone().finish(7).unwrap();
        assert_eq!((b.started_ms, b.last_ms, b.turns), (10, 20, Some(2)));
        assert_eq!(b.block.title.as_deref(), Some("fix th…"));
        t.title("named".into(), TitleSource::Harness);
        t.title("renamed".into(), TitleSource::Custom);
        t.title("newer auto".into(), TitleSource::Harness);
        let b = t.finish(80).unwrap();
        assert_eq!(
            (b.block.title.as_deref(), b.block.title_source),
            (Some("renamed"), Some(TitleSource::Custom))
        );
    }

    #[test]
    fn the_newest_file_of_a_session_wins_and_sessions_go_newest_first() {
        let b = |id: &str, last: i64| Backfilled {
            session_id: id.into(),
            last_ms: last,
            ..Default::default()
        };
        let out = newest_first([b("a", 1), b("b", 5), b("a", 3), b("a", 2)]);
        let got: Vec<(&str, i64)> = out
            .iter()
            .map(|b| (b.session_id.as_str(), b.last_ms))
            .collect();
        assert_eq!(got, [("b", 5), ("a", 3)]);
    }
}
