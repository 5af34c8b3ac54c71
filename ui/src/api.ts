// The daemon's local API: every call carries the token as a bearer header.
// The token lives in memory (and sessionStorage, for a reload); it never goes
// into a URL this page builds.

import type {
  ApprovalAnswered,
  Changes,
  ApprovalDecision,
  ControlSettings,
  ControlSettingsChange,
  ControlView,
  EventEnvelope,
  KeyRemoved,
  HarnessOffer,
  HarnessReport,
  NewSink,
  Overview,
  PairRequest,
  PairWaiting,
  PoolImported,
  PoolRemoved,
  PoolState,
  PoolSwitched,
  ProgressView,
  Settings,
  SettingsChange,
  SinkAdded,
  SinkRemoved,
  SinkTest,
  SinkView,
  Stopped,
  TitlesSet,
  TitlesState,
  Unpaired,
  UsageDays,
  UsageLimits,
  UsageSessions,
} from "./types";

/** A failed call, in words: the API's `error`, or what went wrong on the way. */
export class ApiError extends Error {
  /** The HTTP status; 0 when the daemon could not be reached. */
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }

  get unauthorized(): boolean {
    return this.status === 401;
  }
}

type Method = "GET" | "POST" | "PUT" | "DELETE";

export class Api {
  readonly #token: string;
  /** Called on a 401, once per call that got one. */
  readonly #onUnauthorized: (e: ApiError) => void;

  constructor(token: string, onUnauthorized: (e: ApiError) => void) {
    this.#token = token;
    this.#onUnauthorized = onUnauthorized;
  }

  async #call<T>(method: Method, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.#token}` };
    const init: RequestInit = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await fetch(path, init);
    } catch {
      throw new ApiError(
        0,
        "Cannot reach the sessionpipe daemon: it may have stopped. Start it again (the app, or `sessionpipe daemon`), then open the link `sessionpipe ui` prints.",
      );
    }
    const text = await response.text();
    if (!response.ok) {
      const error = new ApiError(response.status, errorText(response.status, text));
      if (error.unauthorized) this.#onUnauthorized(error);
      throw error;
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ApiError(response.status, `The daemon answered ${path} with something that is not JSON.`);
    }
  }

  overview(): Promise<Overview> {
    return this.#call("GET", "/api/overview");
  }

  /** The long work running now (a backfill...), or `{progress: null}`. */
  progress(): Promise<ProgressView> {
    return this.#call("GET", "/api/progress");
  }

  /** The files each turn changed, each edit's text before and after. */
  changes(harness: string, id: string): Promise<Changes> {
    return this.#call("GET", `/api/sessions/${encodeURIComponent(harness)}/${encodeURIComponent(id)}/changes`);
  }

  events(harness: string, id: string, limit = 50): Promise<EventEnvelope[]> {
    const path = `/api/sessions/${encodeURIComponent(harness)}/${encodeURIComponent(id)}/events?limit=${limit}`;
    return this.#call("GET", path);
  }

  harnesses(): Promise<HarnessReport[]> {
    return this.#call("GET", "/api/harnesses");
  }

  offers(): Promise<{ offers: HarnessOffer[] }> {
    return this.#call("GET", "/api/offers");
  }

  declineOffer(name: string): Promise<unknown> {
    return this.#call("POST", `/api/offers/${encodeURIComponent(name)}/decline`);
  }

  setHarness(name: string, installed: boolean): Promise<HarnessReport[]> {
    return this.#call("POST", `/api/harnesses/${encodeURIComponent(name)}`, { installed });
  }

  sinks(): Promise<SinkView[]> {
    return this.#call("GET", "/api/sinks");
  }

  addSink(sink: NewSink): Promise<SinkAdded> {
    return this.#call("POST", "/api/sinks", sink);
  }

  removeSink(id: string): Promise<SinkRemoved> {
    return this.#call("DELETE", `/api/sinks/${encodeURIComponent(id)}`);
  }

  testSink(id: string): Promise<SinkTest> {
    return this.#call("POST", `/api/sinks/${encodeURIComponent(id)}/test`, {});
  }

  settings(): Promise<Settings> {
    return this.#call("GET", "/api/settings");
  }

  putSettings(change: SettingsChange): Promise<Settings> {
    return this.#call("PUT", "/api/settings", change);
  }

  titles(): Promise<TitlesState> {
    return this.#call("GET", "/api/titles");
  }

  /** Turns remote titles on (then the last 30 days are asked about) or off. */
  setTitles(on: boolean): Promise<TitlesSet> {
    return this.#call("PUT", "/api/titles", { on });
  }

  pool(): Promise<PoolState> {
    return this.#call("GET", "/api/pool");
  }

  /** `sessionpipe pool on|off`: only ever the person's click. */
  setPool(on: boolean): Promise<PoolSwitched> {
    return this.#call("POST", on ? "/api/pool/on" : "/api/pool/off", {});
  }

  /** `sessionpipe pool add --import`: copies Claude Code's own sign-in of every config dir. */
  importPool(): Promise<PoolImported> {
    return this.#call("POST", "/api/pool/import", {});
  }

  setPoolAccount(id: string, enabled: boolean): Promise<PoolState> {
    return this.#call("POST", `/api/pool/accounts/${encodeURIComponent(id)}/${enabled ? "enable" : "disable"}`, {});
  }

  removePoolAccount(id: string): Promise<PoolRemoved> {
    return this.#call("DELETE", `/api/pool/accounts/${encodeURIComponent(id)}`);
  }

  /** Each day's tokens and cost per harness, account and model since `since`, days at the page's midnight. */
  usageDays(since: string, tzOffsetMinutes: number): Promise<UsageDays> {
    const q = new URLSearchParams({ since, tz_offset_minutes: String(tzOffsetMinutes) });
    return this.#call("GET", `/api/usage/days?${q.toString()}`);
  }

  /** The sessions that used most since `since`, most costly first. */
  usageSessions(since: string, limit: number): Promise<UsageSessions> {
    const q = new URLSearchParams({ since, limit: String(limit) });
    return this.#call("GET", `/api/usage/sessions?${q.toString()}`);
  }

  /** Every account's limit windows as the daemon last heard them, with their pace. */
  usageLimits(): Promise<UsageLimits> {
    return this.#call("GET", "/api/usage/limits");
  }

  control(): Promise<ControlView> {
    return this.#call("GET", "/api/control");
  }

  /** Answers once the receiver gave the link and digits; poll `control()` to see it end. */
  pair(request: PairRequest): Promise<PairWaiting> {
    return this.#call("POST", "/api/control/pair", request);
  }

  unpair(receiver: string): Promise<Unpaired> {
    return this.#call("POST", "/api/control/off", { receiver });
  }

  removeKey(id: string): Promise<KeyRemoved> {
    return this.#call("DELETE", `/api/control/keys/${encodeURIComponent(id)}`);
  }

  putControlSettings(change: ControlSettingsChange): Promise<Settings & ControlSettings> {
    return this.#call("PUT", "/api/settings", change);
  }

  /** Ends the session's running turn through its harness's own interrupt. */
  stop(harness: string, id: string): Promise<Stopped> {
    return this.#call("POST", `/api/sessions/${encodeURIComponent(harness)}/${encodeURIComponent(id)}/stop`);
  }

  /** A person's answer to a waiting permission prompt (local approvals): only ever their click. */
  answerApproval(session: string, attention: string, decision: ApprovalDecision): Promise<ApprovalAnswered> {
    return this.#call("POST", "/api/approvals", { session, attention, decision });
  }
}

function errorText(status: number, body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === "object" && parsed !== null && "error" in parsed) {
      const error = (parsed as { error: unknown }).error;
      if (typeof error === "string" && error !== "") return error;
    }
  } catch {
    // not JSON: fall through to the text itself
  }
  const trimmed = body.trim();
  if (trimmed !== "" && trimmed.length < 300) return `${trimmed} (HTTP ${status})`;
  return `The daemon answered HTTP ${status}.`;
}

/** What to say for any failure, in words. */
export function describeError(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
