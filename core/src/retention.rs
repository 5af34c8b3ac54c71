//! Layer 3, retention: the outbox keeps an event until every sink has taken
//! it and it is older than `retention_days` (config.json; 30 by default),
//! then deletes it. An event some sink has not taken stays whatever its age
//! (a paused sink's cursor counts; `status` says how much each one holds
//! back). With no sink at all, every event counts as taken: the outbox is then
//! this machine's own view (the board, `tail`), and keeps the window. A sink
//! added later gets what is still there. Session records (titles, folder,
//! first and last seen, the next seq) are never deleted: the board, backfill
//! and control still know a session whose events went, and its seq goes on.
//!
//! The daemon runs it on its own task: a pass a minute after start, then
//! hourly; each pass deletes in batches of `BATCH` events, one short write
//! transaction each with `PAUSE` between, so ingest never waits more than a
//! batch. After a pass the file gives its free pages back a few at a time
//! (`incremental_vacuum`), while there are at most `STEP_MAX_FREE_PAGES` of
//! them (32 MiB): SQLite walks its whole list of free pages for each page it
//! gives back, so a step's cost grows with the list (after a pass that pruned
//! a year's outbox to 30 days, 1.4 million free pages, a step of 256 pages
//! held the write lock for 1.3 s, and all of them would have taken hours;
//! `bench_year`). More free pages than that, and an outbox made before this
//! version (no auto-vacuum), take one VACUUM instead, once what the file
//! holds is at most `SWITCH_MAX_BYTES` (256 MiB, about 180 000 events;
//! usually right after the pass that freed them): it copies what is held,
//! not what is free. A larger one reuses its free pages for new events (the
//! file stops growing) until the machine is quiet, no session having done
//! anything for `QUIET_FOR` (30 minutes), with room on the disk for the copy:
//! then it takes the same VACUUM (the year's 880 MiB held took 14 s; the
//! hooks write the spool meanwhile, and the daemon's drain catches up after).
//!
//! `SESSIONPIPE_RETENTION_NOW_MS` (tests only; `doctor` notes it, the daemon
//! warns) sets the clock ages are measured by, and makes the passes come
//! every second, so a test can age events without waiting for them.

use crate::pipeline::outbox::{Outbox, OutboxError};
use crate::runtime::blocking;
use crate::sinks::SinkList;
use crate::state::live_config::LiveConfig;
use spool::StatePaths;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The test-only clock retention measures ages by, epoch ms.
pub const NOW_VAR: &str = "SESSIONPIPE_RETENTION_NOW_MS";
/// Events deleted per write transaction.
pub const BATCH: usize = 500;
/// The wait between two batches (and two vacuum steps): ingest goes first.
pub const PAUSE: Duration = Duration::from_millis(25);
/// The first pass after the daemon starts (its first drain goes first).
const FIRST_PASS: Duration = Duration::from_secs(60);
/// Then a pass this often.
const EVERY: Duration = Duration::from_secs(3600);
/// Both, with the test clock set.
const TEST_EVERY: Duration = Duration::from_secs(1);
/// Free pages given back per step of an incremental vacuum (1 MiB at the
/// default page size).
pub const VACUUM_PAGES: i64 = 256;
/// An outbox without auto-vacuum, or with more free pages than
/// `STEP_MAX_FREE_PAGES`, is compacted (one full VACUUM, the write lock held
/// while it copies) only when it holds at most this much: 55 MiB took 0.3 s
/// on the CI machine kind (`bench_retention`), so this is about 1.5 s of
/// ingest waiting once (the hooks never wait: they write the spool).
pub const SWITCH_MAX_BYTES: i64 = 256 << 20;
/// The longest free list given back step by step (`incremental_vacuum`): 32
/// MiB at the default page size, a few pages of SQLite's list to walk for
/// each page given back.
pub const STEP_MAX_FREE_PAGES: i64 = 8192;

const DAY_MS: i64 = 86_400_000;

/// The clock ages are measured by: the test setting when it is set.
pub fn now_ms() -> i64 {
    test_now().unwrap_or_else(protocol::time::now_ms)
}

fn test_now() -> Option<i64> {
    std::env::var(NOW_VAR).ok()?.trim().parse().ok()
}

/// Events older than this (epoch ms) are past the window of `days`.
pub fn cutoff_ms(now_ms: i64, days: u32) -> i64 {
    now_ms.saturating_sub(i64::from(days) * DAY_MS)
}

/// The rowid through which every sink has taken the outbox (`i64::MAX` with
/// no sink); a sink that never sent has taken nothing (0), and a replay
/// asked for and not yet started by the sink's task (`replay_from` in
/// sinks.json) counts as where its cursor will go.
pub fn taken_by_all(ob: &Outbox, sinks: &SinkList) -> Result<i64, OutboxError> {
    let mut taken = i64::MAX;
    for s in &sinks.sinks {
        let cursor = ob.sink_cursor(&s.id)?;
        taken = taken.min(s.replay_from.map_or(cursor, |from| from.min(cursor)));
    }
    Ok(taken)
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    pub deleted: usize,
    pub batches: usize,
    /// Bytes given back to the file system (file and WAL).
    pub freed_bytes: i64,
    /// The outbox was switched to incremental auto-vacuum in this pass.
    pub switched: bool,
    /// The file was rewritten whole (one VACUUM): more free pages than
    /// `STEP_MAX_FREE_PAGES`, or a file without auto-vacuum.
    pub vacuumed: bool,
}

/// How a pass gives the file's free pages back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compaction {
    /// `incremental_vacuum`, a few pages a step.
    Steps,
    /// One VACUUM, which copies only what the file holds.
    Vacuum,
    /// Nothing now: new events reuse the free pages.
    Keep,
}

/// `compaction`'s answer for a file larger than `SWITCH_MAX_BYTES` with a
/// long free list (or no auto-vacuum): rewritten only while the machine is
/// quiet, no session having done anything for `QUIET_FOR` (the hooks write
/// the spool meanwhile and never wait; the daemon's drain waits for the
/// rewrite, or retries after its busy wait), and only with room on the disk
/// for the copy and its WAL, so the rewrite never fills the disk the spool
/// is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Quiet {
    /// No session did anything for `QUIET_FOR`.
    idle: bool,
    /// Free bytes on the outbox's disk (`None`: unknown, no rewrite).
    room: Option<u64>,
}

impl Quiet {
    /// A large file may be rewritten now: quiet, worth it, room for the copy.
    fn allows(self, pages: &crate::pipeline::outbox::Pages) -> bool {
        let worth = !pages.incremental || pages.free * pages.page_size >= QUIET_MIN_FREE_BYTES;
        let copy = (pages.used_bytes().max(0) as u64).saturating_mul(2);
        self.idle
            && worth
            && self
                .room
                .is_some_and(|room| room >= copy + QUIET_ROOM_SPARE)
    }
}

/// How long no session may have done anything before a large file is
/// rewritten.
pub const QUIET_FOR: Duration = Duration::from_secs(30 * 60);
/// A large file is rewritten for at least this much of free pages (or to
/// switch an older file to incremental auto-vacuum).
pub const QUIET_MIN_FREE_BYTES: i64 = 64 << 20;
/// What a rewrite leaves free on the disk at least, beyond twice what it
/// copies (the copy and the WAL it goes through).
pub const QUIET_ROOM_SPARE: u64 = 512 << 20;

fn compaction(pages: &crate::pipeline::outbox::Pages, quiet: Quiet) -> Compaction {
    if pages.free == 0 {
        Compaction::Keep
    } else if pages.incremental && pages.free <= STEP_MAX_FREE_PAGES {
        Compaction::Steps
    } else if pages.used_bytes() <= SWITCH_MAX_BYTES || quiet.allows(pages) {
        Compaction::Vacuum
    } else {
        Compaction::Keep
    }
}

/// The outbox as retention's task holds it.
pub type Shared = Arc<Mutex<Outbox>>;

fn lock(ob: &Shared) -> std::sync::MutexGuard<'_, Outbox> {
    ob.lock().unwrap_or_else(|p| p.into_inner())
}

/// The daemon's retention task, until aborted; `config` is the settings in
/// force (the days events are kept).
pub async fn run(paths: StatePaths, config: LiveConfig) {
    let every = match test_now() {
        Some(now) => {
            tracing::warn!(
                "{NOW_VAR} is set: retention measures ages as if it were {} and looks every second (for tests only)",
                protocol::time::rfc3339_ms(now)
            );
            TEST_EVERY
        }
        None => EVERY,
    };
    let path = paths.outbox();
    let ob = match blocking(move || Outbox::open_for_retention(&path)).await {
        Ok(ob) => Arc::new(Mutex::new(ob)),
        Err(e) => {
            tracing::warn!("retention: cannot open the outbox: {e}");
            return;
        }
    };
    tokio::time::sleep(if every == EVERY { FIRST_PASS } else { every }).await;
    loop {
        match pass(&paths, &config, &ob).await {
            Ok(p) if p.deleted > 0 || p.freed_bytes > 0 || p.vacuumed => tracing::info!(
                "retention: {} events pruned in {} batches; {} bytes given back{}",
                p.deleted,
                p.batches,
                p.freed_bytes,
                if p.switched {
                    "; the outbox now gives free pages back as it goes"
                } else if p.vacuumed {
                    " (the file rewritten once)"
                } else {
                    ""
                }
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!("retention: {e}"),
        }
        tokio::time::sleep(every).await;
    }
}

/// One pass: batches until nothing more goes, then the file is compacted.
/// A settings file or sink list that cannot be read skips the pass (nothing
/// is deleted on a guess, nor on settings the person may be changing; the
/// settings' problem is said where they are followed).
pub async fn pass(
    paths: &StatePaths,
    config: &LiveConfig,
    ob: &Shared,
) -> Result<Pass, OutboxError> {
    let c = config.clone();
    let days = match blocking(move || (c.problem(), c.now())).await {
        (None, c) => c.retention_days(),
        (Some(_), _) => return Ok(Pass::default()),
    };
    let mut done = Pass::default();
    loop {
        // The sinks and their cursors are read again for every batch: a
        // sink added meanwhile holds back what it has not taken.
        let (p, o) = (paths.clone(), ob.clone());
        let step = blocking(move || -> Result<Option<_>, OutboxError> {
            let sinks = match SinkList::load(&p) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("retention: {e}; nothing pruned until it reads");
                    return Ok(None);
                }
            };
            let mut ob = lock(&o);
            let taken = taken_by_all(&ob, &sinks)?;
            let now = now_ms();
            ob.prune_batch(taken, cutoff_ms(now, days), now, BATCH)
                .map(Some)
        })
        .await?;
        let Some(step) = step else {
            break;
        };
        done.batches += 1;
        done.deleted += step.deleted;
        if !step.more {
            break;
        }
        tokio::time::sleep(PAUSE).await;
    }
    compact(paths, ob, &mut done).await?;
    Ok(done)
}

/// Gives free pages back after a pass's batches (`compaction` says how):
/// step by step in an incremental file with a short free list, or by one
/// VACUUM of a small enough file (switching an older one to incremental
/// auto-vacuum) or of a larger one while the machine is quiet (`Quiet`); else
/// new events reuse them. Public for `bench_year`, which times the batches
/// itself.
pub async fn compact(paths: &StatePaths, ob: &Shared, done: &mut Pass) -> Result<(), OutboxError> {
    let outbox = paths.outbox();
    let size = crate::pipeline::outbox::size_on_disk(&outbox);
    let o = ob.clone();
    let (pages, last) = blocking(move || {
        let ob = lock(&o);
        Ok::<_, OutboxError>((ob.pages()?, ob.last_activity_ms()?))
    })
    .await?;
    let quiet = Quiet {
        idle: last.is_some_and(|t| now_ms() - t >= QUIET_FOR.as_millis() as i64),
        room: fs4::available_space(paths.root.as_path()).ok(),
    };
    let how = compaction(&pages, quiet);
    if how == Compaction::Steps {
        // Bounded: each step gives back up to VACUUM_PAGES of what was free.
        for _ in 0..=pages.free / VACUUM_PAGES {
            let o = ob.clone();
            let free = blocking(move || {
                let ob = lock(&o);
                ob.incremental_vacuum(VACUUM_PAGES)?;
                ob.pages().map(|p| p.free)
            })
            .await?;
            if free == 0 {
                break;
            }
            tokio::time::sleep(PAUSE).await;
        }
    } else if how == Compaction::Vacuum {
        let o = ob.clone();
        blocking(move || lock(&o).vacuum_to_incremental()).await?;
        done.switched = !pages.incremental;
        done.vacuumed = true;
    } else {
        // New events reuse the free pages; the file stops growing.
        return Ok(());
    }
    let o = ob.clone();
    if let Err(e) = blocking(move || lock(&o).checkpoint()).await {
        tracing::debug!("retention: checkpoint: {e}");
    }
    done.freed_bytes = (size as i64 - crate::pipeline::outbox::size_on_disk(&outbox) as i64).max(0);
    Ok(())
}

/// What a sink keeps from retention: events past the window it has not
/// taken (`status`; exact up to `tally::EXACT_UP_TO` events after its cursor).
pub fn held_back(
    ob: &Outbox,
    sink: &str,
    days: u32,
    now_ms: i64,
) -> Result<crate::pipeline::outbox::tally::Tally, OutboxError> {
    ob.count_older_after(ob.sink_cursor(sink)?, cutoff_ms(now_ms, days))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(ob: &mut Outbox, session: &str, time_ms: i64) {
        let mut env = crate::pipeline::session::turn_ended_at(session, time_ms);
        env.session.title = Some("t".repeat(2000));
        ob.append(&mut env).unwrap();
    }

    fn sinks(paths: &StatePaths, ids: &[&str]) {
        let list: Vec<_> = ids
            .iter()
            .map(|id| serde_json::json!({"id": id, "kind": "file", "path": format!("/x/{id}"), "tier": 3, "added_at": 0}))
            .collect();
        std::fs::write(
            paths.sinks(),
            serde_json::json!({ "sinks": list }).to_string(),
        )
        .unwrap();
    }

    fn sessions_left(ob: &Outbox) -> Vec<String> {
        ob.events_after(0, 10_000)
            .unwrap()
            .iter()
            .map(|e| {
                serde_json::from_str::<protocol::Envelope>(&e.envelope)
                    .unwrap()
                    .session
                    .id
            })
            .collect()
    }

    #[test]
    fn a_pass_prunes_what_every_sink_took_past_the_window_and_compacts() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        std::fs::write(paths.config(), r#"{"retention_days": 7}"#).unwrap();
        let now = protocol::time::now_ms();
        let mut ob = Outbox::open(&paths.outbox()).unwrap();
        for _ in 0..600 {
            append(&mut ob, "old", now - 9 * DAY_MS);
        }
        for _ in 0..3 {
            append(&mut ob, "held", now - 8 * DAY_MS);
        }
        append(&mut ob, "young", now - DAY_MS);
        sinks(&paths, &["s_all", "s_paused"]);
        ob.set_sink_cursor("s_all", 604).unwrap();
        ob.set_sink_cursor("s_paused", 600).unwrap();
        let ob = Arc::new(Mutex::new(ob));

        // An unreadable setting prunes nothing.
        std::fs::write(paths.config(), "{not json").unwrap();
        let p = crate::runtime::block_on(pass(&paths, &LiveConfig::follow(&paths), &ob)).unwrap();
        assert_eq!(p, Pass::default());
        std::fs::write(paths.config(), r#"{"retention_days": 7}"#).unwrap();

        let p = crate::runtime::block_on(pass(&paths, &LiveConfig::follow(&paths), &ob)).unwrap();
        assert_eq!((p.deleted, p.batches), (600, 2), "{p:?}");
        assert!(p.freed_bytes > 0, "{p:?}");
        assert_eq!(lock(&ob).pages().unwrap().free, 0);
        let left = sessions_left(&lock(&ob));
        assert_eq!(left, ["held", "held", "held", "young"]);
        for s in ["old", "held", "young"] {
            assert!(lock(&ob).session("claude-code", s).unwrap().is_some());
        }
        let ahead = |id: &str| held_back(&lock(&ob), id, 7, now).unwrap().count;
        assert_eq!((ahead("s_all"), ahead("s_paused")), (0, 3));

        // A sink added now has taken nothing: it holds everything back.
        sinks(&paths, &["s_all", "s_paused", "s_new"]);
        lock(&ob).set_sink_cursor("s_paused", 604).unwrap();
        let p = crate::runtime::block_on(pass(&paths, &LiveConfig::follow(&paths), &ob)).unwrap();
        assert_eq!(p.deleted, 0);
        // A replay asked for and not yet started holds back what it will
        // send again, though the sink's cursor is past it.
        let replaying = serde_json::json!({"sinks": [{"id": "s_all", "kind": "file",
            "path": "/x/s_all", "tier": 3, "added_at": 0, "replay_from": 0}]});
        std::fs::write(paths.sinks(), replaying.to_string()).unwrap();
        assert_eq!(
            SinkList::load(&paths).unwrap().sinks[0].replay_from,
            Some(0)
        );
        let p = crate::runtime::block_on(pass(&paths, &LiveConfig::follow(&paths), &ob)).unwrap();
        assert_eq!(p.deleted, 0);
        // Once it has them too (or with no sink at all), they go; the young
        // one stays.
        sinks(&paths, &[]);
        let p = crate::runtime::block_on(pass(&paths, &LiveConfig::follow(&paths), &ob)).unwrap();
        assert_eq!(p.deleted, 3);
        assert_eq!(sessions_left(&lock(&ob)), ["young"]);
    }

    #[test]
    fn a_long_free_list_is_given_back_by_one_vacuum_and_a_large_file_keeps_it() {
        use crate::pipeline::outbox::Pages;
        let p = |free: i64, count: i64, incremental: bool| Pages {
            page_size: 4096,
            page_count: count,
            free,
            incremental,
        };
        let held_max = SWITCH_MAX_BYTES / 4096;
        let busy = Quiet {
            idle: false,
            room: Some(u64::MAX),
        };
        let c = |pages: Pages| compaction(&pages, busy);
        assert_eq!(c(p(0, 10, true)), Compaction::Keep);
        assert_eq!(
            c(p(
                STEP_MAX_FREE_PAGES,
                STEP_MAX_FREE_PAGES + held_max * 4,
                true
            )),
            Compaction::Steps,
            "a short list is stepped through, whatever the file holds"
        );
        let long = STEP_MAX_FREE_PAGES + 1;
        assert_eq!(c(p(long, long + held_max, true)), Compaction::Vacuum);
        assert_eq!(c(p(long, long + held_max + 1, true)), Compaction::Keep);
        assert_eq!(c(p(1, 1 + held_max, false)), Compaction::Vacuum);
        assert_eq!(c(p(1, 2 + held_max, false)), Compaction::Keep);

        // The year's file (6.7 GB, 880 MiB held): rewritten once the machine
        // is quiet and the disk has room for the copy, else kept.
        let held = 880 * 256;
        let year = p(1_400_000, 1_400_000 + held, true);
        let needs = (held as u64) * 4096 * 2 + QUIET_ROOM_SPARE;
        let quiet = |room| Quiet { idle: true, room };
        assert_eq!(compaction(&year, quiet(Some(needs))), Compaction::Vacuum);
        assert_eq!(compaction(&year, quiet(Some(needs - 1))), Compaction::Keep);
        assert_eq!(compaction(&year, quiet(None)), Compaction::Keep);
        assert_eq!(compaction(&year, busy), Compaction::Keep);
        // A little free in a large incremental file is not worth a rewrite;
        // a large file without auto-vacuum is switched once.
        let little = QUIET_MIN_FREE_BYTES / 4096 - 1;
        assert!(little > STEP_MAX_FREE_PAGES);
        let roomy = quiet(Some(u64::MAX));
        assert_eq!(
            compaction(&p(little, held + little, true), roomy),
            Compaction::Keep
        );
        assert_eq!(
            compaction(&p(little + 1, held + little, true), roomy),
            Compaction::Vacuum
        );
        assert_eq!(compaction(&p(1, held, false), roomy), Compaction::Vacuum);

        // A pass that frees more than that: the file is rewritten once.
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        let now = protocol::time::now_ms();
        let mut ob = Outbox::open(&paths.outbox()).unwrap();
        assert!(ob.pages().unwrap().incremental);
        let big = "x".repeat(64 << 10);
        let tx = ob.begin().unwrap();
        for _ in 0..600 {
            let mut env = crate::pipeline::session::turn_ended_at("old", now - 40 * DAY_MS);
            env.data.insert("error".into(), big.clone().into());
            tx.append(&mut env).unwrap();
        }
        tx.commit().unwrap();
        append(&mut ob, "young", now);
        let ob = Arc::new(Mutex::new(ob));
        let p = crate::runtime::block_on(pass(&paths, &LiveConfig::follow(&paths), &ob)).unwrap();
        assert_eq!(p.deleted, 600);
        assert!(
            p.vacuumed && !p.switched && p.freed_bytes > 30 << 20,
            "{p:?}"
        );
        let pages = lock(&ob).pages().unwrap();
        assert!(pages.incremental && pages.free == 0, "{pages:?}");
        assert_eq!(sessions_left(&lock(&ob)), ["young"]);
    }

    #[test]
    fn an_older_outbox_without_auto_vacuum_is_switched_once_it_is_small() {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path());
        paths.ensure().unwrap();
        {
            let c = rusqlite::Connection::open(paths.outbox()).unwrap();
            c.execute_batch("PRAGMA auto_vacuum = NONE; CREATE TABLE t (x);")
                .unwrap();
        }
        let now = protocol::time::now_ms();
        let mut ob = Outbox::open(&paths.outbox()).unwrap();
        assert!(!ob.pages().unwrap().incremental);
        for _ in 0..200 {
            append(&mut ob, "old", now - 40 * DAY_MS);
        }
        append(&mut ob, "young", now);
        let ob = Arc::new(Mutex::new(ob));
        let p = crate::runtime::block_on(pass(&paths, &LiveConfig::follow(&paths), &ob)).unwrap();
        assert_eq!(p.deleted, 200);
        assert!(p.switched && p.vacuumed && p.freed_bytes > 0, "{p:?}");
        let pages = lock(&ob).pages().unwrap();
        assert!(pages.incremental && pages.free == 0, "{pages:?}");
    }
}
