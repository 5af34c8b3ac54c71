// The shapes of /app/api/ (see API.md). Members the page does not read are
// left out; optional ones are read defensively.

export interface Config {
  /** null when the receiver carries no commands (control is off). */
  rp_id: string | null;
  rp_name: string;
  registration: "open" | "invite";
  accounts: boolean;
  vapid_public_key: string | null;
}

export interface Account {
  id: string;
  name: string;
  created_at: string;
}

/** A passkey on the account; `{id, alg, spki}` is exactly the protocol's key. */
export interface Credential {
  id: string;
  name: string;
  alg: number;
  spki: string;
  added_at: string;
  used_at: string | null;
}

/** The protocol's key: what a machine enrols. */
export interface Key {
  id: string;
  alg: number;
  spki: string;
}

export interface StartOffer {
  levels: string[];
  /** The level a start that names none gets; null: the machine's own settings decide. */
  default: string | null;
  any_model: boolean;
}

/** A machine's last hello (control-hello.json plus ADAPTERS.md's members). */
export interface Hello {
  name?: string;
  harnesses?: string[];
  modes?: string[];
  keys?: string[];
  version?: string;
  folders?: string[];
  mode?: string;
  starts?: Record<string, StartOffer>;
  models?: Record<string, string[]>;
  files?: boolean;
}

export interface Machine {
  id: string;
  name: string;
  online: boolean;
  last_poll_at: string | null;
  hello: Hello | null;
  keys: string[];
}

export interface Me {
  account: Account;
  credentials: Credential[];
  machines: Machine[];
  /** The id of the credential this session signed in with. */
  credential?: string;
}

export type SessionState = "needs_you" | "working" | "done";

export interface Attention {
  id: string;
  kind: string;
  tool: string | null;
  message: string | null;
  at: string;
}

export interface Session {
  key: string;
  harness: string;
  id: string;
  machine: string | null;
  machine_id: string | null;
  state: SessionState;
  title: string | null;
  cwd: string | null;
  model: string | null;
  first_at: string;
  last_at: string;
  last_words: string | null;
  attention: Attention | null;
}

export interface SessionEvent {
  seq: number;
  type: string;
  time: string;
  arrived_at: string;
  tier: number;
  data: Record<string, unknown>;
}

export interface Board {
  machines: Machine[];
  sessions: Session[];
}

export interface SessionPage {
  session: Session;
  events: SessionEvent[];
}

export interface SignedIn {
  account: Account;
  credential: Credential;
}

export interface Invite {
  code: string;
  url: string;
  expires_at: string;
}

export interface Pairing {
  code: string;
  machine: string;
  name: string;
  check: string;
  expires_at: string;
  first: boolean;
  status: "pending" | "approved" | "expired";
}

/** A passkey assertion, as the protocol carries it (all base64url). */
export interface Assertion {
  cred: string;
  ad: string;
  cd: string;
  sig: string;
}

export interface Grant extends Assertion {
  str: string;
}

export interface CommandPost {
  machine: string;
  cmd: string;
  csig?: string;
  grant?: Grant;
  confirm?: Assertion;
}

export type Outcome = "progress" | "taken" | "delivered" | "expired" | "unsupported" | "failed" | "refused";

export interface FinalAck {
  outcome: Outcome;
  code?: string;
  detail?: string;
  reply?: string;
  session?: string;
}

export interface CommandStatus {
  id: string;
  machine: string;
  state: "queued" | "polled" | "taken" | "final" | "expired";
  at: string;
  acks: {
    final: FinalAck | null;
    progress: { seq: number; reply: string } | null;
  };
}

export interface Uploaded {
  sha256: string;
  size: number;
}

/** A file of a `start`, as signed. */
export interface FileEntry {
  name: string;
  type: string;
  size: number;
  sha256: string;
}

export type Tier = 0 | 1 | 2;
