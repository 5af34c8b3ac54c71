//! What the local API answers with, as types: each one is what a handler
//! serializes, and `typescript` declares them (with the library's types they
//! hold: `Config`, `Sink`, `HarnessReport`, `AccountView`...) for the UI,
//! in `web-shared/src/generated/daemon-api.ts`. A field renamed here shows
//! in the UI's build, not at run time.
//!
//! Owns these shapes and nothing else: the handlers (`views`, `pool`,
//! `control`, `mod`'s `new_ui_token`) fill them. The answers still made of
//! JSON are said in `typescript`.

use crate::pipeline::session::Glance;
use crate::pool::{Added, switch::Switched};
use crate::sinks::Sink;
use crate::state::progress::Filed;
use crate::titles::resend::Resent;
use axum::Json;
use harness::install::HarnessReport;
use serde::Serialize;
use serde_json::Value;
use sessionpipe_pool::accounts::AccountView;
use std::path::PathBuf;

/// An answer as the JSON a handler hands axum.
pub fn reply<T: Serialize>(answer: &T) -> Json<Value> {
    Json(serde_json::to_value(answer).expect("an answer serialises"))
}

/// Every refused or failed call: `{"error": "..."}`, in words the UI shows.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ApiErrorBody {
    pub error: String,
}

/// `GET /api/overview`: the live board.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Overview {
    pub machine: String,
    /// The daemon running now, when one is.
    pub daemon: Option<DaemonView>,
    /// Those needing the person first, then working, then done; newest first.
    pub sessions: Vec<SessionView>,
    /// The open attentions of the sessions needing the person.
    pub approvals: Vec<Approval>,
    /// Why `config.json` does not read, while it does not: the daemon runs
    /// on the last settings that read.
    pub config_problem: Option<String>,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DaemonView {
    pub pid: u32,
    pub mode: &'static str,
}

/// A session on the board: who, where, its state at a glance, its attentions.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionView {
    /// `harness:id`
    pub key: String,
    pub harness: String,
    pub id: String,
    /// The session's title, else its folder, else the id's first 8 characters.
    pub title: String,
    pub cwd: Option<String>,
    pub repo: Option<String>,
    pub branch: Option<String>,
    pub model: Option<String>,
    pub url: Option<String>,
    pub state: Glance,
    pub ended: bool,
    pub last_ms: i64,
    pub first_ms: Option<i64>,
    pub age_s: i64,
    pub attentions: Vec<Attention>,
    /// The account its latest `limits.observed` named, when one did.
    pub account: Option<SessionAccount>,
    /// A Stop ends its running turn now, through the harness's own interrupt
    /// (control's `local::cancellable`: the hello's `cancels`).
    pub can_stop: bool,
}

/// An open attention. `kind`, `tool`, `message` and `time` come from its
/// `attention.needed` event when the daemon found it (needing the person).
#[derive(Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Attention {
    pub attention_id: String,
    pub agent_id: Option<String>,
    /// `permission`, `question`, `elicitation`, `idle`, `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub time: Option<String>,
}

/// An attention in the approvals list, and the session it belongs to.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Approval {
    #[serde(flatten)]
    pub attention: Attention,
    /// `harness:id`
    pub session: String,
    pub title: String,
    pub cwd: Option<String>,
    pub harness: String,
    /// Local approvals are on and this prompt's hook waits now: it can be answered here.
    pub answerable: bool,
}

/// A session's account on the board: its email when the pool knows it, and
/// the fullest window it reported (the one it burns most).
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionAccount {
    pub id: String,
    pub email: Option<String>,
    pub window: Option<AccountWindow>,
    /// The window reached `pool_alert_percent`, where the pool asks for attention.
    pub near: bool,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AccountWindow {
    pub id: String,
    pub used_percent: f64,
    pub resets_at: Option<String>,
    /// When the last hour's pace runs it out, where that is before it resets.
    pub runs_out_at: Option<String>,
}

/// `GET /api/harnesses` (and `POST /api/harnesses/{name}`): a harness's
/// report (each file's state), the note, its line, and what else it is.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HarnessView {
    #[serde(flatten)]
    pub report: HarnessReport,
    pub note: Option<&'static str>,
    pub line: String,
    /// It reports through hooks (an adapter of its own); false: an ACP agent only.
    pub hooks: bool,
    /// Set when it is an ACP agent installed here.
    pub acp: Option<AcpAgent>,
}

/// An ACP agent of the table installed on this machine.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AcpAgent {
    pub product: &'static str,
    /// The program found: the file `SESSIONPIPE_ACP_<HARNESS>` names, or its CLI on PATH.
    pub program: PathBuf,
    /// Control drives it over ACP; false: with its own headless driver.
    pub over_acp: bool,
}

/// `GET /api/offers`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Offers {
    pub offers: Vec<HarnessOffer>,
}

/// A harness found here whose hooks are not installed and that the person
/// has not declined.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HarnessOffer {
    pub harness: String,
    /// Where its hooks would go.
    pub files: Vec<String>,
}

/// `POST /api/offers/{name}/decline`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Declined {
    pub declined: String,
}

/// `GET /api/sinks`: a sink as `Sink::shown` shows it, and how far behind it is.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SinkView {
    #[serde(flatten)]
    pub sink: Sink,
    /// Events not yet delivered: exact up to `tally::EXACT_UP_TO`, then an estimate.
    pub behind: i64,
    pub behind_exact: bool,
    pub line: String,
}

/// `POST /api/sinks`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SinkAdded {
    pub added: String,
    pub id: String,
    /// The tier the sink got (capped by what its receiver allows).
    pub tier: u8,
}

/// `DELETE /api/sinks/{id}` and `DELETE /api/control/keys/{id}`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Removed {
    pub removed: String,
}

/// `POST /api/sinks/{id}/test`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SinkTest {
    pub ok: bool,
    pub lines: Vec<String>,
}

/// What `GET` and `PUT /api/settings` put over the stored settings
/// (`Config`): the tier and the retention in effect, and the hostname (what
/// an empty machine name falls back to).
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct EffectiveSettings {
    pub notify_tier: u8,
    pub retention_days: u32,
    pub hostname: String,
}

/// `GET /api/titles`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TitlesState {
    pub remote_titles: bool,
}

/// `PUT /api/titles`: and what turning them on re-sent (null: turned off).
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TitlesSet {
    pub remote_titles: bool,
    pub resent: Option<Resent>,
}

/// `GET /api/progress`: the long work running now on this machine, whichever
/// process runs it; null when none.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ProgressView {
    pub progress: Option<Filed>,
}

/// `POST /api/ui-token`: the new page's address.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UiToken {
    pub url: String,
    pub page: String,
}

/// `GET /api/pool`, and the base of every pool call's answer.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PoolState {
    pub on: bool,
    /// The listener's port on 127.0.0.1, while on.
    pub port: Option<u16>,
    /// The windows and sessions are the running daemon's (it has heard them).
    pub live: bool,
    pub accounts: Vec<AccountView>,
}

/// `POST /api/pool/on|off`: what each Claude Code settings file got.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PoolSwitched {
    #[serde(flatten)]
    pub pool: PoolState,
    pub settings: Vec<Switched>,
}

/// `POST /api/pool/import`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PoolImported {
    #[serde(flatten)]
    pub pool: PoolState,
    pub added: Vec<Added>,
}

/// `DELETE /api/pool/accounts/{id}`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PoolRemoved {
    #[serde(flatten)]
    pub pool: PoolState,
    pub removed: String,
}

/// `GET /api/control`: the Pairing page.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ControlView {
    pub receivers: Vec<ControlReceiver>,
    pub folders: Vec<String>,
    /// `safe`, `auto` or `inherit` (`control mode`); null: not set.
    pub mode: Option<String>,
    pub local_approvals: bool,
    /// Started sessions in a git repository run in a worktree of their own
    /// (`control worktrees on`; `PUT /api/settings {control_worktrees}`).
    pub worktrees: bool,
    /// The pairing the UI started, while it runs and after it ended.
    pub pairing: Option<PairingState>,
}

/// A receiver this machine is paired with.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ControlReceiver {
    /// Its origin: its name here.
    pub receiver: String,
    /// The machine id the receiver gave this machine (`m_…`).
    pub machine: String,
    /// Who approved the pairing, in the receiver's words.
    pub account: Option<String>,
    pub polling: bool,
    /// Why polling stopped, when it did.
    pub stopped: Option<String>,
    pub keys: Vec<ControlKey>,
    /// The tier of this machine's sink for it (what its page sees); null
    /// without one.
    pub tier: Option<u8>,
}

/// A passkey a receiver's pairing enrolled: only its id, never key material.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ControlKey {
    pub id: String,
    /// `ES256` or `RS256`.
    pub alg: &'static str,
    pub name: Option<String>,
}

/// The pairing the UI started: while it waits for the approval, and how it
/// ended. `POST /api/control/pair` answers the first.
#[derive(Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum PairingState {
    Waiting {
        url: String,
        check: String,
    },
    Paired {
        receiver: String,
        account: Option<String>,
        sink_added: bool,
        /// The tier of the machine's sink for it, now.
        tier: Option<u8>,
    },
    Failed {
        error: String,
    },
}

/// `POST /api/control/off`.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Unpaired {
    pub unpaired: String,
}

/// `POST /api/sessions/{harness}/{id}/stop`: how the Stop went, as a
/// verified `cancel` of the session would be acked.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Stopped {
    /// `delivered`, `unsupported` or `failed`.
    pub outcome: String,
    /// The rung that took it (`acp`, `sdk`, `api`).
    pub mode: Option<String>,
    /// Why not, for any other outcome.
    pub detail: Option<String>,
}

/// `POST /api/approvals`: the answer went to the waiting hook.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ApprovalAnswered {
    pub answered: String,
    /// `allow` or `deny`.
    pub decision: String,
}

/// `GET /api/usage/days`: each day's tokens per harness, account and model
/// in the span, at API list prices where a model has one.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UsageDays {
    pub since_ms: i64,
    pub until_ms: i64,
    /// Days start at midnight this many minutes from UTC.
    pub tz_offset_minutes: i32,
    /// Days in order; within a day, by harness, account, model.
    pub cells: Vec<crate::usage::DayCell>,
    pub prices: crate::usage::prices::PriceSource,
    /// What the cost is (API list prices, not what a subscription paid).
    pub note: String,
}

/// `GET /api/usage/limits`: every account's limit windows whose period runs
/// now, as the daemon last heard them (the pool's and plain hooks' alike).
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UsageLimits {
    pub windows: Vec<LimitStanding>,
    /// Warnings of a window running out before it resets are on (`pace_alerts`).
    pub alerts: bool,
}

/// One window of one account as it stands.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LimitStanding {
    pub harness: String,
    /// The account's id, where the harness names one.
    pub account: Option<String>,
    /// The pool's email for it, where the pool knows the account.
    pub email: Option<String>,
    /// `five_hour`, `seven_day`, ... as the harness names it.
    pub window: String,
    pub used_percent: f64,
    pub resets_at: String,
    /// When it was last heard.
    pub seen_at: String,
    /// When the last hour's pace runs it out, where that is before it resets.
    pub runs_out_at: Option<String>,
}

/// `GET /api/usage/sessions`: the sessions that used most in the span.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UsageSessions {
    pub since_ms: i64,
    pub until_ms: i64,
    /// Most costly first, then most tokens.
    pub sessions: Vec<UsageSession>,
    pub prices: crate::usage::prices::PriceSource,
    pub note: String,
}

/// A session's usage in the span.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UsageSession {
    pub harness: String,
    pub id: String,
    pub title: Option<String>,
    pub account: Option<String>,
    /// The usage row (`key` is `harness:id`), per model.
    pub usage: crate::usage::UsageRow,
}
