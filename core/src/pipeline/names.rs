//! Which session a hook call's events go under: the harness's own id, or the
//! name a control `start` gave the session when the daemon ran it in an ACP
//! agent (ADAPTERS.md, the Gemini CLI and Devin "Control" rows: the session
//! fires its hooks under the harness's own id, "the daemon keeps the start's
//! id as its name"), so a receiver sees the one session the start's ack names
//! and not a second one beside it.
//!
//! The name comes from the agent's environment (`SESSIONPIPE_CONTROL_SESSION`,
//! `<harness>:<name>`, which `control::acp` sets on the process it starts and
//! the hook keeps), else from control's record of the start (asked through
//! `GivenNames`, the question control answers from its own tables) for a
//! call the environment did not reach: the same session resumed at a
//! terminal, a process of the harness's own.
//! Only the id the events carry and the outbox keeps the session under
//! changes; the call's payload, and so every read of the harness's own files,
//! keeps the harness's id.
//!
//! Asked once per (harness, id, variable) and remembered, so the ingest loop
//! does not query per call. It never writes the outbox.

use crate::pipeline::holds::SessionKey;
use crate::pipeline::outbox::{GivenNames, OutboxError, OutboxTx};
use crate::pipeline::session::SessionRecord;
use std::collections::HashMap;
use std::sync::Arc;

/// The variable `control::acp` sets on an agent it starts.
pub const CONTROL_SESSION: &str = "SESSIONPIPE_CONTROL_SESSION";

/// At most this many answers are remembered (a daemon that runs for a year
/// must not grow without end; one forgotten is only asked again).
const KNOWN_MAX: usize = 4096;

/// What was decided for each (harness, the harness's id, the variable).
#[derive(Default)]
pub struct Names {
    known: HashMap<(String, String, Option<String>), String>,
    /// Who answers for the names control's starts gave (none: no such
    /// names are asked for).
    given: Option<Arc<dyn GivenNames>>,
}

impl Names {
    /// Names that ask `given` for the names control's starts gave.
    pub fn asking(given: Arc<dyn GivenNames>) -> Names {
        Names {
            known: HashMap::new(),
            given: Some(given),
        }
    }

    /// The session id a call of `harness` whose own id is `native` goes
    /// under, `var` being its `SESSIONPIPE_CONTROL_SESSION`. `records` are
    /// the batch's records not saved yet (they hold the latest bindings).
    pub fn session_of(
        &mut self,
        tx: &OutboxTx<'_>,
        harness: &str,
        native: &str,
        var: Option<&str>,
        records: &HashMap<SessionKey, SessionRecord>,
    ) -> Result<String, OutboxError> {
        let key = (
            harness.to_string(),
            native.to_string(),
            var.map(str::to_string),
        );
        if let Some(session) = self.known.get(&key) {
            return Ok(session.clone());
        }
        let session = decide(tx, self.given.as_deref(), harness, native, var, records)?;
        if self.known.len() >= KNOWN_MAX {
            self.known.clear();
        }
        self.known.insert(key, session.clone());
        Ok(session)
    }
}

fn decide(
    tx: &OutboxTx<'_>,
    given: Option<&dyn GivenNames>,
    harness: &str,
    native: &str,
    var: Option<&str>,
    records: &HashMap<SessionKey, SessionRecord>,
) -> Result<String, OutboxError> {
    // A session whose events went out under its own id keeps it (one from
    // before this daemon named sessions, one that inherited a name that was
    // not its): renaming it now would split it in two.
    let own = (harness.to_string(), native.to_string());
    if records.contains_key(&own) || tx.session_known(harness, native)? {
        return Ok(native.to_string());
    }
    if let Some(name) = start_name(harness, var) {
        let bound = match records.get(&(harness.to_string(), name.to_string())) {
            Some(r) => r.native_id.clone(),
            None => tx.load_session(harness, name)?.native_id,
        };
        if takes(bound.as_deref(), native) {
            return Ok(name.to_string());
        }
    }
    let named = match given {
        Some(g) => tx.given_name(g, harness, native)?,
        None => None,
    };
    Ok(named.unwrap_or_else(|| native.to_string()))
}

/// The name in a `SESSIONPIPE_CONTROL_SESSION` value for a call of
/// `harness`: `<harness>:<name>` with a valid session id for a name. A value
/// of another harness (the variable reached a process of another agent) or
/// a malformed one names nothing.
pub fn start_name<'a>(harness: &str, var: Option<&'a str>) -> Option<&'a str> {
    let (h, name) = var?.split_once(':')?;
    (h == harness && protocol::valid_session_id(name)).then_some(name)
}

/// Whether a name already bound to the harness's id `bound` (none: not yet)
/// takes a call whose own id is `native`. Another id under the same name is
/// another session of the same harness that inherited the variable (one the
/// agent started from its shell tool): its events keep their own id, so two
/// sessions never share one seq.
fn takes(bound: Option<&str>, native: &str) -> bool {
    bound.is_none_or(|b| b == native)
}

/// Records, on a session a name reached, the harness's id it stands for: the
/// first one. `session` is the id its events go under, `var` the call's
/// variable. A name that is the harness's own id binds too (control reopens a
/// session it did not start by that id, and the agent's subagents inherit
/// the variable).
pub fn bind(record: &mut SessionRecord, session: &str, native: &str, var: Option<&str>) {
    if (session != native || var.is_some()) && record.native_id.is_none() {
        record.native_id = Some(native.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::outbox::Outbox;

    const NAME: &str = "7c1e2d3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5";

    #[test]
    fn only_a_well_formed_value_of_the_calls_own_harness_names_it() {
        let var = format!("gemini-cli:{NAME}");
        assert_eq!(start_name("gemini-cli", Some(&var)), Some(NAME));
        assert_eq!(start_name("devin", Some(&var)), None, "another harness");
        for bad in [
            "gemini-cli",
            "gemini-cli:",
            "gemini-cli:a b",
            "gemini-cli:../x/y",
            ":x",
            "",
        ] {
            assert_eq!(start_name("gemini-cli", Some(bad)), None, "{bad:?}");
        }
        assert_eq!(start_name("gemini-cli", None), None);
        // A name may hold `:` (a session id may).
        assert_eq!(start_name("opencode", Some("opencode:a:b")), Some("a:b"));
    }

    #[test]
    fn a_name_takes_the_first_id_under_it_and_no_other() {
        assert!(takes(None, "s-1"));
        assert!(takes(Some("s-1"), "s-1"));
        assert!(!takes(Some("s-1"), "s-2"));
        let mut r = SessionRecord::default();
        bind(&mut r, "s-1", "s-1", None);
        assert_eq!(r.native_id, None, "no name reached it: nothing to bind");
        bind(&mut r, NAME, "s-1", None);
        bind(&mut r, NAME, "s-2", None);
        assert_eq!(r.native_id.as_deref(), Some("s-1"));
        let mut r = SessionRecord::default();
        bind(&mut r, "s-1", "s-1", Some("opencode:s-1"));
        assert_eq!(r.native_id.as_deref(), Some("s-1"), "named by its own id");
    }

    /// Control's record of its starts, as the test hands it: (harness, the
    /// harness's id) to the name its ACP start gave.
    #[derive(Default)]
    struct Given(std::sync::Mutex<HashMap<(String, String), String>>);

    impl Given {
        fn row(&self, name: &str, id: &str) {
            self.0
                .lock()
                .unwrap()
                .insert(("gemini-cli".into(), id.into()), name.into());
        }
    }

    impl GivenNames for Given {
        fn name_of(
            &self,
            _: &rusqlite::Connection,
            harness: &str,
            id: &str,
        ) -> rusqlite::Result<Option<String>> {
            let named = self.0.lock().unwrap();
            Ok(named.get(&(harness.to_string(), id.to_string())).cloned())
        }
    }

    /// The three ways a call is named, through an outbox: the variable, the
    /// name control's record gives (which names only its ACP starts: that
    /// is control's own query, `control::store`), the harness's own id; a
    /// nested session under a bound name keeps its own, and so does a
    /// session already known by its own id.
    #[test]
    fn a_call_is_named_by_its_variable_else_by_the_start_recorded_else_its_own_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.db");
        let mut ob = Outbox::open(&path).unwrap();
        let given = Arc::new(Given::default());
        let row = |name: &str, id: &str| given.row(name, id);
        row("started", "g-acp");
        let var = format!("gemini-cli:{NAME}");
        let other = format!("claude-code:{NAME}");
        let mut records: HashMap<SessionKey, SessionRecord> = HashMap::new();
        let tx = ob.begin().unwrap();
        let mut names = Names::asking(given.clone());
        let mut of = |native: &str, var: Option<&str>, records: &HashMap<_, _>| {
            names
                .session_of(&tx, "gemini-cli", native, var, records)
                .unwrap()
        };
        assert_eq!(of("g-1", Some(&var), &records), NAME);
        assert_eq!(of("g-1", Some(&other), &records), "g-1");
        assert_eq!(of("g-1", Some("gemini-cli:a b"), &records), "g-1");
        assert_eq!(of("g-acp", None, &records), "started");
        assert_eq!(of("g-fork", None, &records), "g-fork");
        assert_eq!(of("g-2", None, &records), "g-2");
        // The name bound to g-1 (as ingest binds it): a g-3 under the same
        // variable is another session.
        let mut bound = SessionRecord::default();
        bind(&mut bound, NAME, "g-1", Some(&var));
        records.insert(("gemini-cli".into(), NAME.into()), bound);
        assert_eq!(of("g-3", Some(&var), &records), "g-3");
        assert_eq!(of("g-1", Some(&var), &records), NAME);
        // Events went out under g-2's own id: a row naming it later does not
        // rename it, whoever asks.
        tx.save_session("gemini-cli", "g-2", &SessionRecord::default())
            .unwrap();
        tx.commit().unwrap();
        row("late", "g-2");
        row("later", "g-4");
        let tx = ob.begin().unwrap();
        let mut fresh = Names::asking(given.clone());
        let mut of = |native: &str, var: Option<&str>| {
            fresh
                .session_of(&tx, "gemini-cli", native, var, &HashMap::new())
                .unwrap()
        };
        assert_eq!(of("g-2", None), "g-2");
        assert_eq!(of("g-2", Some(&var)), "g-2");
        assert_eq!(of("g-4", None), "later");
        // Control reopened g-2 over ACP by its own id (the variable names
        // it): g-2 bound to itself, a subagent's g-5 under that variable
        // keeps its own id.
        let reopened = Some("gemini-cli:g-2");
        let mut own = SessionRecord::default();
        bind(&mut own, "g-2", "g-2", reopened);
        let mut records: HashMap<SessionKey, SessionRecord> = HashMap::new();
        records.insert(("gemini-cli".into(), "g-2".into()), own);
        let subagent = fresh.session_of(&tx, "gemini-cli", "g-5", reopened, &records);
        assert_eq!(subagent.unwrap(), "g-5");
        // Nobody to ask: a call is named by its variable or its own id.
        let mut alone = Names::default();
        let alone = alone.session_of(&tx, "gemini-cli", "g-4", None, &HashMap::new());
        assert_eq!(alone.unwrap(), "g-4");
    }
}
