// The receiver's page API (receiver/src/page/, `/app/api/`), as the Rust
// types that serialize its answers declare it: generated, do not edit.
// After changing one of them: SESSIONPIPE_WRITE_REFERENCE=1 cargo test -p sessionpipe-receiver --lib page::typescript

/**
 * `GET /app/api/config`: what the page needs before anyone signs in.
 */
export type Config = { 
/**
 * The passkeys' relying party: the receiver's host.
 */
rp_id: string, rp_name: string, 
/**
 * `open` (anyone may make an account) or `invite`.
 */
registration: string, 
/**
 * Some account exists (the first one registers without an invite).
 */
accounts: boolean, 
/**
 * The VAPID key a push subscription is made with (base64url).
 */
vapid_public_key: string, };

/**
 * `register/start` and `signin/start`: the ceremony's id and the options
 * for `navigator.credentials` (webauthn-rs's, read by the page's `passkey`).
 */
export type Ceremony = { ceremony: string, publicKey: { [key in string]: JsonValue }, };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

/**
 * `register/finish` and `signin/finish`: who signed in, with which passkey.
 */
export type SignedIn = { account: Account, credential: Credential, };

export type Account = { id: string, name: string, created_at: string, };

/**
 * A passkey on the account; `{id, alg, spki}` is exactly the protocol's key.
 */
export type Credential = { id: string, 
/**
 * The device's name, as the person gave it.
 */
name: string, 
/**
 * -7 (ES256) or -257 (RS256).
 */
alg: number, spki: string, added_at: string, used_at: string | null, };

/**
 * `GET /app/api/me`.
 */
export type Me = { account: Account, 
/**
 * The id of the credential this session signed in with.
 */
credential: string, credentials: Array<Credential>, machines: Array<Machine>, };

/**
 * A machine of the account, as the board and `me` list it.
 */
export type Machine = { id: string, name: string, 
/**
 * It polled within two long-polls.
 */
online: boolean, last_poll_at: string | null, 
/**
 * Its last hello, as it sent it (the page reads it as its `Hello`).
 */
hello: JsonValue | null, 
/**
 * The ids of the passkeys it was handed.
 */
keys: Array<string>, };

/**
 * `POST /app/api/invites`.
 */
export type Invite = { code: string, url: string, expires_at: string, };

/**
 * `GET /app/api/board`.
 */
export type Board = { machines: Array<Machine>, sessions: Array<Session>, };

/**
 * A session on the board: the block's members the sender gave (null when
 * none did), its state and its open attention.
 */
export type Session = { 
/**
 * `harness:id`
 */
key: string, harness: string, id: string, 
/**
 * The machine's name the events carry.
 */
machine: string | null, 
/**
 * The paired machine that sent it (its token's, else by name).
 */
machine_id: string | null, state: SessionState, title: string | null, cwd: string | null, model: string | null, repo: string | null, branch: string | null, first_at: string, last_at: string, last_words: string | null, 
/**
 * As the board folded it (`board::fold`).
 */
attention: Attention | null, 
/**
 * What the open attention says, in the words the desktop notification
 * and the Web Push use (`protocol::asked`).
 */
attention_words: AttentionWords | null, 
/**
 * Its machine's last hello lists it in `cancels`: a `cancel` ends its
 * running turn now, through the harness's own interrupt (the page's Stop).
 */
can_stop: boolean, };

/**
 * An open attention, as the board keeps it (`board::fold`).
 */
export type Attention = { id: string, 
/**
 * `permission`, `question`, `elicitation`, `idle`, `error`.
 */
kind: string, tool?: string, message?: string, 
/**
 * The `attention.needed`'s time.
 */
at: string, 
/**
 * The tier it came at (null for one folded before the board kept it).
 */
tier: number | null, };

/**
 * What an attention says.
 */
export type AttentionWords = { 
/**
 * Who asks and for what: `Claude Code wants to run Bash`.
 */
headline: string, 
/**
 * What will run or what is asked, on one line, cut at a word where it
 * can be: `Bash touch made.txt`. Null when the tier hides it or the
 * agent said nothing.
 */
what: string | null, 
/**
 * Where: the session's title and its folder, `Fix the login test ·
 * ~/src/app` (empty when neither is known).
 */
place: string, 
/**
 * For a permission whose tool and command the machine did not send
 * (tier 0): the sentence that says so and where to approve.
 */
hidden: string | null, };

/**
 * Where a session stands (the page's API names it `SessionState`).
 */
export type SessionState = "needs_you" | "working" | "done";

/**
 * `GET /app/api/sessions/{key}`: the session and its last events.
 */
export type SessionPage = { session: Session, events: Array<SessionEvent>, };

/**
 * An event of a timeline: its envelope's members as stored (validated on
 * the way in), and when it arrived here.
 */
export type SessionEvent = { 
/**
 * The session's `seq`.
 */
seq: number, type: string, time: string, arrived_at: string, tier: number, data: { [key in string]: JsonValue }, };

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
 * `GET /app/api/pair/{code}`: a pairing to approve.
 */
export type Pairing = { code: string, machine: string, 
/**
 * The machine's name, as it asked.
 */
name: string, 
/**
 * The six digits the machine shows.
 */
check: string, expires_at: string, 
/**
 * The account's first machine.
 */
first: boolean, status: PairingStatus, };

export type PairingStatus = "pending" | "approved" | "expired";

/**
 * `POST /app/api/pair/{code}/approve`: the machine now paired.
 */
export type Approved = { machine: string, };

/**
 * `POST /app/api/commands`: the command queued for its machine.
 */
export type Queued = { id: string, };

/**
 * `POST /app/api/files`.
 */
export type Uploaded = { sha256: string, size: number, };
