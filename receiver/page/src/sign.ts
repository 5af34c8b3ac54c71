// Signing on this device, in exactly the protocol's formats (API.md):
//
// - a day key (ECDSA P-256, made non-extractable, kept in IndexedDB with its
//   grant), vouched for once a day by a passkey assertion over SHA-256 of the
//   grant string;
// - a command string, `JSON.stringify` of an object whose members are added in
//   the protocol's order (v, t, machine, kind, session, the kind's members,
//   note, nonce, iat), signed by the day key (`csig`, raw r‖s) or confirmed by
//   a fresh passkey assertion over SHA-256 of it;
// - the pairing proof, an assertion over SHA-256("sessionpipe.pair:" + machine + ":" + code).
//
// The receiver never sees a private key; it only carries what is made here.

import { b64url, randomB64url, sha256, utf8 } from "./bytes";
import { assert } from "./passkey";
import type { Assertion, CommandPost, FileEntry, Grant, Key } from "./types";

const DB_NAME = "sessionpipe";
const STORE = "keys";
const DAY = "day";
const HOUR_MS = 60 * 60 * 1000;
const GRANT_MS = 24 * HOUR_MS;
/** A grant this close to its end is renewed before signing. */
const RENEW_MS = HOUR_MS;
const MAX_CMD_CHARS = 48_000;

/** Who signs: this device's passkey (its credential id) for the receiver's rp id. */
export interface Signer {
  credential: string;
  rpId: string;
}

interface DayKey {
  pair: CryptoKeyPair;
  /** The day key's SPKI DER, base64url. */
  pub: string;
  grant: Grant;
  iat: number;
  exp: number;
  rp: string;
}

// ---------------------------------------------------------------------------
// IndexedDB: one record, the day key and its grant. Without IndexedDB (some
// private windows) the key lives in memory and a reload asks for a new grant.

let memory: DayKey | null = null;
let loaded = false;

function openDb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error("IndexedDB would not open."));
  });
}

async function withStore<T>(mode: IDBTransactionMode, run: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await openDb();
  try {
    return await new Promise<T>((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const request = run(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(request.result);
      tx.onerror = () => reject(tx.error ?? new Error("IndexedDB failed."));
      tx.onabort = () => reject(tx.error ?? new Error("IndexedDB gave up."));
    });
  } finally {
    db.close();
  }
}

function isDayKey(v: unknown): v is DayKey {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Partial<DayKey>;
  return (
    typeof o.pub === "string" &&
    typeof o.exp === "number" &&
    typeof o.iat === "number" &&
    typeof o.rp === "string" &&
    typeof o.grant === "object" &&
    o.pair?.privateKey instanceof CryptoKey
  );
}

/** Reads the kept day key once (call early: a passkey prompt later must follow a tap quickly). */
export async function loadDayKey(): Promise<void> {
  if (loaded) return;
  loaded = true;
  try {
    const kept = await withStore<unknown>("readonly", (s) => s.get(DAY));
    if (isDayKey(kept)) memory = kept;
  } catch {
    // no IndexedDB: memory only
  }
}

async function keep(day: DayKey): Promise<void> {
  memory = day;
  try {
    await withStore("readwrite", (s) => s.put(day, DAY));
  } catch {
    // no IndexedDB: memory only
  }
}

/** Forgets the day key (signing out): the next command asks for a passkey again. */
export async function forgetDayKey(): Promise<void> {
  memory = null;
  try {
    await withStore("readwrite", (s) => s.delete(DAY));
  } catch {
    // nothing kept
  }
}

function usable(day: DayKey | null, signer: Signer, now: number): day is DayKey {
  return day !== null && day.grant.cred === signer.credential && day.rp === signer.rpId && day.exp - now > RENEW_MS && day.iat - 5 * 60_000 <= now;
}

/** Whether the next grant-signed command needs a passkey prompt first. */
export function needsGrant(signer: Signer): boolean {
  return !usable(memory, signer, Date.now());
}

/** When the kept grant ends (ms), or null. */
export function grantEnds(signer: Signer): number | null {
  return usable(memory, signer, Date.now()) ? memory.exp : null;
}

/**
 * A day key with a grant good for at least another hour: the kept one, or a
 * new key and one passkey prompt. The grant string's members are exactly
 * v, t, pub, iat, exp, rp in that order.
 */
export async function ensureGrant(signer: Signer): Promise<DayKey> {
  await loadDayKey();
  if (usable(memory, signer, Date.now())) return memory;
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
  const pub = b64url(await crypto.subtle.exportKey("spki", pair.publicKey));
  const iat = Date.now();
  const exp = iat + GRANT_MS;
  const str = JSON.stringify({ v: 1, t: "sessionpipe.grant", pub, iat, exp, rp: signer.rpId });
  const assertion = await assert(await sha256(str), signer.rpId, signer.credential);
  const day: DayKey = { pair, pub, grant: { str, ...assertion }, iat, exp, rp: signer.rpId };
  await keep(day);
  return day;
}

// ---------------------------------------------------------------------------
// Commands.

export type Decision = "allow" | "deny";

export type CommandBody =
  | { kind: "prompt"; text: string }
  | { kind: "start"; text: string; cwd: string; level?: string; model?: string; files?: FileEntry[] }
  | { kind: "permission.answer"; for: string; decision: Decision }
  | { kind: "cancel" }
  | { kind: "key.add"; key: Key; name: string };

/** The kind's own members, in the protocol's order, absent ones left out. */
function members(body: CommandBody): Record<string, unknown> {
  switch (body.kind) {
    case "prompt":
      return { text: body.text };
    case "start": {
      const out: Record<string, unknown> = { text: body.text, cwd: body.cwd };
      if (body.level !== undefined) out["level"] = body.level;
      if (body.model !== undefined) out["model"] = body.model;
      if (body.files !== undefined && body.files.length > 0) {
        out["files"] = body.files.map((f) => ({ name: f.name, type: f.type, size: f.size, sha256: f.sha256 }));
      }
      return out;
    }
    case "permission.answer":
      return { for: body.for, decision: body.decision };
    case "cancel":
      return {};
    case "key.add":
      return { key: { id: body.key.id, alg: body.key.alg, spki: body.key.spki }, name: body.name };
  }
}

/**
 * The exact command string: `{"v":1,"t":"sessionpipe.control","machine",
 * "kind","session", <kind's members>, "note"?, "nonce", "iat"}`, no spaces.
 */
export function commandString(machine: string, session: string, body: CommandBody, note?: string): string {
  const cmd: Record<string, unknown> = { v: 1, t: "sessionpipe.control", machine, kind: body.kind, session };
  Object.assign(cmd, members(body));
  if (note !== undefined && note !== "") cmd["note"] = note;
  cmd["nonce"] = randomB64url(24);
  cmd["iat"] = Date.now();
  const text = JSON.stringify(cmd);
  if (text.length > MAX_CMD_CHARS) throw new Error(`That is too long to send (${text.length} characters; at most ${MAX_CMD_CHARS}).`);
  return text;
}

/**
 * A command signed with the day key (one passkey prompt first when the grant
 * is missing or ends within the hour): `{machine, cmd, csig, grant}`.
 */
export async function signCommand(signer: Signer, machine: string, session: string, body: CommandBody): Promise<CommandPost> {
  const day = await ensureGrant(signer);
  const cmd = commandString(machine, session, body);
  const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, day.pair.privateKey, utf8(cmd));
  return { machine, cmd, csig: b64url(sig), grant: day.grant };
}

/** A command confirmed by a fresh passkey assertion over SHA-256(cmd): `{machine, cmd, confirm}`. */
export async function confirmCommand(signer: Signer, machine: string, session: string, body: CommandBody): Promise<CommandPost> {
  const cmd = commandString(machine, session, body);
  const confirm = await assert(await sha256(cmd), signer.rpId, signer.credential);
  return { machine, cmd, confirm };
}

/** The pairing proof: an assertion over SHA-256("sessionpipe.pair:" + machine + ":" + code). */
export async function pairProof(signer: Signer, machine: string, code: string): Promise<Assertion> {
  return assert(await sha256(`sessionpipe.pair:${machine}:${code}`), signer.rpId, signer.credential);
}
