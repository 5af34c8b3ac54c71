//! Layer 3, sinks: where events go. An HTTPS receiver speaking the HTTP binding
//! (PROTOCOL-NOTES §5), a JSONL file, or stdout.
//!
//! This module owns the sink list (`sinks.json` in the state dir, tokens in
//! `secrets`), adding and removing sinks, and the cursor each keeps in the outbox
//! (moved only when the sink accepted what it was sent). `deliver` runs a sink;
//! `http` speaks the binding; `jsonl` appends to a file sink. Every event a
//! sink gets has been through `filter` at the sink's tier: a sink never sees
//! more than it was allowed.

pub mod deliver;
pub mod http;
mod jsonl;

pub use http::Discovery;

use crate::pipeline::outbox::OutboxError;
use crate::state::file::{self, FileError};
use crate::state::secrets::{Backend, Secrets};
use serde::{Deserialize, Serialize};
use spool::StatePaths;

/// What is wrong with a sink's target as given.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("file sink {0:?} must be an absolute path")]
    NotAbsolute(String),
    #[error("{given:?} is not a URL: {source}")]
    NotUrl {
        given: String,
        source: url::ParseError,
    },
    #[error("{0} is plain http: HTTPS is required except on localhost")]
    PlainHttp(String),
    #[error(
        "{0} has a user name or password in it: give the receiver's token with `sink add --token-stdin` instead (it is kept in the keychain and never printed)"
    )]
    Credentials(String),
    #[error("{given}: scheme {scheme} is not http(s), file: or stdout")]
    Scheme { given: String, scheme: String },
}

/// Why a sink could not be added, changed, removed or tested.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(
        "{} is sink {id} already (sink remove {id} first)",
        http::shown_url(target)
    )]
    Exists { target: String, id: String },
    #[error("a webhook secret is whsec_ followed by base64")]
    WebhookSecret,
    #[error("discovery of {url} failed: {source}")]
    Discovery {
        url: String,
        source: http::DiscoveryError,
    },
    #[error("no sink {0} (sink list shows them)")]
    NoSuch(String),
    #[error("unknown harness {0:?}")]
    UnknownHarness(String),
    #[error("sink {0} is not an HTTP sink: it has no token")]
    NoSecrets(String),
    /// `sinks.json` or the secrets fallback could not be read or written.
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

/// Where one sink sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    Http { url: String },
    File { path: String },
    Stdout,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Sink {
    pub id: String,
    #[serde(flatten)]
    pub target: Target,
    /// The tier the person chose, lowered to the receiver's `max_tier`.
    pub tier: u8,
    #[serde(default)]
    pub pii: bool,
    #[serde(default)]
    pub discovery: Option<Discovery>,
    /// Why the sink stopped sending (401, a protocol it does not speak); the
    /// person fixes it (`sink token` for a refused token).
    #[serde(default)]
    pub paused: Option<String>,
    /// The last error seen, for `status` (cleared by a success).
    #[serde(default)]
    pub last_error: Option<String>,
    pub added_at: i64,
    /// Added with a bearer token / a webhook secret: delivery waits for them
    /// (a keychain still locked) rather than sending without them.
    #[serde(default)]
    pub has_token: bool,
    #[serde(default)]
    pub has_webhook_secret: bool,
    /// When `sink token` last replaced its secrets (ms): a running sink is
    /// restarted on it, so its next batch bears them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_at: Option<i64>,
    /// `replay` asked a running daemon to send again everything after this
    /// rowid: the sink's task puts its cursor there when it starts, then
    /// clears this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_from: Option<i64>,
}

impl Sink {
    /// Whether this is an HTTP sink on `origin` (`https://host[:port]`): how
    /// a receiver control pairs with is matched to the sink that feeds it.
    pub fn sends_to(&self, origin: &str) -> bool {
        matches!(&self.target, Target::Http { url }
            if reqwest::Url::parse(url).is_ok_and(|u| u.origin().ascii_serialization() == origin))
    }

    pub fn token_key(&self) -> String {
        format!("sink:{}:token", self.id)
    }

    pub fn webhook_key(&self) -> String {
        format!("sink:{}:webhook", self.id)
    }

    /// The secrets it was added with that cannot be read now, by name.
    pub fn unreadable_secrets(&self, secrets: &Secrets) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.has_token && secrets.get(&self.token_key()).is_none() {
            missing.push("token");
        }
        if self.has_webhook_secret && secrets.get(&self.webhook_key()).is_none() {
            missing.push("webhook secret");
        }
        missing
    }

    /// Whether the receiver takes this capability (`forget`, `backfill`).
    pub fn takes(&self, capability: &str) -> bool {
        match &self.target {
            Target::Http { .. } => self
                .discovery
                .as_ref()
                .is_some_and(|d| d.capabilities.iter().any(|c| c == capability)),
            Target::File { .. } | Target::Stdout => true,
        }
    }

    /// The sink as the API and `status --json` show it: its URLs as
    /// `http::shown_url` prints them (a query-string token never shows).
    pub fn shown(&self) -> Sink {
        let mut shown = self.clone();
        if let Target::Http { url } = &mut shown.target {
            *url = http::shown_url(url);
        }
        if let Some(d) = &mut shown.discovery {
            d.events = http::shown_url(&d.events);
        }
        shown
    }

    /// A line for `sink list` and `status`.
    pub fn describe(&self) -> String {
        let target = match &self.target {
            Target::Http { url } => http::shown_url(url),
            Target::File { path } => format!("file:{path}"),
            Target::Stdout => "stdout".into(),
        };
        let pii = if self.pii { ", pii@1" } else { "" };
        let paused = self
            .paused
            .as_ref()
            .map(|p| format!(", paused: {p}"))
            .unwrap_or_default();
        format!("{} {target} (tier {}{pii}{paused})", self.id, self.tier)
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SinkList {
    pub sinks: Vec<Sink>,
}

impl SinkList {
    pub fn load(paths: &StatePaths) -> Result<SinkList, FileError> {
        Ok(file::load(&paths.sinks())?.unwrap_or_default())
    }

    pub fn save(&self, paths: &StatePaths) -> Result<(), FileError> {
        file::save(&paths.sinks(), self)
    }

    /// The tier of the HTTP sink on `origin` (what that receiver sees), when
    /// `sinks.json` reads and has one.
    pub fn tier_for(paths: &StatePaths, origin: &str) -> Option<u8> {
        let list = SinkList::load(paths).ok()?;
        list.sinks
            .iter()
            .find(|s| s.sends_to(origin))
            .map(|s| s.tier)
    }

    /// Changes one sink on disk (the daemon and the CLI both write the list).
    pub fn update(
        paths: &StatePaths,
        id: &str,
        change: impl FnOnce(&mut Sink),
    ) -> Result<(), FileError> {
        let mut list = SinkList::load(paths)?;
        if let Some(s) = list.sinks.iter_mut().find(|s| s.id == id) {
            change(s);
            list.save(paths)?;
        }
        Ok(())
    }
}

/// What `sink add` was given.
pub struct NewSink {
    pub target: String,
    pub tier: u8,
    pub pii: bool,
    pub token: Option<String>,
    pub webhook_secret: Option<String>,
}

/// Parses `https://…`, `file:PATH` or `stdout`; HTTP only on loopback.
pub fn parse_target(s: &str) -> Result<Target, TargetError> {
    if s == "stdout" {
        return Ok(Target::Stdout);
    }
    if let Some(path) = s.strip_prefix("file:") {
        let p = std::path::Path::new(path);
        if !p.is_absolute() {
            return Err(TargetError::NotAbsolute(path.to_string()));
        }
        return Ok(Target::File {
            path: path.to_string(),
        });
    }
    let shown = http::shown_url(s);
    let url = reqwest::Url::parse(s).map_err(|source| TargetError::NotUrl {
        given: shown.clone(),
        source,
    })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Credentials(shown));
    }
    match url.scheme() {
        "https" => {}
        "http" if http::is_loopback(&url) => {}
        "http" => return Err(TargetError::PlainHttp(shown)),
        other => {
            return Err(TargetError::Scheme {
                given: shown,
                scheme: other.to_string(),
            });
        }
    }
    Ok(Target::Http {
        url: s.trim_end_matches('/').to_string(),
    })
}

/// What `add` did.
#[derive(Clone, Debug)]
pub struct Added {
    pub sink: Sink,
    /// Where its secrets went, when it was given any.
    pub kept_in: Option<Backend>,
    /// The tier asked for, when the receiver takes less (the sink has the lower).
    pub lowered_from: Option<u8>,
}

/// Adds a sink (discovering an HTTP receiver first) and stores its secrets.
pub async fn add(paths: &StatePaths, new: NewSink) -> Result<Added, SinkError> {
    let target = parse_target(&new.target)?;
    if let Some(w) = &new.webhook_secret
        && http::webhook_headers(w, "").is_none()
    {
        return Err(SinkError::WebhookSecret);
    }
    let (p, t, given) = (paths.clone(), target.clone(), new.target.clone());
    crate::runtime::blocking(move || refuse_twice(&p, &t, given)).await?;
    let mut sink = Sink {
        id: format!(
            "s_{}",
            &ulid::Ulid::generate().to_string()[18..].to_lowercase()
        ),
        target,
        tier: new.tier,
        pii: new.pii,
        discovery: None,
        paused: None,
        last_error: None,
        added_at: protocol::time::now_ms(),
        has_token: new.token.is_some(),
        has_webhook_secret: new.webhook_secret.is_some(),
        secrets_at: None,
        replay_from: None,
    };
    let mut lowered_from = None;
    if let Target::Http { url } = &sink.target {
        let d = http::discover(url)
            .await
            .map_err(|source| SinkError::Discovery {
                url: http::shown_url(url),
                source,
            })?;
        if sink.tier > d.max_tier {
            lowered_from = Some(sink.tier);
            sink.tier = d.max_tier;
        }
        sink.discovery = Some(d);
    }
    let p = paths.clone();
    let kept_in = crate::runtime::blocking(move || keep(&p, &sink, new).map(|b| (sink, b))).await;
    let (sink, kept_in) = kept_in?;
    Ok(Added {
        sink,
        kept_in,
        lowered_from,
    })
}

/// Refuses a second sink to the same target.
fn refuse_twice(paths: &StatePaths, target: &Target, given: String) -> Result<(), SinkError> {
    match SinkList::load(paths)?
        .sinks
        .into_iter()
        .find(|s| s.target == *target)
    {
        Some(existing) => Err(SinkError::Exists {
            target: given,
            id: existing.id,
        }),
        None => Ok(()),
    }
}

/// Stores a new sink's secrets, then the sink. Where the secrets went.
fn keep(paths: &StatePaths, sink: &Sink, new: NewSink) -> Result<Option<Backend>, SinkError> {
    let secrets = Secrets::new(&paths.root);
    let mut backend = None;
    if let Some(token) = &new.token {
        backend = Some(secrets.set(&sink.token_key(), token)?);
    }
    if let Some(w) = &new.webhook_secret {
        backend = Some(secrets.set(&sink.webhook_key(), w)?);
    }
    let mut list = SinkList::load(paths)?;
    list.sinks.push(sink.clone());
    list.save(paths)?;
    Ok(backend)
}

/// Forgets a session: a `session.forgotten` goes to the outbox (sinks that take
/// `forget` pass it on), then every earlier event of it and its record go.
/// Returns how many events were removed; 0 when the session is not known.
pub fn forget_session(paths: &StatePaths, harness: &str, id: &str) -> Result<usize, SinkError> {
    let adapter =
        adapters::lookup(harness).ok_or_else(|| SinkError::UnknownHarness(harness.to_string()))?;
    let mut ob = crate::pipeline::outbox::Outbox::open(&paths.outbox())?;
    let tx = ob.begin()?;
    if !tx.session_known(harness, id)? {
        return Ok(0);
    }
    // A forget carries the ids it needs (the envelope's session id) and nothing
    // the person asked to forget: no title, folder, repo, model or machine.
    let mut record = crate::pipeline::session::SessionRecord {
        started: true,
        ..Default::default()
    };
    let forgotten = protocol::EventData::SessionForgotten(protocol::Empty {});
    crate::pipeline::append::append_events(
        &tx,
        adapter,
        id,
        &mut record,
        "forget",
        protocol::time::now_ms(),
        vec![forgotten],
    )?;
    let last = tx.last_rowid()?;
    let removed = tx.delete_session_before(harness, id, last)?;
    tx.commit()?;
    Ok(removed)
}

/// `sink test`: the receiver's discovery, a round trip (a heartbeat of a test
/// session, then its `session.forgotten`, posted as the daemon posts, with
/// the sink's token and signature: the receiver keeps nothing of it), and a
/// dry run of the filter over the last events (what this sink would get).
/// Nothing goes into the outbox. `(ok, lines)`.
pub async fn test_report(paths: &StatePaths, id: &str) -> Result<(bool, Vec<String>), SinkError> {
    let p = paths.clone();
    let list = crate::runtime::blocking(move || SinkList::load(&p)).await?;
    let sink = list
        .sinks
        .iter()
        .find(|s| s.id == id)
        .ok_or_else(|| SinkError::NoSuch(id.to_string()))?;
    let mut lines = vec![sink.describe()];
    let mut ok = true;
    let (p, s) = (paths.clone(), sink.clone());
    let (unreadable, token_in) = crate::runtime::blocking(move || {
        let secrets = Secrets::new(&p.root);
        let token_in = s
            .has_token
            .then(|| secrets.backend_of(&s.token_key()))
            .flatten();
        (s.unreadable_secrets(&secrets), token_in)
    })
    .await;
    for what in unreadable {
        ok = false;
        lines.push(format!(
            "its {what} cannot be read (a locked keychain?); nothing is sent until it can"
        ));
    }
    if let Some(b) = token_in {
        lines.push(format!("its token is kept in {b}"));
    }
    if let Target::Http { url } = &sink.target {
        match http::discover(url).await {
            Ok(d) => {
                lines.push(format!(
                    "discovery: events at {}, max tier {}, batches of {} events / {} bytes, capabilities {}",
                    http::shown_url(&d.events),
                    d.max_tier,
                    d.max_events,
                    d.max_bytes,
                    d.capabilities.join(", ")
                ));
                let (said, took) = round_trip(paths, sink, &d.events).await;
                ok &= took;
                lines.push(said);
            }
            Err(e) => {
                ok = false;
                lines.push(format!("discovery failed: {e}"));
            }
        }
    }
    let (p, s) = (paths.clone(), sink.clone());
    lines.extend(crate::runtime::blocking(move || dry_run(&p, &s)).await?);
    Ok((ok, lines))
}

/// Posts a heartbeat of a throwaway session and its `session.forgotten` to
/// `events_url` as the daemon would (the sink's token and webhook secret),
/// and says how the receiver took them. True when it took both.
async fn round_trip(paths: &StatePaths, sink: &Sink, events_url: &str) -> (String, bool) {
    let (p, s) = (paths.clone(), sink.clone());
    let (token, webhook, machine) = crate::runtime::blocking(move || {
        let secrets = Secrets::new(&p.root);
        (
            s.has_token.then(|| secrets.get(&s.token_key())).flatten(),
            s.has_webhook_secret
                .then(|| secrets.get(&s.webhook_key()))
                .flatten(),
            // The name in force: while config.json does not read, the
            // last that did (the hostname until one did), said in the log.
            crate::state::machine_name::MachineName::follow(&p).get(),
        )
    })
    .await;
    let session = format!(
        "sessionpipe-test-{}",
        ulid::Ulid::generate().to_string().to_lowercase()
    );
    let block = protocol::SessionBlock {
        machine: Some(machine),
        ..Default::default()
    };
    let stamp = crate::pipeline::session::Stamp {
        harness: "sessionpipe",
        harness_event: None,
        version: Some(env!("CARGO_PKG_VERSION")),
        session_id: &session,
        block: &block,
        time_ms: protocol::time::now_ms(),
    };
    let lines: Vec<String> = [
        protocol::EventData::SessionHeartbeat(protocol::Empty {}),
        protocol::EventData::SessionForgotten(protocol::Empty {}),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, e)| {
        let env = crate::pipeline::session::envelope(&stamp, i as u64 + 1, e);
        serde_json::to_string(&env).expect("an envelope serialises")
    })
    .collect();
    let answer = http::send(
        &http::client(),
        events_url,
        token.as_deref(),
        webhook.as_deref(),
        http::batch_body(&lines),
    )
    .await;
    match answer {
        http::BatchVerdict::Accepted { rejected, .. } if rejected.is_empty() => (
            format!(
                "round trip: the receiver took a heartbeat of {session} and its session.forgotten"
            ),
            true,
        ),
        http::BatchVerdict::Accepted { rejected, .. } => (
            format!(
                "round trip: the receiver refused {} of the 2 test events: {}",
                rejected.len(),
                rejected
                    .iter()
                    .map(|(_, why)| why.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            false,
        ),
        http::BatchVerdict::Unauthorized => (
            format!(
                "round trip: 401, the token was refused (`sessionpipe sink token {} --token-stdin` gives it a new one)",
                sink.id
            ),
            false,
        ),
        other => (format!("round trip failed: {}", other.describe()), false),
    }
}

/// What the last events would look like at the sink's tier, as lines.
fn dry_run(paths: &StatePaths, sink: &Sink) -> Result<Vec<String>, SinkError> {
    let mut lines = Vec::new();
    if let Some(ob) = crate::pipeline::outbox::Outbox::open_readonly(&paths.outbox())? {
        let last = ob.newest_rowid()?;
        let rows = ob.events_after((last - 200).max(0), 200)?;
        let home = spool::paths::home_dir().map(|h| h.to_string_lossy().into_owned());
        let mut kinds: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
        for r in &rows {
            let Ok(env) = serde_json::from_str::<protocol::Envelope>(&r.envelope) else {
                continue;
            };
            let passes =
                crate::pipeline::privacy::filter(&env, sink.tier, sink.pii, home.as_deref())
                    .is_some();
            let k = kinds.entry(env.kind).or_default();
            k.0 += usize::from(passes);
            k.1 += 1;
        }
        if rows.is_empty() {
            lines.push(
                "no events yet: run an agent, then test again to see what it would get".into(),
            );
        } else {
            lines.push(format!(
                "of the last {} events, at tier {} this sink would get:",
                rows.len(),
                sink.tier
            ));
        }
        for (kind, (sent, all)) in kinds {
            lines.push(format!("  {kind}: {sent} of {all}"));
        }
    }
    Ok(lines)
}

/// What `set_secrets` did.
#[derive(Clone, Debug)]
pub struct Renewed {
    pub sink: Sink,
    pub kept_in: Backend,
    /// The pause it lifted (a refused token's); none when it was sending.
    pub unpaused: Option<String>,
}

/// `sink token`: replaces an HTTP sink's bearer token (and its webhook
/// secret when one is given), keeping its place in the outbox, and lifts a
/// pause a refused token caused; the running daemon restarts the sink on it.
pub fn set_secrets(
    paths: &StatePaths,
    id: &str,
    token: &str,
    webhook_secret: Option<&str>,
) -> Result<Renewed, SinkError> {
    if let Some(w) = webhook_secret
        && http::webhook_headers(w, "").is_none()
    {
        return Err(SinkError::WebhookSecret);
    }
    let mut list = SinkList::load(paths)?;
    let sink = list
        .sinks
        .iter_mut()
        .find(|s| s.id == id)
        .ok_or_else(|| SinkError::NoSuch(id.to_string()))?;
    if !matches!(sink.target, Target::Http { .. }) {
        return Err(SinkError::NoSecrets(id.to_string()));
    }
    let secrets = Secrets::new(&paths.root);
    let kept_in = secrets.set(&sink.token_key(), token)?;
    if let Some(w) = webhook_secret {
        secrets.set(&sink.webhook_key(), w)?;
        sink.has_webhook_secret = true;
    }
    sink.has_token = true;
    sink.secrets_at = Some(protocol::time::now_ms());
    // Only a pause the token explains: a protocol the receiver does not speak
    // or another origin stays until the person fixes that.
    let unpaused = sink
        .paused
        .take_if(|p| p.starts_with("401") || p.contains("cannot be read"));
    let sink = sink.clone();
    list.save(paths)?;
    Ok(Renewed {
        sink,
        kept_in,
        unpaused,
    })
}

/// Where `replay` starts.
#[derive(Clone, Debug)]
pub enum ReplayFrom {
    /// Everything the outbox still holds.
    Start,
    /// The first event stored at or after this time (RFC 3339).
    Since(String),
}

/// What `replay` did for one sink.
#[derive(Clone, Debug, Serialize)]
pub struct Replayed {
    pub sink: String,
    /// Events the sink gets again (an upper bound: some are filtered out
    /// at its tier).
    pub events: i64,
    /// A running daemon sends them (else the next one does).
    pub by_daemon: bool,
}

/// `replay`: sends the outbox again to `ids` (every sink when empty) from
/// `from`. With a daemon running, each sink's task is restarted on the
/// request (it rewinds its own cursor, so no batch in flight moves it
/// past); else the cursor is put back here.
pub fn replay(
    paths: &StatePaths,
    ids: &[String],
    from: &ReplayFrom,
) -> Result<Vec<Replayed>, SinkError> {
    let mut list = SinkList::load(paths)?;
    for id in ids {
        if !list.sinks.iter().any(|s| &s.id == id) {
            return Err(SinkError::NoSuch(id.clone()));
        }
    }
    let mut ob = crate::pipeline::outbox::Outbox::open(&paths.outbox())?;
    let rowid = match from {
        ReplayFrom::Start => 0,
        ReplayFrom::Since(t) => ob.rowid_before_time(t)?,
    };
    let events = ob.count_after(rowid)?.count;
    let daemon = crate::state::lock::holder(paths)
        .is_some_and(|h| h.mode == crate::state::lock::Mode::Daemon);
    let mut done = Vec::new();
    for s in list
        .sinks
        .iter_mut()
        .filter(|s| ids.is_empty() || ids.contains(&s.id))
    {
        if daemon {
            s.replay_from = Some(rowid);
        } else {
            ob.rewind_sink_cursor(&s.id, rowid)?;
        }
        done.push(Replayed {
            sink: s.id.clone(),
            events,
            by_daemon: daemon,
        });
    }
    if daemon {
        list.save(paths)?;
    }
    Ok(done)
}

/// Removes a sink, its token and its cursor.
pub fn remove(paths: &StatePaths, id: &str) -> Result<Sink, SinkError> {
    let mut list = SinkList::load(paths)?;
    let i = list
        .sinks
        .iter()
        .position(|s| s.id == id)
        .ok_or_else(|| SinkError::NoSuch(id.to_string()))?;
    let sink = list.sinks.remove(i);
    list.save(paths)?;
    let secrets = Secrets::new(&paths.root);
    secrets.delete(&sink.token_key());
    secrets.delete(&sink.webhook_key());
    if let Ok(mut ob) = crate::pipeline::outbox::Outbox::open(&paths.outbox()) {
        let _ = ob.forget_cursor(id);
    }
    Ok(sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(parse_target("stdout").unwrap(), Target::Stdout);
        assert_eq!(
            parse_target("file:/tmp/x.jsonl").unwrap(),
            Target::File {
                path: "/tmp/x.jsonl".into()
            }
        );
        assert!(parse_target("file:relative.jsonl").is_err());
        assert!(parse_target("https://r.example/").is_ok());
        assert!(parse_target("http://127.0.0.1:9000").is_ok());
        assert!(parse_target("http://localhost:9000").is_ok());
        assert!(parse_target("http://[::1]:9000").is_ok());
        let plain = parse_target("http://r.example").unwrap_err();
        assert!(plain.to_string().contains("HTTPS is required"), "{plain}");
        assert!(parse_target("ftp://x").is_err());
        assert!(parse_target("not a url").is_err());
    }
}
