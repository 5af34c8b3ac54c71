// The shapes of /app/api/ (see API.md). What the receiver answers with is
// generated from the Rust types that serialize it
// (`@sessionpipe/web-shared/page-api`); what a machine sent (its hello) and
// what the page sends (signed commands, a pairing's key and proof) are the
// page's own, below.

import type { Board as BoardShape, Machine as MachineShape, Me as MeShape } from "@sessionpipe/web-shared/page-api";

export type {
  Account,
  Attention,
  Ceremony,
  Changes,
  Config,
  Credential,
  Invite,
  Pairing,
  Session,
  SessionEvent,
  SessionPage,
  SessionState,
  SignedIn,
  Uploaded,
} from "@sessionpipe/web-shared/page-api";

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

import type { LimitStanding } from "@sessionpipe/web-shared/format";

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
  /** The tier this machine's events reach the receiver at (absent: no sink sends here). */
  tier?: number;
  /** The sessions whose running turn a `cancel` ends now (`harness:id`). */
  cancels?: string[];
  /** Each account's limit windows as the machine last heard them, with its pace. */
  limits?: LimitStanding[];
}

/** A machine of the account, its hello read as the machine sends it. */
export type Machine = Omit<MachineShape, "hello"> & { hello: Hello | null };

export type Board = Omit<BoardShape, "machines"> & { machines: Machine[] };

export type Me = Omit<MeShape, "machines"> & { machines: Machine[] };

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

/** A file of a `start`, as signed. */
export interface FileEntry {
  name: string;
  type: string;
  size: number;
  sha256: string;
}

export type Tier = 0 | 1 | 2;
