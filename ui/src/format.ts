// Words for what the API says: harness names, ages, times, event summaries, tiers.

import { TURN_END, attentionLine, cut, duration, join, limitsLine, num, str, windowName } from "@sessionpipe/web-shared/format";

export { windowName };
import type { EventEnvelope, SessionAccount } from "./types";

export { STATE_WORDS, harnessName } from "@sessionpipe/web-shared/format";

/** `3400` → `3 400` (a no-break space between groups of three, as the tray writes it). */
export function grouped(n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, "\u00a0");
}

/** Seconds since, in a few characters: `just now`, `42 s`, `5 min`, `3 h`, `2 d`. */
export function age(seconds: number): string {
  if (seconds < 5) return "just now";
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

/** An event's time as the local clock shows it (`14:03:27`). */
export function clock(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

const KIND_WORDS: Record<string, string> = {
  permission: "Permission",
  question: "Question",
  elicitation: "Input wanted",
  idle: "Waiting",
  error: "Error",
};

export function kindWord(kind: string | null | undefined): string {
  if (kind === null || kind === undefined) return "Attention";
  return KIND_WORDS[kind] ?? kind;
}

/** What an attention asks, in one line: `Bash — Bash rm -rf build`. */
export function attentionText(a: Parameters<typeof attentionLine>[0]): string {
  return attentionLine(a, " — ");
}

/** A session's account in a few characters: `a@x · 5h 93%`. */
export function accountText(a: SessionAccount): string {
  const who = a.email ?? a.id;
  return a.window === null ? who : `${who} · ${windowName(a.window.id)} ${Math.round(a.window.used_percent)}%`;
}

/** A time to come, as the local clock and calendar show it. */
export function when(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
}

/** The tiers (PROTOCOL-NOTES §4): a name and what each adds. */
export const TIERS: readonly { name: string; adds: string }[] = [
  { name: "presence", adds: "ids, states, timing, machine, folder, repo, branch, model, title, link, and the kind of attention" },
  { name: "actions", adds: "also tool names, durations, ok or error, file paths, an attention's tool and message, prompt length, subagents" },
  { name: "conversation", adds: "also each turn's prompt and reply text (redacted)" },
  { name: "full", adds: "also tool input and output, and raw lines" },
];

export function tierName(tier: number): string {
  return TIERS[tier]?.name ?? `tier ${tier}`;
}

/** A short line for a tool's input: its command, file or pattern. */
function inputText(input: unknown): string | undefined {
  if (typeof input === "string") return cut(input, 80);
  if (typeof input !== "object" || input === null) return undefined;
  const o = input as Record<string, unknown>;
  for (const key of ["command", "cmd", "file_path", "path", "pattern", "url", "query", "description"]) {
    const v = str(o[key]);
    if (v !== undefined) return cut(v, 80);
  }
  return undefined;
}

const CLEARED: Record<string, string> = { answered: "answered", cancelled: "cancelled", timeout: "timed out", unknown: "cleared" };

/** One line saying what an event was about. */
export function summary(e: EventEnvelope): string {
  const d = e.data;
  switch (e.type) {
    case "session.started":
      return str(d["source"]) === undefined || str(d["source"]) === "unknown" ? "started" : `started (${str(d["source"])})`;
    case "session.ended":
      return join("ended", str(d["reason"]));
    case "session.backfill":
      return join(num(d["turns"]) !== undefined ? `${num(d["turns"])} turns` : undefined, str(d["last_at"]) && `last ${str(d["last_at"])}`);
    case "turn.started":
      return join(num(d["prompt_chars"]) !== undefined ? `prompt of ${num(d["prompt_chars"])} characters` : undefined, str(d["submitted_by"]));
    case "turn.ended":
      return join(TURN_END[str(d["reason"]) ?? ""] ?? str(d["reason"]), duration(num(d["ms"])), str(d["error"]));
    case "turn.transcript":
      return join(str(d["user"]) && `you: ${cut(str(d["user"]) ?? "", 60)}`, str(d["assistant"]) && `reply: ${cut(str(d["assistant"]) ?? "", 60)}`);
    case "turn.progress":
      return cut(str(d["assistant"]) ?? "", 120);
    case "tool.started":
      return join(str(d["tool"]), inputText(d["input"]));
    case "tool.ended":
      return join(str(d["tool"]), d["ok"] === false ? "failed" : "ok", duration(num(d["ms"])), str(d["error"]));
    case "files.changed": {
      const paths = Array.isArray(d["paths"]) ? d["paths"].filter((p): p is string => typeof p === "string") : [];
      return cut(paths.join(", "), 120);
    }
    case "attention.needed":
      return join(kindWord(str(d["kind"])), attentionText({ tool: str(d["tool"]) ?? null, message: str(d["message"]) ?? null }));
    case "attention.cleared":
      return CLEARED[str(d["how"]) ?? ""] ?? "cleared";
    case "subagent.started":
    case "subagent.ended":
      return join(str(d["agent_type"]), str(d["agent_id"]));
    case "context.compacted":
      return join(str(d["trigger"]));
    case "limits.observed":
      return limitsLine(d["windows"]);
    default:
      return cut(Object.keys(d).join(", "), 80);
  }
}
