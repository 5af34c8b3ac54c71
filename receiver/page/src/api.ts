// Every call the page makes to the receiver, in one module (API.md): a
// mismatch with the receiver is fixed here and nowhere else. Same origin, the
// `sp_session` cookie; every POST/DELETE also sends `x-sessionpipe-page: 1`.

import type { Approved, Queued } from "@sessionpipe/web-shared/page-api";
import type {
  Board,
  Ceremony,
  CommandPost,
  CommandStatus,
  Config,
  Invite,
  Key,
  Assertion,
  Me,
  Pairing,
  SessionPage,
  Changes,
  SignedIn,
  Tier,
  Uploaded,
} from "./types";

const BASE = "/app/api";

/** A failed call: the API's `reason` code and `detail` words, or what went wrong on the way. */
export class ApiError extends Error {
  /** The HTTP status; 0 when the receiver could not be reached. */
  readonly status: number;
  /** The API's `reason` code (`signed_out`, `bad_csig`, …), or "". */
  readonly reason: string;
  /** The API's own `detail` words, or "" when it gave none. */
  readonly detail: string;

  constructor(status: number, reason: string, message: string, detail = "") {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.reason = reason;
    this.detail = detail;
  }

  get signedOut(): boolean {
    return this.status === 401 && (this.reason === "signed_out" || this.reason === "");
  }
}

type Method = "GET" | "POST" | "DELETE";

/** Called on a 401 `signed_out` from any call (the page then shows sign-in). */
let onSignedOut: (e: ApiError) => void = () => {};

export function whenSignedOut(handler: (e: ApiError) => void): void {
  onSignedOut = handler;
}

interface Raw {
  body: BodyInit;
  type: string;
  headers?: Record<string, string>;
}

async function call<T>(method: Method, path: string, body?: unknown, raw?: Raw): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const init: RequestInit = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (method !== "GET") {
    headers["x-sessionpipe-page"] = "1";
    if (raw !== undefined) {
      headers["content-type"] = raw.type;
      Object.assign(headers, raw.headers);
      init.body = raw.body;
    } else {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body ?? {});
    }
  }
  let response: Response;
  try {
    response = await fetch(BASE + path, init);
  } catch {
    throw new ApiError(0, "unreachable", "Can't reach the receiver. Check the connection, then try again.");
  }
  const text = await response.text();
  if (!response.ok) {
    const error = toError(response.status, text);
    if (error.signedOut) onSignedOut(error);
    throw error;
  }
  if (text.trim() === "") return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(response.status, "not_json", "The receiver answered with something that is not JSON.");
  }
}

function toError(status: number, text: string): ApiError {
  let reason = "";
  let detail = "";
  let given = "";
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null) {
      const o = parsed as Record<string, unknown>;
      if (typeof o["reason"] === "string") reason = o["reason"];
      if (typeof o["detail"] === "string") detail = given = o["detail"];
    }
  } catch {
    // not JSON: the status says it
  }
  if (detail === "" && status === 401 && (reason === "signed_out" || reason === "")) detail = "You are signed out.";
  if (detail === "" && reason !== "") detail = `The receiver refused it (${reason}).`;
  if (detail === "") detail = status >= 500 ? `The receiver had a problem (HTTP ${status}). Try again in a moment.` : `The receiver refused it (HTTP ${status}).`;
  return new ApiError(status, reason, detail, given);
}

/** What to say for any failure, in words. */
export function describeError(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

function seg(text: string): string {
  return encodeURIComponent(text);
}

/** `harness:id` in a path: each part escaped, the colon kept. */
function sessionPath(key: string): string {
  const at = key.indexOf(":");
  return at < 0 ? seg(key) : `${seg(key.slice(0, at))}:${seg(key.slice(at + 1))}`;
}

export const api = {
  // Discovery and account.
  config: (): Promise<Config> => call("GET", "/config"),
  me: (): Promise<Me> => call("GET", "/me"),
  registerStart: (name: string, invite: string | null): Promise<Ceremony> =>
    call("POST", "/register/start", invite === null ? { name } : { name, invite }),
  registerFinish: (ceremony: string, device: string, credential: unknown): Promise<SignedIn> =>
    call("POST", "/register/finish", { ceremony, device, credential }),
  signinStart: (): Promise<Ceremony> => call("POST", "/signin/start", {}),
  signinFinish: (ceremony: string, credential: unknown): Promise<SignedIn> => call("POST", "/signin/finish", { ceremony, credential }),
  signout: (): Promise<void> => call("POST", "/signout", {}),
  invite: (device: boolean): Promise<Invite> => call("POST", "/invites", { device }),

  // The board.
  board: (): Promise<Board> => call("GET", "/board"),
  session: (key: string): Promise<SessionPage> => call("GET", `/sessions/${sessionPath(key)}`),
  changes: (key: string): Promise<Changes> => call("GET", `/sessions/${sessionPath(key)}/changes`),

  // Control.
  pairing: (code: string): Promise<Pairing> => call("GET", `/pair/${seg(code)}`),
  approvePairing: (code: string, key: Key, proof: Assertion): Promise<Approved> =>
    call("POST", `/pair/${seg(code)}/approve`, { key: { id: key.id, alg: key.alg, spki: key.spki }, proof }),
  command: (post: CommandPost): Promise<Queued> => call("POST", "/commands", post),
  commandStatus: (id: string): Promise<CommandStatus> => call("GET", `/commands/${seg(id)}`),
  /** The file's bytes as they are; `x-file-name` percent-encoded (a header holds only Latin-1). */
  upload: (file: Blob, name: string, type: string): Promise<Uploaded> =>
    call("POST", "/files", undefined, { body: file, type, headers: { "x-file-name": encodeURIComponent(name) } }),

  // Push and notify URLs.
  pushOn: (subscription: PushSubscriptionJSON, tier: Tier): Promise<void> => call("POST", "/push", { subscription, tier }),
  pushOff: (endpoint: string): Promise<void> => call("DELETE", "/push", { endpoint }),
  notifyUrlOn: (url: string, tier: Tier): Promise<void> => call("POST", "/notify-url", { url, tier }),
  notifyUrlOff: (url: string): Promise<void> => call("DELETE", "/notify-url", { url }),
};
