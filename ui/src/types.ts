// The shapes of the daemon's local API (core/src/daemon/api/). What it
// answers with is generated from the Rust types that serialize it
// (`@sessionpipe/web-shared/daemon-api`) and only renamed here where the UI
// says it otherwise; what the UI sends (request bodies) and the words a
// string member holds are the UI's own, below.

import type {
  AccountView,
  Added,
  Attention as AttentionShape,
  Config,
  ControlKey as ControlKeyShape,
  ControlReceiver as ControlReceiverShape,
  ControlView as ControlViewShape,
  Envelope,
  FileReport as FileReportShape,
  Filed,
  Glance,
  HarnessView,
  Removed,
  Resent,
  Switched,
} from "@sessionpipe/web-shared/daemon-api";

export type {
  AccountWindow,
  AcpAgent,
  DayCell,
  LimitStanding,
  Changes,
  Stopped,
  ApiErrorBody,
  Approval,
  HarnessOffer,
  Discovery,
  LimitWindow,
  Overview,
  PairingState,
  PoolImported,
  PoolRemoved,
  PoolState,
  PoolSwitched,
  ProgressView,
  SessionAccount,
  SessionBlock,
  SessionView,
  Settings,
  SinkAdded,
  SinkTest,
  SinkView,
  TitlesSet,
  TitlesState,
  Tokens,
  Unpaired,
  UsageDays,
  UsageLimits,
  UsageSession,
  UsageSessions,
} from "@sessionpipe/web-shared/daemon-api";

/** The long work running now (a backfill, remote titles' re-send): `progress.json`. */
export type LongWork = Filed;

export type SessionState = Glance;

/** One stored event (PROTOCOL-NOTES §1), as `GET /api/sessions/{h}/{id}/events` lists them. */
export type EventEnvelope = Envelope;

/** An open attention. `kind`, `tool`, `message` and `time` come from its `attention.needed` event when the daemon found it. */
export type Attention = AttentionShape;

export type AttentionKind = "permission" | "question" | "elicitation" | "idle" | "error";

/** One file of a harness: its state and, for outdated, skipped, inactive or kept, why. */
export type FileReport = FileReportShape;

export type FileStateWord = FileReportShape["state"];

/**
 * `GET /api/harnesses` (and `POST /api/harnesses/{name}`): one per harness with
 * hooks, then (GET only) one per installed ACP agent that has none.
 */
export type HarnessReport = HarnessView;

export type SinkRemoved = Removed;
export type KeyRemoved = Removed;

/** What turning remote titles on did to the last 30 days' sessions. */
export type TitlesResent = Resent;

/** An account in the pool, as `sessionpipe pool status --json` shows it (no credential). */
export type PoolAccount = AccountView;
export type PoolSetting = Switched;
export type PoolAdded = Added;

/** The stored settings (config.json), as `PUT /api/settings` answers. */
export type StoredSettings = Config;

// What the UI sends, and the words it reads in a string member.

/** `POST /api/approvals` body's decision. */
export type ApprovalDecision = "allow" | "deny";

/** `POST /api/approvals`: the answer went to the waiting hook. */
export interface ApprovalAnswered {
  answered: string;
  decision: ApprovalDecision;
}

/** `POST /api/sinks` body. */
export interface NewSink {
  target: string;
  tier: number;
  pii: boolean;
  token?: string;
  webhook_secret?: string;
}

/** The keys `PUT /api/settings` may change (only those sent change). */
export type SettingsChange = Partial<
  Pick<
    StoredSettings,
    "machine" | "notify_tier" | "notify_turn_end" | "muted" | "notifications_paused" | "open_at_login" | "retention_days" | "transcripts"
  >
>;

/** The control modes (`control mode`): what runs unattended. */
export type ControlMode = "safe" | "auto" | "inherit";

/** A passkey a receiver's pairing enrolled; only its id, never key material. */
export type ControlKey = ControlKeyShape & { alg: "ES256" | "RS256" };

/** A receiver this machine is paired with. */
export type ControlReceiver = ControlReceiverShape;

/** `GET /api/control`. */
export type ControlView = ControlViewShape;

/** `POST /api/control/pair` body. */
export interface PairRequest {
  receiver: string;
  folders?: string[];
  mode?: ControlMode;
  name?: string;
  /** The tier 0–3 of the sink an open pairing hands over (default 1). */
  tier?: number;
}

/** `POST /api/control/pair`: the receiver answered; the pairing goes on in the daemon. */
export interface PairWaiting {
  state: "waiting";
  url: string;
  check: string;
}

/** The control settings in config.json, as `GET`/`PUT /api/settings` show them. */
export type ControlSettings = Pick<StoredSettings, "control_folders" | "control_mode" | "local_approvals" | "control_worktrees">;

/** The control keys `PUT /api/settings` may change (only those sent change). */
export type ControlSettingsChange = Partial<ControlSettings>;
