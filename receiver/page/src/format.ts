// Words for what the API says: harness names, ages, times, events, refusals.

import { TURN_END, attentionLine, cut, duration, join, limitsLine, num, str } from "@sessionpipe/web-shared/format";
import type { Session, SessionEvent } from "./types";

export { STATE_WORDS, cut, harnessName } from "@sessionpipe/web-shared/format";

/** Time since `iso`, in a few characters: `just now`, `42 s`, `5 min`, `3 h`, `2 d`. */
export function age(iso: string | null | undefined, now = Date.now()): string {
  if (iso === null || iso === undefined) return "";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const seconds = Math.max(0, (now - t) / 1000);
  if (seconds < 10) return "just now";
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

/** `5 min ago`, `just now`. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  const a = age(iso, now);
  return a === "" || a === "just now" ? a : `${a} ago`;
}

/** Time until `ms`, in words: `in 14 min`, `in 3 h`. */
export function until(ms: number, now = Date.now()): string {
  const minutes = Math.max(0, Math.round((ms - now) / 60_000));
  if (minutes < 60) return `in ${minutes} min`;
  return `in ${Math.round(minutes / 60)} h`;
}

/** A time as the local clock shows it: `14:03`, with the day when not today. */
export function clock(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
  if (d.toDateString() === new Date().toDateString()) return time;
  return `${d.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
}

const KIND_WORDS: Record<string, string> = {
  permission: "Wants permission",
  question: "Has a question",
  elicitation: "Wants some input",
  idle: "Waiting for you",
  error: "Stopped on an error",
};

export function kindWord(kind: string | null | undefined): string {
  if (kind === null || kind === undefined) return "Needs you";
  return KIND_WORDS[kind] ?? kind;
}

/** What an attention asks, in one line: `Bash rm -rf build`. */
export function attentionText(a: Parameters<typeof attentionLine>[0]): string {
  return attentionLine(a, ": ");
}

/** The folder's last part: `~/code/shop` → `shop`. */
export function lastPart(path: string | null | undefined): string {
  if (path === null || path === undefined) return "";
  const parts = path.split(/[\\/]/).filter((p) => p !== "");
  return parts[parts.length - 1] ?? path;
}

/** A session's name: its title, or its folder's last part, or its id. */
export function sessionName(s: Pick<Session, "title" | "cwd" | "id">): string {
  const title = s.title?.trim();
  if (title) return title;
  const folder = lastPart(s.cwd);
  return folder !== "" ? folder : `Session ${s.id.slice(0, 8)}`;
}

const TYPE_WORDS: Record<string, string> = {
  "session.started": "Session started",
  "session.heartbeat": "Still working",
  "session.ended": "Session ended",
  "session.backfill": "Earlier session",
  "session.forgotten": "Forgotten",
  "turn.started": "Turn started",
  "turn.ended": "Turn ended",
  "turn.transcript": "Turn",
  "turn.progress": "Replying",
  "tool.started": "Tool started",
  "tool.ended": "Tool finished",
  "files.changed": "Files changed",
  "attention.needed": "Needs you",
  "attention.cleared": "Answered",
  "subagent.started": "Helper agent started",
  "subagent.ended": "Helper agent finished",
  "context.compacted": "Context compacted",
  "limits.observed": "Usage limits",
  native: "Raw hook",
};

/** An event type in words: `tool.started` → `Tool started`. */
export function typeWord(type: string): string {
  return TYPE_WORDS[type] ?? type;
}

const SOURCE: Record<string, string> = { startup: "new", resume: "resumed", clear: "after a clear", compact: "after compacting", fork: "forked" };
const ENDED: Record<string, string> = { clear: "cleared", logout: "logged out", exit: "exited", other: "" };
const CLEARED: Record<string, string> = { answered: "answered", cancelled: "cancelled", timeout: "timed out", unknown: "no longer waiting" };

/** One line of detail for an event (the words of turns are shown apart: see `turnWords`). */
export function eventDetail(e: SessionEvent): string {
  const d = e.data;
  switch (e.type) {
    case "session.started":
      return SOURCE[str(d["source"]) ?? ""] ?? "";
    case "session.ended":
      return ENDED[str(d["reason"]) ?? ""] ?? str(d["reason"]) ?? "";
    case "session.backfill":
      return join(num(d["turns"]) !== undefined && `${num(d["turns"])} turns`, str(d["last_at"]) !== undefined && `last active ${clock(str(d["last_at"]) ?? "")}`);
    case "turn.started":
      return join(num(d["prompt_chars"]) !== undefined && `a prompt of ${num(d["prompt_chars"])} characters`, str(d["submitted_by"]) !== undefined && `from ${str(d["submitted_by"])}`);
    case "turn.ended":
      return join(TURN_END[str(d["reason"]) ?? ""] ?? str(d["reason"]), duration(num(d["ms"])), str(d["error"]), d["background"] === true && "in the background");
    case "tool.started":
      return str(d["tool"]) ?? "";
    case "tool.ended":
      return join(str(d["tool"]), d["ok"] === false ? "failed" : d["ok"] === true ? "ok" : undefined, duration(num(d["ms"])), str(d["error"]));
    case "files.changed": {
      const paths = Array.isArray(d["paths"]) ? d["paths"].filter((p): p is string => typeof p === "string") : [];
      return cut(paths.join(", "), 200);
    }
    case "attention.needed":
      return join(kindWord(str(d["kind"])), attentionText({ tool: str(d["tool"]) ?? null, message: str(d["message"]) ?? null }));
    case "attention.cleared":
      return CLEARED[str(d["how"]) ?? ""] ?? "";
    case "subagent.started":
    case "subagent.ended":
      return join(str(d["agent_type"]));
    case "context.compacted":
      return str(d["trigger"]) === "manual" ? "asked for" : str(d["trigger"]) === "auto" ? "automatically" : "";
    case "limits.observed":
      return limitsLine(d["windows"]);
    default:
      return "";
  }
}

/** The words of a turn, where the event carries them (tier 2). */
export function turnWords(e: SessionEvent): { user?: string; assistant?: string } {
  if (e.type !== "turn.transcript" && e.type !== "turn.progress") return {};
  const out: { user?: string; assistant?: string } = {};
  const user = str(e.data["user"]);
  const assistant = str(e.data["assistant"]);
  if (user !== undefined) out.user = user;
  if (assistant !== undefined) out.assistant = assistant;
  return out;
}

/** The protocol's refusal codes (and the machine's), in words. */
const REFUSALS: Record<string, string> = {
  malformed: "the command was not well formed",
  not_a_command: "it was not a sessionpipe command",
  wrong_machine: "it was signed for another machine",
  unknown_kind: "that machine doesn't know this kind of command",
  bad_session: "the session's name is not valid",
  bad_fields: "the command carried a field it shouldn't",
  bad_nonce: "the command's random part was not valid",
  too_old: "it was signed too long ago (check this device's clock)",
  future: "it was signed in the future (check this device's clock)",
  unsigned: "it carried no signature",
  untrusted_key: "that machine doesn't trust this device yet (approve a pairing from it, or add this device from a trusted one)",
  bad_assertion: "the passkey's signature did not check out",
  bad_grant: "this device's daily key was not accepted",
  outside_grant: "this device's daily key had run out",
  bad_csig: "the signature did not check out",
  replay: "it had been sent before",
  nonce_store: "the machine could not record it, so it did not run it",
  folder: "that folder is not one the machine allows",
  no_attention: "nothing is waiting for an answer any more",
  no_session: "the machine doesn't have that session",
  start_limit: "the machine is already running as many sessions as it allows",
  mode: "that level is above what the machine allows",
  file: "an attached file could not be fetched or checked",
};

export function refusalWords(code: string | undefined, detail?: string): string {
  const words = code !== undefined ? REFUSALS[code] : undefined;
  if (words !== undefined && detail !== undefined && detail !== "") return `${words} (${detail})`;
  return words ?? detail ?? code ?? "no reason given";
}

/** A start's levels (docs/src/control.md: read · safe · edits · auto): a name, and what it lets the agent do. */
export const LEVEL_NAMES: Record<string, string> = {
  read: "Read only",
  safe: "Safe",
  edits: "Edits",
  auto: "Auto",
};

export const LEVEL_WORDS: Record<string, string> = {
  read: "Looks around and changes nothing.",
  safe: "Works inside the folder; anything else is refused or asked about.",
  edits: "Also changes files in the folder without asking.",
  auto: "The harness decides by itself what it may run.",
};

/** A guess at this device's name from the browser: `iPhone`, `Android phone`, `Mac`… */
export function guessDevice(): string {
  const ua = navigator.userAgent;
  const browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrome\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "";
  let device = "This device";
  if (/iPhone/.test(ua)) device = "iPhone";
  else if (/iPad/.test(ua) || (/Macintosh/.test(ua) && navigator.maxTouchPoints > 1)) device = "iPad";
  else if (/Android/.test(ua)) device = /Mobile/.test(ua) ? "Android phone" : "Android tablet";
  else if (/Macintosh|Mac OS X/.test(ua)) device = "Mac";
  else if (/Windows/.test(ua)) device = "Windows PC";
  else if (/CrOS/.test(ua)) device = "Chromebook";
  else if (/Linux/.test(ua)) device = "Linux computer";
  return browser !== "" && device !== "iPhone" && device !== "iPad" && !device.startsWith("Android") ? `${device} (${browser})` : device;
}
