//! A long work's progress on the command line, always on stderr (stdout stays
//! the command's own output, `--json`'s one document included):
//!
//! - stderr a terminal: a bar (indicatif), cleared when the work ends; plain
//!   (no colour) under `NO_COLOR`;
//! - stderr not a terminal: a plain line at each tenth of the sessions sent,
//!   every `LINE_EVERY` otherwise, and at the end (`backfill: 1200/3400
//!   sessions (35%)`; a reading of the files that takes that long says so too);
//! - `--json`: one record per line, `{"progress": {"what", "stage", "done",
//!   "total", "harness"?}}`, at each stage's start, at most every
//!   `RECORD_EVERY` between, and at the end.
//!
//! Owns how progress looks here; the work tells it (`state::progress`).

use crate::state::progress::{Progress, Stage, Work};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// A plain line at most this far apart, between tenths.
pub const LINE_EVERY: Duration = Duration::from_secs(2);
/// A `--json` record at most this far apart, within a stage.
pub const RECORD_EVERY: Duration = Duration::from_millis(250);

/// How progress shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    Bar,
    Lines,
    Json,
}

impl Show {
    /// `--json` records; else a bar on a terminal's stderr, lines elsewhere.
    pub fn for_stderr(json: bool) -> Show {
        if json {
            Show::Json
        } else if std::io::stderr().is_terminal() {
            Show::Bar
        } else {
            Show::Lines
        }
    }
}

/// The progress of one work on stderr.
pub struct Shown {
    show: Show,
    bar: Option<ProgressBar>,
    stage: Option<Stage>,
    /// When the last line was said (the work's start before any) and at
    /// which tenth of the sessions.
    said: Option<(Instant, u64)>,
}

impl Shown {
    pub fn new(show: Show) -> Shown {
        Shown {
            show,
            bar: None,
            stage: None,
            said: None,
        }
    }

    pub fn tell(&mut self, p: &Progress) {
        match self.show {
            Show::Bar => self.draw(p),
            Show::Lines | Show::Json => {
                if let Some(text) = self.next_at(p, Instant::now()) {
                    let _ = writeln!(std::io::stderr(), "{text}");
                }
            }
        }
    }

    /// The bar ends, and leaves no line behind (the command's own report follows).
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }

    fn draw(&mut self, p: &Progress) {
        // Hidden until it has its style: nothing is drawn in indicatif's own.
        let fresh = self.bar.is_none();
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::hidden();
            bar.set_prefix(label(p.what));
            bar
        });
        if self.stage != Some(p.stage) {
            self.stage = Some(p.stage);
            let colour = std::env::var_os("NO_COLOR").is_none();
            let template = match (p.stage, colour) {
                (Stage::Reading, _) => "{prefix}: reading the harnesses' files {pos}/{len} {msg}",
                (Stage::Sending, true) => "{prefix}: [{bar:30.cyan/blue}] {pos}/{len} sessions",
                (Stage::Sending, false) => "{prefix}: [{bar:30}] {pos}/{len} sessions",
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("#>-"));
            }
            bar.set_length(p.total);
        }
        if fresh {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        if p.stage == Stage::Reading {
            bar.set_message(p.harness.clone().unwrap_or_default());
        }
        bar.set_position(p.done);
    }

    /// What to print for `p` at `now`, if anything.
    fn next_at(&mut self, p: &Progress, now: Instant) -> Option<String> {
        let new_stage = self.stage != Some(p.stage);
        self.stage = Some(p.stage);
        // The clock starts with the work; `tenth` is the last tenth said.
        let (at, tenth) = *self.said.get_or_insert((now, 0));
        let since = now.duration_since(at);
        let now_tenth = p.percent().unwrap_or(0) / 10;
        let say = match (self.show, p.stage) {
            (Show::Json, _) => new_stage || p.is_last() || since >= RECORD_EVERY,
            // Reading is said only when it takes a while.
            (_, Stage::Reading) => since >= LINE_EVERY,
            (_, Stage::Sending) if p.total == 0 => false,
            (_, Stage::Sending) => p.is_last() || now_tenth > tenth || since >= LINE_EVERY,
        };
        if !say {
            return None;
        }
        self.said = Some((now, now_tenth));
        Some(match self.show {
            Show::Json => serde_json::json!({ "progress": p }).to_string(),
            _ => plain(p),
        })
    }
}

fn label(what: Work) -> &'static str {
    match what {
        Work::Backfill => "backfill",
        Work::Titles => "titles",
    }
}

/// `backfill: 1200/3400 sessions (35%)`
fn plain(p: &Progress) -> String {
    let what = label(p.what);
    match p.stage {
        Stage::Reading => format!(
            "{what}: reading the harnesses' files ({}/{})",
            p.done, p.total
        ),
        Stage::Sending => format!(
            "{what}: {}/{} sessions ({}%)",
            p.done,
            p.total,
            p.percent().unwrap_or(0)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sending(done: usize, total: usize) -> Progress {
        Progress::new(Work::Backfill, Stage::Sending, done, total, "claude-code")
    }

    fn reading(done: usize) -> Progress {
        Progress::new(Work::Backfill, Stage::Reading, done, 11, "codex")
    }

    #[test]
    fn plain_lines_come_at_each_tenth_every_two_seconds_and_at_the_end() {
        let mut s = Shown::new(Show::Lines);
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(
            s.next_at(&reading(0), at(0)),
            None,
            "a quick reading is not said"
        );
        assert_eq!(s.next_at(&reading(11), at(10)), None);
        assert_eq!(s.next_at(&sending(0, 1000), at(20)), None);
        assert_eq!(s.next_at(&sending(50, 1000), at(30)), None);
        assert_eq!(
            s.next_at(&sending(100, 1000), at(40)).as_deref(),
            Some("backfill: 100/1000 sessions (10%)")
        );
        assert_eq!(s.next_at(&sending(150, 1000), at(50)), None);
        assert_eq!(
            s.next_at(&sending(160, 1000), at(2100)).as_deref(),
            Some("backfill: 160/1000 sessions (16%)"),
            "two seconds on"
        );
        assert_eq!(s.next_at(&sending(170, 1000), at(2200)), None);
        assert_eq!(
            s.next_at(&sending(1000, 1000), at(2300)).as_deref(),
            Some("backfill: 1000/1000 sessions (100%)")
        );
        let mut slow = Shown::new(Show::Lines);
        assert_eq!(slow.next_at(&reading(0), at(0)), None);
        assert_eq!(
            slow.next_at(&reading(4), at(2500)).as_deref(),
            Some("backfill: reading the harnesses' files (4/11)")
        );
        let mut none = Shown::new(Show::Lines);
        assert_eq!(none.next_at(&sending(0, 0), at(0)), None, "nothing found");
        let mut one = Shown::new(Show::Lines);
        assert_eq!(
            one.next_at(&sending(1, 1), at(0)).as_deref(),
            Some("backfill: 1/1 sessions (100%)")
        );
    }

    #[test]
    fn json_records_open_each_stage_are_spaced_and_close_the_work() {
        let mut s = Shown::new(Show::Json);
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let first = s.next_at(&reading(0), at(0)).expect("the first");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&first).unwrap(),
            serde_json::json!({"progress": {"what": "backfill", "stage": "reading",
                "done": 0, "total": 11, "harness": "codex"}})
        );
        assert_eq!(s.next_at(&reading(1), at(10)), None);
        assert!(s.next_at(&sending(0, 10), at(20)).is_some(), "a new stage");
        assert_eq!(s.next_at(&sending(1, 10), at(30)), None);
        assert!(s.next_at(&sending(2, 10), at(300)).is_some());
        assert_eq!(s.next_at(&sending(3, 10), at(310)), None);
        let last = s.next_at(&sending(10, 10), at(320)).expect("the end");
        assert!(last.contains(r#""done":10,"total":10"#), "{last}");
    }
}
