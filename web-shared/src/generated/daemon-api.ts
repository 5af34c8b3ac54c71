// The daemon's local API (core/src/daemon/api/), as the Rust types that
// serialize its answers declare it: generated, do not edit. After changing
// one of them: SESSIONPIPE_WRITE_REFERENCE=1 cargo test -p sessionpipe-core --lib daemon::api::typescript

/**
 * Every refused or failed call: `{"error": "..."}`, in words the UI shows.
 */
export type ApiErrorBody = { error: string, };

/**
 * `GET /api/overview`: the live board.
 */
export type Overview = { machine: string, 
/**
 * The daemon running now, when one is.
 */
daemon: DaemonView | null, 
/**
 * Those needing the person first, then working, then done; newest first.
 */
sessions: Array<SessionView>, 
/**
 * The open attentions of the sessions needing the person.
 */
approvals: Array<Approval>, 
/**
 * Why `config.json` does not read, while it does not: the daemon runs
 * on the last settings that read.
 */
config_problem: string | null, };

/**
 * An attention in the approvals list, and the session it belongs to.
 */
export type Approval = { 
/**
 * `harness:id`
 */
session: string, title: string, cwd: string | null, harness: string, 
/**
 * Local approvals are on and this prompt's hook waits now: it can be answered here.
 */
answerable: boolean, attention_id: string, agent_id: string | null, 
/**
 * `permission`, `question`, `elicitation`, `idle`, `error`.
 */
kind?: string, tool?: string, message?: string, time?: string, };

export type DaemonView = { pid: number, mode: string, };

/**
 * A session on the board: who, where, its state at a glance, its attentions.
 */
export type SessionView = { 
/**
 * `harness:id`
 */
key: string, harness: string, id: string, 
/**
 * The session's title, else its folder, else the id's first 8 characters.
 */
title: string, cwd: string | null, repo: string | null, branch: string | null, model: string | null, url: string | null, state: Glance, ended: boolean, last_ms: number, first_ms: number | null, age_s: number, attentions: Array<Attention>, 
/**
 * The account its latest `limits.observed` named, when one did.
 */
account: SessionAccount | null, 
/**
 * A Stop ends its running turn now, through the harness's own interrupt
 * (control's `local::cancellable`: the hello's `cancels`).
 */
can_stop: boolean, };

/**
 * An open attention. `kind`, `tool`, `message` and `time` come from its
 * `attention.needed` event when the daemon found it (needing the person).
 */
export type Attention = { attention_id: string, agent_id: string | null, 
/**
 * `permission`, `question`, `elicitation`, `idle`, `error`.
 */
kind?: string, tool?: string, message?: string, time?: string, };

/**
 * A session's state at a glance: it needs the person (an attention is open), an
 * agent is working (a turn runs), or neither. Ordered most urgent first.
 */
export type Glance = "needs_you" | "working" | "done";

/**
 * A session's account on the board: its email when the pool knows it, and
 * the fullest window it reported (the one it burns most).
 */
export type SessionAccount = { id: string, email: string | null, window: AccountWindow | null, 
/**
 * The window reached `pool_alert_percent`, where the pool asks for attention.
 */
near: boolean, };

export type AccountWindow = { id: string, used_percent: number, resets_at: string | null, 
/**
 * When the last hour's pace runs it out, where that is before it resets.
 */
runs_out_at: string | null, };

/**
 * One event on the wire: exactly these members, in this order.
 */
export type Envelope = { protocol: number, id: string, type: string, time: string, tier: number, harness: HarnessRef, session: SessionBlock, privacy: Privacy, data: { [key in string]: JsonValue }, };

export type HarnessRef = { name: string, version?: string | null, event?: string | null, };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

export type Privacy = { rulesets: Array<string>, pii: boolean, };

/**
 * What the sender knows of a session. Receivers merge these with COALESCE, so an
 * absent field never blanks a known one; `merge` does the same on this side.
 */
export type SessionBlock = { id: string, seq: number, machine?: string | null, cwd?: string | null, repo?: string | null, branch?: string | null, model?: string | null, title?: string | null, title_source?: TitleSource | null, url?: string | null, account_id?: string | null, parent_id?: string | null, attended?: boolean | null, delegated_by?: string | null, };

/**
 * Where a title came from; a better source is never replaced by a worse one.
 */
export type TitleSource = "first-ask" | "harness" | "custom";

/**
 * What a session changed, turn by turn (oldest first).
 */
export type Changes = { turns: Array<TurnChanges>, 
/**
 * Some edits' text was left out (`TEXT_BUDGET`).
 */
cut: boolean, 
/**
 * Older events were not read (`READ_EVENTS_MAX`, `READ_BYTES_MAX`):
 * the turns are numbered from the first one read.
 */
older: boolean, };

/**
 * The files one turn changed.
 */
export type TurnChanges = { 
/**
 * 1 for the first turn read, 0 for changes before any turn started.
 */
turn: number, 
/**
 * When the turn started.
 */
at: string | null, files: Array<FileChanges>, 
/**
 * Edit tool calls whose input did not reach this side (the tier hides
 * it) or could not be read: their file may not be listed.
 */
unseen: number, };

/**
 * One file and its edits in a turn, oldest first.
 */
export type FileChanges = { 
/**
 * Relative to the session's folder where it is inside it.
 */
path: string, 
/**
 * Empty: the file changed, and how is not here (`files.changed` alone).
 */
edits: Array<Edit>, };

/**
 * One edit of one file, as its tool's input says.
 */
export type Edit = { 
/**
 * The tool's name, as the harness gave it.
 */
tool: string, kind: EditKind, old: string, new: string, 
/**
 * Where a patch moved the file to.
 */
moved_to?: string, 
/**
 * Left out to keep one answer small: the edit happened, its text is
 * not in this answer.
 */
cut: boolean, };

/**
 * What one edit did to its file.
 */
export type EditKind = "replace" | "write" | "delete";

/**
 * `GET /api/harnesses` (and `POST /api/harnesses/{name}`): a harness's
 * report (each file's state), the note, its line, and what else it is.
 */
export type HarnessView = { note: string | null, line: string, 
/**
 * It reports through hooks (an adapter of its own); false: an ACP agent only.
 */
hooks: boolean, 
/**
 * Set when it is an ACP agent installed here.
 */
acp: AcpAgent | null, harness: string, summary: string, files: Array<FileReport>, 
/**
 * Not found: where it was looked for.
 */
looked_for?: Array<string>, };

/**
 * An ACP agent of the table installed on this machine.
 */
export type AcpAgent = { product: string, 
/**
 * The program found: the file `SESSIONPIPE_ACP_<HARNESS>` names, or its CLI on PATH.
 */
program: string, 
/**
 * Control drives it over ACP; false: with its own headless driver.
 */
over_acp: boolean, };

export type FileReport = { path: string, 
/**
 * The optional entry this line is about (`status-line`); none for the hooks.
 */
entry?: string, } & ({ "state": "current" } | { "state": "outdated", "reason": string } | { "state": "missing" } | { "state": "skipped", "reason": string } | { "state": "inactive", "reason": string } | { "state": "kept", "reason": string } | { "state": "installed" } | { "state": "would_install" } | { "state": "removed" } | { "state": "would_remove" } | { "state": "not_installed" });

/**
 * `GET /api/offers`.
 */
export type Offers = { offers: Array<HarnessOffer>, };

/**
 * A harness found here whose hooks are not installed and that the person
 * has not declined.
 */
export type HarnessOffer = { harness: string, 
/**
 * Where its hooks would go.
 */
files: Array<string>, };

/**
 * `POST /api/offers/{name}/decline`.
 */
export type Declined = { declined: string, };

/**
 * `GET /api/sinks`: a sink as `Sink::shown` shows it, and how far behind it is.
 */
export type SinkView = { 
/**
 * Events not yet delivered: exact up to `tally::EXACT_UP_TO`, then an estimate.
 */
behind: number, behind_exact: boolean, line: string, id: string, 
/**
 * The tier the person chose, lowered to the receiver's `max_tier`.
 */
tier: number, pii: boolean, discovery: Discovery | null, 
/**
 * Why the sink stopped sending (401, a protocol it does not speak); the
 * person fixes it (`sink token` for a refused token).
 */
paused: string | null, 
/**
 * The last error seen, for `status` (cleared by a success).
 */
last_error: string | null, added_at: number, 
/**
 * Added with a bearer token / a webhook secret: delivery waits for them
 * (a keychain still locked) rather than sending without them.
 */
has_token: boolean, has_webhook_secret: boolean, 
/**
 * When `sink token` last replaced its secrets (ms): a running sink is
 * restarted on it, so its next batch bears them.
 */
secrets_at?: number | null, 
/**
 * `replay` asked a running daemon to send again everything after this
 * rowid: the sink's task puts its cursor there when it starts, then
 * clears this.
 */
replay_from?: number | null, } & ({ "kind": "http", url: string, } | { "kind": "file", path: string, } | { "kind": "stdout" });

/**
 * What discovery (`/.well-known/sessionpipe`) said of a receiver.
 */
export type Discovery = { events: string, max_tier: number, max_events: number, max_bytes: number, capabilities: Array<string>, 
/**
 * When it was read (epoch ms); re-read at most daily.
 */
read_at: number, };

/**
 * `POST /api/sinks`.
 */
export type SinkAdded = { added: string, id: string, 
/**
 * The tier the sink got (capped by what its receiver allows).
 */
tier: number, };

/**
 * `DELETE /api/sinks/{id}` and `DELETE /api/control/keys/{id}`.
 */
export type Removed = { removed: string, };

/**
 * `POST /api/sinks/{id}/test`.
 */
export type SinkTest = { ok: boolean, lines: Array<string>, };

export type Config = { 
/**
 * Read transcripts into `turn.transcript` events (tier 2). Off by default:
 * turned on when a destination takes tier 2, or by the person for local use.
 */
transcripts: boolean, 
/**
 * The machine name events carry instead of the hostname.
 */
machine: string | null, 
/**
 * The highest tier a desktop notification's text may show (0: only what
 * kind of attention; 1: the tool and its message). Default 1.
 */
notify_tier: number | null, 
/**
 * Notify when a turn ends while the person is away. Off by default.
 */
notify_turn_end: boolean, 
/**
 * Harnesses whose notifications are muted.
 */
muted: Array<string>, 
/**
 * Notifications paused from the tray (until turned back on).
 */
notifications_paused: boolean, 
/**
 * Start the app at login (the app's autostart follows this).
 */
open_at_login: boolean, 
/**
 * Control: the folders a command may act in (absolute); a session whose
 * folder is not inside one of them is refused `folder`.
 */
control_folders: Array<string>, 
/**
 * Control: the mode the hello reports (`safe`, `auto`, `inherit`).
 */
control_mode: string | null, 
/**
 * Answer permission prompts from the tray and its notifications (off by
 * default; beyond the protocol, the person at this machine).
 */
local_approvals: boolean, 
/**
 * Control: a start whose folder is inside a git repository runs in a
 * new `git worktree` of its own, on a branch `sessionpipe/<short id>`
 * (`sessionpipe worktrees list|prune`). Off by default.
 */
control_worktrees: boolean, 
/**
 * Control: sessions a receiver may have started running at once (2),
 * and started in any hour (10); beyond either, `start_limit`.
 */
control_starts_running: number | null, control_starts_hourly: number | null, 
/**
 * Control: headless processes (starts, resumes, forks) at once (3); more
 * wait their turn.
 */
control_runs_at_once: number | null, 
/**
 * Control: the longest a headless run may take, minutes (30); past it
 * the run is ended and acked `failed`.
 */
control_run_minutes: number | null, 
/**
 * Control over ACP: how long an agent process the daemon started is
 * kept after its last turn, for a next prompt (10 minutes).
 */
acp_idle_minutes: number | null, 
/**
 * Control over ACP: the longest an agent may take to answer its start,
 * a new session or a reopened one (120 s; a turn's bound is
 * `control_run_minutes`).
 */
acp_answer_seconds: number | null, 
/**
 * The app runs a receiver with its phone page on this computer (loopback
 * only, `http://localhost:PORT`), which `sessionpipe connect` pairs with.
 * Off by default: a listener nobody asked for is not opened.
 */
local_receiver: boolean, 
/**
 * That receiver's port (`LOCAL_RECEIVER_PORT` when unset): fixed, since
 * the page's origin (and the day keys a browser keeps for it) includes it.
 */
local_receiver_port: number | null, 
/**
 * Ask claude.ai for the names it gives sessions the Claude app started
 * (ADAPTERS.md, "the one exception"). Off by default: it reads Claude
 * Code's sign-in for each read, so only `sessionpipe titles on` (or the
 * Titles page) turns it on, and that also re-sends the last 30 days.
 */
remote_titles: boolean, 
/**
 * The account pool: a window of a live session's account this full
 * (percent, 90 when unset) notifies and asks for attention.
 */
pool_alert_percent: number | null, 
/**
 * Warn once when an account's limit window will run out before it
 * resets, at the last hour's pace (`pace`; on when unset).
 */
pace_alerts: boolean | null, 
/**
 * Days an event is kept in the outbox once every sink has taken it
 * (`RETENTION_DAYS` when unset or 0); an event some sink has not taken
 * is kept whatever its age. Session records are never pruned.
 */
retention_days: number | null, 
/**
 * Prices by model, in USD per million tokens, over the table sessionpipe
 * ships (`core/prices.json`): `{"my-model": {"input": 3, "output": 15,
 * "cache_read": 0.3, "cache_write": 3.75}}`. `usage` counts cost by them;
 * a model priced nowhere is counted in tokens alone.
 */
prices: { [key in string]: ModelPrice }, };

/**
 * A model's prices, in USD per million tokens. A cache price left out is
 * unknown: tokens of that kind then leave the model without a cost, never
 * guessed at another price.
 */
export type ModelPrice = { input: number, output: number, cache_read?: number, cache_write?: number, };

/**
 * What `GET` and `PUT /api/settings` put over the stored settings
 * (`Config`): the tier and the retention in effect, and the hostname (what
 * an empty machine name falls back to).
 */
export type EffectiveSettings = { notify_tier: number, retention_days: number, hostname: string, };

/** `GET` and `PUT /api/settings`: the stored settings with those in effect over them. */
export type Settings = Omit<Config, keyof EffectiveSettings> & EffectiveSettings;

/**
 * `GET /api/titles`.
 */
export type TitlesState = { remote_titles: boolean, };

/**
 * `PUT /api/titles`: and what turning them on re-sent (null: turned off).
 */
export type TitlesSet = { remote_titles: boolean, resent: Resent | null, };

/**
 * What a re-send did.
 */
export type Resent = { 
/**
 * Sessions with a claude.ai link that were asked about.
 */
asked: number, 
/**
 * Of those, the ones claude.ai had a name for.
 */
named: number, 
/**
 * Of those, the ones sent again under that name.
 */
resent: number, };

/**
 * `GET /api/progress`: the long work running now on this machine, whichever
 * process runs it; null when none.
 */
export type ProgressView = { progress: Filed | null, };

/**
 * What `progress.json` holds: the step, who writes it and since when.
 */
export type Filed = { 
/**
 * The writer's process id (for people: staleness is the lock's).
 */
pid: number, 
/**
 * When the work started and when the file was last written (RFC 3339).
 */
started_at: string, updated_at: string, what: Work, stage: Stage, done: number, total: number, 
/**
 * The harness being read, or whose session was just sent.
 */
harness?: string | null, };

/**
 * How far into it.
 */
export type Stage = "reading" | "sending";

/**
 * Which long work.
 */
export type Work = "backfill" | "titles";

/**
 * `POST /api/ui-token`: the new page's address.
 */
export type UiToken = { url: string, page: string, };

/**
 * `GET /api/pool`, and the base of every pool call's answer.
 */
export type PoolState = { on: boolean, 
/**
 * The listener's port on 127.0.0.1, while on.
 */
port: number | null, 
/**
 * The windows and sessions are the running daemon's (it has heard them).
 */
live: boolean, accounts: Array<AccountView>, };

/**
 * What `pool status` and the hello show of one account.
 */
export type AccountView = { id: string, email?: string | null, enabled: boolean, 
/**
 * `allowed` · `allowed_warning` · `rejected` · `unknown` (nothing heard
 * yet) · `sign_in_again` · `no_sign_in` · `expired`.
 */
status: string, 
/**
 * When a `rejected` account is tried again (RFC 3339).
 */
until?: string | null, windows: Array<LimitWindow>, 
/**
 * When the access token expires (RFC 3339).
 */
expires_at?: string | null, 
/**
 * The last refresh's failure, while the token still works.
 */
refresh_error?: string | null, 
/**
 * The sessions pinned to it, newest first.
 */
sessions: Array<string>, };

export type LimitWindow = { id: string, window_minutes?: number | null, used_percent: number, resets_at?: string | null, };

/**
 * `POST /api/pool/on|off`: what each Claude Code settings file got.
 */
export type PoolSwitched = { settings: Array<Switched>, on: boolean, 
/**
 * The listener's port on 127.0.0.1, while on.
 */
port: number | null, 
/**
 * The windows and sessions are the running daemon's (it has heard them).
 */
live: boolean, accounts: Array<AccountView>, };

/**
 * What one settings file got.
 */
export type Switched = { 
/**
 * The file, `~`-relative.
 */
file: string, 
/**
 * `on`, `current`, `off`, `absent`, or `skipped: <why>`.
 */
outcome: string, };

/**
 * `POST /api/pool/import`.
 */
export type PoolImported = { added: Array<Added>, on: boolean, 
/**
 * The listener's port on 127.0.0.1, while on.
 */
port: number | null, 
/**
 * The windows and sessions are the running daemon's (it has heard them).
 */
live: boolean, accounts: Array<AccountView>, };

/**
 * One account `add` put in the pool.
 */
export type Added = { id: string, email?: string, 
/**
 * Where it came from (a config dir), for `--import`.
 */
from?: string, 
/**
 * It was in the pool already; its sign-in was replaced.
 */
again: boolean, };

/**
 * `DELETE /api/pool/accounts/{id}`.
 */
export type PoolRemoved = { removed: string, on: boolean, 
/**
 * The listener's port on 127.0.0.1, while on.
 */
port: number | null, 
/**
 * The windows and sessions are the running daemon's (it has heard them).
 */
live: boolean, accounts: Array<AccountView>, };

/**
 * `GET /api/control`: the Pairing page.
 */
export type ControlView = { receivers: Array<ControlReceiver>, folders: Array<string>, 
/**
 * `safe`, `auto` or `inherit` (`control mode`); null: not set.
 */
mode: string | null, local_approvals: boolean, 
/**
 * Started sessions in a git repository run in a worktree of their own
 * (`control worktrees on`; `PUT /api/settings {control_worktrees}`).
 */
worktrees: boolean, 
/**
 * The pairing the UI started, while it runs and after it ended.
 */
pairing: PairingState | null, };

/**
 * A receiver this machine is paired with.
 */
export type ControlReceiver = { 
/**
 * Its origin: its name here.
 */
receiver: string, 
/**
 * The machine id the receiver gave this machine (`m_…`).
 */
machine: string, 
/**
 * Who approved the pairing, in the receiver's words.
 */
account: string | null, polling: boolean, 
/**
 * Why polling stopped, when it did.
 */
stopped: string | null, keys: Array<ControlKey>, 
/**
 * The tier of this machine's sink for it (what its page sees); null
 * without one.
 */
tier: number | null, };

/**
 * A passkey a receiver's pairing enrolled: only its id, never key material.
 */
export type ControlKey = { id: string, 
/**
 * `ES256` or `RS256`.
 */
alg: string, name: string | null, };

/**
 * The pairing the UI started: while it waits for the approval, and how it
 * ended. `POST /api/control/pair` answers the first.
 */
export type PairingState = { "state": "waiting", url: string, check: string, } | { "state": "paired", receiver: string, account: string | null, sink_added: boolean, 
/**
 * The tier of the machine's sink for it, now.
 */
tier: number | null, } | { "state": "failed", error: string, };

/**
 * `POST /api/control/off`.
 */
export type Unpaired = { unpaired: string, };

/**
 * `POST /api/approvals`: the answer went to the waiting hook.
 */
export type ApprovalAnswered = { answered: string, 
/**
 * `allow` or `deny`.
 */
decision: string, };

/**
 * `POST /api/sessions/{harness}/{id}/stop`: how the Stop went, as a
 * verified `cancel` of the session would be acked.
 */
export type Stopped = { 
/**
 * `delivered`, `unsupported` or `failed`.
 */
outcome: string, 
/**
 * The rung that took it (`acp`, `sdk`, `api`).
 */
mode: string | null, 
/**
 * Why not, for any other outcome.
 */
detail: string | null, };

/**
 * `sessionpipe usage --json` and `GET /api/usage`.
 */
export type UsageReport = { by: By, 
/**
 * The span, epoch ms: from `since`, up to now.
 */
since_ms: number, until_ms: number, 
/**
 * Days start at midnight this many minutes from UTC.
 */
tz_offset_minutes: number, 
/**
 * Newest first for days; most costly (then most tokens) first otherwise.
 */
rows: Array<UsageRow>, total: UsageRow, prices: PriceSource, note: string, };

/**
 * What a report is grouped by.
 */
export type By = "day" | "session" | "harness" | "account" | "model";

/**
 * Where prices come from, for the person to read beside a cost.
 */
export type PriceSource = { 
/**
 * The public list the shipped table was made from.
 */
source: string, 
/**
 * The day it was made (`YYYY-MM-DD`).
 */
date: string, 
/**
 * Models priced in config.json's `prices` (over the shipped table).
 */
overridden: Array<string>, };

/**
 * One row of a report: its key (a day `YYYY-MM-DD`, `harness:session`, a
 * harness, an account, a model), its tokens and its cost.
 */
export type UsageRow = { key: string, tokens: Tokens, 
/**
 * The cost of its priced models at API list prices (`null`: none is).
 */
api_equivalent_usd: number | null, 
/**
 * Models in the row with no price: their tokens are counted, not their cost.
 */
unpriced: Array<string>, 
/**
 * The newest activity in the row (epoch ms, to the quarter hour).
 */
last_ms: number, models: Array<ModelUsage>, };

/**
 * One model's tokens in a row, and their cost.
 */
export type ModelUsage = { 
/**
 * As the harness named it (`""`: none named).
 */
model: string, tokens: Tokens, 
/**
 * At API list prices; `null`: the model has no price.
 */
api_equivalent_usd: number | null, 
/**
 * The price table's name it was priced under.
 */
priced_as: string | null, };

/**
 * Token counts, summed (`responses`: how many model responses they are).
 */
export type Tokens = { responses: number, input: number, output: number, cache_read: number, cache_write: number, };

/**
 * `GET /api/usage/days`: each day's tokens per harness, account and model
 * in the span, at API list prices where a model has one.
 */
export type UsageDays = { since_ms: number, until_ms: number, 
/**
 * Days start at midnight this many minutes from UTC.
 */
tz_offset_minutes: number, 
/**
 * Days in order; within a day, by harness, account, model.
 */
cells: Array<DayCell>, prices: PriceSource, 
/**
 * What the cost is (API list prices, not what a subscription paid).
 */
note: string, };

/**
 * One day's tokens of one harness, account and model (`GET /api/usage/days`).
 */
export type DayCell = { 
/**
 * `YYYY-MM-DD`, in the asked time zone.
 */
day: string, harness: string, 
/**
 * `""`: not known.
 */
account: string, model: string, tokens: Tokens, 
/**
 * At API list prices; `null`: the model has no price.
 */
api_equivalent_usd: number | null, };

/**
 * `GET /api/usage/sessions`: the sessions that used most in the span.
 */
export type UsageSessions = { since_ms: number, until_ms: number, 
/**
 * Most costly first, then most tokens.
 */
sessions: Array<UsageSession>, prices: PriceSource, note: string, };

/**
 * A session's usage in the span.
 */
export type UsageSession = { harness: string, id: string, title: string | null, account: string | null, 
/**
 * The usage row (`key` is `harness:id`), per model.
 */
usage: UsageRow, };

/**
 * `GET /api/usage/limits`: every account's limit windows whose period runs
 * now, as the daemon last heard them (the pool's and plain hooks' alike).
 */
export type UsageLimits = { windows: Array<LimitStanding>, 
/**
 * Warnings of a window running out before it resets are on (`pace_alerts`).
 */
alerts: boolean, };

/**
 * One window of one account as it stands.
 */
export type LimitStanding = { harness: string, 
/**
 * The account's id, where the harness names one.
 */
account: string | null, 
/**
 * The pool's email for it, where the pool knows the account.
 */
email: string | null, 
/**
 * `five_hour`, `seven_day`, ... as the harness names it.
 */
window: string, used_percent: number, resets_at: string, 
/**
 * When it was last heard.
 */
seen_at: string, 
/**
 * When the last hour's pace runs it out, where that is before it resets.
 */
runs_out_at: string | null, };
