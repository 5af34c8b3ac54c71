// The shapes the daemon's local API answers with (core/src/api/views.rs).
// Only the members the UI reads are named; the API may send more.

/** `GET /api/overview`: the live board. */
export interface Overview {
  machine: string;
  daemon: { pid: number; mode: string } | null;
  sessions: SessionView[];
  approvals: Approval[];
}

/**
 * `GET /api/progress`: the long work running now on this machine (a backfill,
 * remote titles' re-send), whichever process runs it; null when none.
 */
export interface ProgressView {
  progress: LongWork | null;
}

export interface LongWork {
  what: "backfill" | "titles";
  /** `reading`: `done` of `total` harnesses' files read; `sending`: `done` of `total` sessions. */
  stage: "reading" | "sending";
  done: number;
  total: number;
  /** The harness being read, or whose session was just sent. */
  harness?: string;
  pid: number;
  started_at: string;
  updated_at: string;
}

export type SessionState = "needs_you" | "working" | "done";

export interface SessionView {
  /** `harness:id` */
  key: string;
  harness: string;
  id: string;
  /** The session's title, else its folder, else the id's first 8 characters. */
  title: string;
  cwd: string | null;
  repo: string | null;
  branch: string | null;
  model: string | null;
  url: string | null;
  state: SessionState;
  ended: boolean;
  last_ms: number;
  age_s: number;
  attentions: Attention[];
  /** The account its latest `limits.observed` named, when one did. */
  account?: SessionAccount | null;
}

/** A session's account on the board: its email when the pool knows it, and
 * the fullest window it reported (the one it burns most). */
export interface SessionAccount {
  id: string;
  email: string | null;
  window: { id: string; used_percent: number; resets_at: string | null } | null;
  /** The window reached `pool_alert_percent`, where the pool asks for attention. */
  near: boolean;
}

export type AttentionKind = "permission" | "question" | "elicitation" | "idle" | "error";

/** An open attention. `kind`, `tool`, `message` and `time` come from its
 * `attention.needed` event when the daemon found it. */
export interface Attention {
  attention_id: string;
  agent_id: string | null;
  kind?: AttentionKind | null;
  tool?: string | null;
  message?: string | null;
  time?: string | null;
}

/** An attention in the approvals list: which session it belongs to. */
export interface Approval extends Attention {
  /** `harness:id` */
  session: string;
  title: string;
  /** The session's folder and harness (local approvals). */
  cwd?: string | null;
  harness?: string;
  /** Local approvals are on and this prompt's hook waits now: it can be answered here. */
  answerable?: boolean;
}

/** `POST /api/approvals` body's decision. */
export type ApprovalDecision = "allow" | "deny";

/** `POST /api/approvals`: the answer went to the waiting hook. */
export interface ApprovalAnswered {
  answered: string;
  decision: ApprovalDecision;
}

/** One stored event (PROTOCOL-NOTES §1), as `GET /api/sessions/{h}/{id}/events` lists them. */
export interface EventEnvelope {
  protocol: number;
  id: string;
  type: string;
  time: string;
  tier: number;
  harness: { name: string; version?: string; event?: string };
  session: SessionBlock;
  data: Record<string, unknown>;
}

export interface SessionBlock {
  id: string;
  seq: number;
  machine?: string;
  cwd?: string;
  repo?: string;
  branch?: string;
  model?: string;
  title?: string;
  url?: string;
}

export type FileStateWord =
  | "current"
  | "outdated"
  | "missing"
  | "skipped"
  | "inactive"
  | "kept"
  | "installed"
  | "would_install"
  | "removed"
  | "would_remove"
  | "not_installed";

/** One file of a harness: its state and, for outdated, skipped, inactive or kept, why. */
export interface FileReport {
  path: string;
  /** The optional entry the line is about (`status-line`); absent for the hooks. */
  entry?: string;
  state: FileStateWord;
  reason?: string;
}

/** An ACP agent of the table installed on this machine. */
export interface AcpAgent {
  product: string;
  /** The program found: the file `SESSIONPIPE_ACP_<HARNESS>` names, or its CLI on PATH. */
  program: string;
  /** Control drives it over ACP; false: with its own headless driver. */
  over_acp: boolean;
}

/**
 * `GET /api/harnesses` (and `POST /api/harnesses/{name}`): one per harness with
 * hooks, then (GET only) one per installed ACP agent that has none.
 */
export interface HarnessReport {
  harness: string;
  /**
   * The worst of its files' states in a word; `not found` when a harness with
   * hooks has no files, `no hooks` for an ACP agent without any.
   */
  summary: string;
  files: FileReport[];
  /** Not found: where it was looked for (folders, `cmd` on PATH). */
  looked_for?: string[];
  note: string | null;
  line: string;
  /** It reports through hooks (an adapter of its own); false: an ACP agent only. */
  hooks: boolean;
  /** Set when it is an ACP agent installed here. */
  acp: AcpAgent | null;
}

/** `GET /api/offers`: a harness found here whose hooks are not installed
 * and that the person has not declined. */
export interface HarnessOffer {
  harness: string;
  /** Where its hooks would go. */
  files: string[];
}

/** `GET /api/sinks`: a sink and how far behind it is. */
export interface SinkView {
  id: string;
  kind: "http" | "file" | "stdout";
  url?: string;
  path?: string;
  tier: number;
  pii: boolean;
  discovery: Discovery | null;
  paused: string | null;
  last_error: string | null;
  added_at: number;
  behind: number;
  line: string;
}

export interface Discovery {
  events: string;
  max_tier: number;
  max_events: number;
  max_bytes: number;
  capabilities: string[];
  read_at: number;
}

/** `POST /api/sinks` body. */
export interface NewSink {
  target: string;
  tier: number;
  pii: boolean;
  token?: string;
  webhook_secret?: string;
}

export interface SinkAdded {
  added: string;
  id: string;
  /** The tier the sink got (capped by what its receiver allows). */
  tier: number;
}

export interface SinkRemoved {
  removed: string;
}

export interface SinkTest {
  ok: boolean;
  lines: string[];
}

/** The stored settings (config.json), as `PUT /api/settings` answers. */
export interface StoredSettings {
  transcripts: boolean;
  machine: string | null;
  notify_tier: number | null;
  notify_turn_end: boolean;
  muted: string[];
  notifications_paused: boolean;
  open_at_login: boolean;
  /** Days an event is kept once every destination has it (null or 0: 30). */
  retention_days: number | null;
}

/** `GET /api/settings`: the stored settings, the effective tier and
 * retention, and the hostname. */
export interface Settings extends StoredSettings {
  notify_tier: number;
  retention_days: number;
  hostname: string;
}

/** The keys `PUT /api/settings` may change (only those sent change). */
export type SettingsChange = Partial<
  Pick<
    StoredSettings,
    "machine" | "notify_tier" | "notify_turn_end" | "muted" | "notifications_paused" | "open_at_login" | "retention_days" | "transcripts"
  >
>;

// Remote titles (core/src/daemon/api/views.rs `titles`, `put_titles`).

/** What turning remote titles on did to the last 30 days' sessions. */
export interface TitlesResent {
  /** Sessions with a claude.ai link that were asked about. */
  asked: number;
  /** Of those, the ones claude.ai had a name for. */
  named: number;
  /** Of those, the ones sent again as `session.backfill` under that name. */
  resent: number;
}

/** `GET /api/titles` and `PUT /api/titles`. */
export interface TitlesState {
  remote_titles: boolean;
  /** Only in the answer to turning it on. */
  resent?: TitlesResent | null;
}

// The account pool (core/src/daemon/api/pool.rs): the Pool page.

/** One window of an account's limits (`limits.observed`'s windows). */
export interface LimitWindow {
  /** `five_hour`, `seven_day`, `seven_day_<model>`, … */
  id: string;
  window_minutes?: number;
  /** Percent used (a spend limit can pass 100). */
  used_percent: number;
  /** When it resets (RFC 3339). */
  resets_at?: string;
}

/** An account in the pool, as `sessionpipe pool status --json` shows it (no credential). */
export interface PoolAccount {
  id: string;
  email?: string;
  enabled: boolean;
  /** `allowed` · `allowed_warning` · `rejected` · `unknown` · `sign_in_again` · `no_sign_in` · `expired`. */
  status: string;
  /** When a `rejected` account is tried again (RFC 3339). */
  until?: string;
  windows: LimitWindow[];
  /** When its access token expires (RFC 3339). */
  expires_at?: string;
  /** The last refresh's failure, while the token still works. */
  refresh_error?: string;
  /** The sessions pinned to it, newest first. */
  sessions: string[];
}

/** `GET /api/pool`, and the base of every pool call's answer. */
export interface PoolState {
  on: boolean;
  /** The listener's port on 127.0.0.1, while on. */
  port: number | null;
  /** The windows and sessions are the running daemon's (it has heard them). */
  live: boolean;
  accounts: PoolAccount[];
}

/** `POST /api/pool/on|off`: what each Claude Code settings file got. */
export interface PoolSwitched extends PoolState {
  settings: { file: string; outcome: string }[];
}

/** `POST /api/pool/import`. */
export interface PoolImported extends PoolState {
  added: { id: string; email?: string; from?: string; again: boolean }[];
}

/** `DELETE /api/pool/accounts/{id}`. */
export interface PoolRemoved extends PoolState {
  removed: string;
}

/** Every API error: `{"error": "..."}`. */
export interface ApiErrorBody {
  error: string;
}

// Control (core/src/daemon/api/control.rs): the Pairing page.

/** The control modes (`control mode`): what runs unattended. */
export type ControlMode = "safe" | "auto" | "inherit";

/** A passkey a receiver's pairing enrolled; only its id, never key material. */
export interface ControlKey {
  id: string;
  alg: "ES256" | "RS256";
  name: string | null;
}

/** A receiver this machine is paired with. */
export interface ControlReceiver {
  /** Its origin: its name here. */
  receiver: string;
  /** The machine id the receiver gave this machine (`m_…`). */
  machine: string;
  /** Who approved the pairing, in the receiver's words. */
  account: string | null;
  polling: boolean;
  /** Why polling stopped, when it did. */
  stopped: string | null;
  keys: ControlKey[];
}

/** The pairing the UI started: while it waits for the approval, and how it ended. */
export type PairingState =
  | { state: "waiting"; url: string; check: string }
  | { state: "paired"; receiver: string; account: string | null; sink_added: boolean }
  | { state: "failed"; error: string };

/** `GET /api/control`. */
export interface ControlView {
  receivers: ControlReceiver[];
  folders: string[];
  mode: ControlMode | null;
  local_approvals: boolean;
  pairing: PairingState | null;
}

/** `POST /api/control/pair` body. */
export interface PairRequest {
  receiver: string;
  folders?: string[];
  mode?: ControlMode;
  name?: string;
}

/** `POST /api/control/pair`: the receiver answered; the pairing goes on in the daemon. */
export interface PairWaiting {
  state: "waiting";
  url: string;
  check: string;
}

export interface Unpaired {
  unpaired: string;
}

export interface KeyRemoved {
  removed: string;
}

/** The control settings in config.json, as `GET`/`PUT /api/settings` show them. */
export interface ControlSettings {
  control_folders: string[];
  control_mode: ControlMode | null;
  local_approvals: boolean;
}

/** The control keys `PUT /api/settings` may change (only those sent change). */
export type ControlSettingsChange = Partial<ControlSettings>;
