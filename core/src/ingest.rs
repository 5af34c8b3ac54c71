//! From spool to outbox: read jobs in arrival order, map each with its harness's
//! adapter, apply the session rules, run `secrets@1`, append, and only then remove
//! the job files.
//!
//! A batch of jobs commits in one transaction together with the names of the jobs
//! it took, so a crash at any point either keeps the jobs for the next run or
//! remembers they are done: never lost, never appended twice. A job that cannot be
//! read is quarantined with its reason and never retried. This module does not
//! deliver or filter; it is the only writer of the outbox's events.

use crate::adapters::{self, Mapped};
use crate::job::Job;
use crate::outbox::{Outbox, OutboxTx};
use crate::protocol::Envelope;
use crate::session::{self, Stamp};
use crate::spool::Spool;

/// Jobs per transaction: large enough to amortise a commit's fsync under a hook
/// storm, small enough that one batch stays a few milliseconds.
const BATCH: usize = 256;

pub struct Ingest {
    outbox: Outbox,
    spool: Spool,
    machine: String,
    /// Where committed jobs are moved instead of removed (a diagnostic, and how
    /// the project records fixtures from real harnesses).
    archive: Option<std::path::PathBuf>,
}

/// What became of one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Appended(usize),
    Ignored(String),
    Quarantined(String),
}

impl Outcome {
    fn record(&self) -> String {
        match self {
            Outcome::Appended(n) => format!("appended {n}"),
            Outcome::Ignored(why) => format!("ignored: {why}"),
            Outcome::Quarantined(why) => format!("quarantined: {why}"),
        }
    }

    fn from_record(s: &str) -> Outcome {
        match s.strip_prefix("quarantined: ") {
            Some(why) => Outcome::Quarantined(why.to_string()),
            None => Outcome::Ignored(s.to_string()),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainReport {
    pub jobs: usize,
    pub events: usize,
    pub quarantined: usize,
}

impl Ingest {
    pub fn new(outbox: Outbox, spool: Spool, machine: String) -> Ingest {
        Ingest {
            outbox,
            spool,
            machine,
            archive: None,
        }
    }

    /// Keeps every committed job in `dir`. Payloads hold prompts and tool output:
    /// only for diagnostics and recording fixtures.
    pub fn keep_jobs_in(&mut self, dir: std::path::PathBuf) {
        self.archive = Some(dir);
    }

    /// Takes every job in the spool, batch by batch, until none is left.
    pub fn drain(&mut self) -> Result<DrainReport, String> {
        let mut report = DrainReport::default();
        loop {
            let names = self
                .spool
                .pending(BATCH)
                .map_err(|e| format!("cannot list the spool: {e}"))?;
            if names.is_empty() {
                return Ok(report);
            }
            for (name, outcome) in self.batch(&names)? {
                report.jobs += 1;
                match &outcome {
                    Outcome::Appended(n) => report.events += n,
                    Outcome::Quarantined(why) => {
                        report.quarantined += 1;
                        crate::log::warn(&format!("quarantined {name}: {why}"));
                    }
                    Outcome::Ignored(_) => {}
                }
                let done = match (&outcome, &self.archive) {
                    (Outcome::Quarantined(why), _) => self.spool.quarantine(&name, why),
                    (_, Some(dir)) => self.spool.archive(&name, dir),
                    (_, None) => self.spool.remove(&name),
                };
                if let Err(e) = done {
                    // Committed already: the next drain finds it in jobs_done.
                    crate::log::warn(&format!("cannot remove job {name}: {e}"));
                }
            }
        }
    }

    /// Commits one batch and returns each job's outcome, in order.
    fn batch(&mut self, names: &[String]) -> Result<Vec<(String, Outcome)>, String> {
        let db = |e: rusqlite::Error| format!("outbox: {e}");
        let machine = self.machine.clone();
        let tx = self.outbox.begin().map_err(db)?;
        let mut outcomes = Vec::with_capacity(names.len());
        for name in names {
            if let Some(done) = tx.job_outcome(name).map_err(db)? {
                outcomes.push((name.clone(), Outcome::from_record(&done)));
                continue;
            }
            let outcome = match Job::read(&self.spool.path(name)) {
                Ok(job) => ingest_job(&tx, &job, &machine).map_err(db)?,
                Err(why) => Outcome::Quarantined(why),
            };
            tx.mark_job(name, &outcome.record(), crate::time::now_ms())
                .map_err(db)?;
            outcomes.push((name.clone(), outcome));
        }
        tx.commit().map_err(db)?;
        Ok(outcomes)
    }

    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }
}

/// Maps one job and appends its events inside `tx`.
pub fn ingest_job(tx: &OutboxTx<'_>, job: &Job, machine: &str) -> rusqlite::Result<Outcome> {
    let Some(adapter) = adapters::lookup(&job.harness) else {
        return Ok(Outcome::Quarantined(format!(
            "no adapter for harness {:?}",
            job.harness
        )));
    };
    let mapping = match adapter.map(job) {
        Ok(Mapped::Events(m)) => *m,
        Ok(Mapped::Ignored(why)) => return Ok(Outcome::Ignored(why)),
        Err(e) => return Ok(Outcome::Quarantined(e.0)),
    };
    let mut record = tx.load_session(adapter.name(), &mapping.session_id)?;
    let mut events = mapping.events;
    adapter.remember(job, &mut events, &mut record.memo);
    let mut block = mapping.block;
    block.machine = Some(machine.to_string());
    record.block.merge(&block);
    if mapping.harness_version.is_some() {
        record.version = mapping.harness_version;
    }
    let events = session::apply_rules(&mut record, events);
    let stamp = Stamp {
        harness: adapter.name(),
        harness_event: Some(&job.event),
        version: record.version.as_deref(),
        session_id: &mapping.session_id,
        block: &record.block,
        time_ms: job.at_ms(),
    };
    let count = events.len();
    for event in events {
        let mut env = session::envelope(&stamp, 0, event);
        redact_secrets(&mut env);
        tx.append(&mut env)?;
    }
    tx.save_session(adapter.name(), &mapping.session_id, &record)?;
    Ok(Outcome::Appended(count))
}

/// `secrets@1` on every string of the event's data and on the session's title,
/// before the outbox: nothing stored, and so nothing sent, carries a secret.
pub fn redact_secrets(env: &mut Envelope) {
    for value in env.data.values_mut() {
        sessionpipe_redact::map_strings(value, &sessionpipe_redact::secrets);
    }
    if let Some(title) = env.session.title.as_mut()
        && let std::borrow::Cow::Owned(clean) = sessionpipe_redact::secrets(title)
    {
        *title = clean;
    }
}

/// The machine name events carry: the hostname.
pub fn machine_name() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}
