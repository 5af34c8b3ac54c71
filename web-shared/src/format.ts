// Words both pages (the UI and the receiver's phone page) say the same way:
// a harness's name (the protocol crate's table, generated), a session's state,
// and the small helpers their event lines are made of. Each page's own
// format.ts keeps the words that differ (how long ago, how an attention or an
// event reads there) and re-exports these.

import { HARNESS_NAMES } from "./generated/harness-names";

/** `claude-code` → `Claude Code`, as the tray and notifications name it; an unknown name is shown as it is. */
export function harnessName(name: string): string {
  return HARNESS_NAMES[name] ?? name;
}

export const STATE_WORDS = {
  needs_you: "Needs you",
  working: "Working",
  done: "Done",
} as const;

/** A non-empty string, else undefined (for reading an event's `data`). */
export function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** A finite number, else undefined. */
export function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** One line of at most `max` characters: whitespace runs as one space, `…` where cut. */
export function cut(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** `850 ms`, `2.5 s`, `3 min`. */
export function duration(ms: number | undefined): string | undefined {
  if (ms === undefined) return undefined;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

/** The parts that say something, joined with ` · `. */
export function join(...parts: (string | undefined | false)[]): string {
  return parts.filter((p): p is string => typeof p === "string" && p !== "").join(" · ");
}

/** How a turn ended (`turn.ended`'s `reason`). */
export const TURN_END: Readonly<Record<string, string>> = { stop: "finished", interrupt: "interrupted", error: "stopped on an error" };

/** What the agent asks, in one line: the message, else the tool, joined by `sep`. */
export function attentionLine(a: { tool?: string | null | undefined; message?: string | null | undefined }, sep: string): string {
  const tool = a.tool ?? "";
  const msg = a.message ?? "";
  // Claude Code's message already starts with the tool (`Bash rm -rf build`).
  if (msg !== "" && tool !== "" && msg.startsWith(tool)) return msg;
  return [tool, msg].filter((p) => p !== "").join(sep);
}

/** `limits.observed`'s windows in a few characters: `five_hour 93%, seven_day 41%`. */
export function limitsLine(windows: unknown): string {
  const list = Array.isArray(windows) ? windows : [];
  return list
    .map((w: unknown) => {
      const o = (typeof w === "object" && w !== null ? w : {}) as Record<string, unknown>;
      return `${str(o["id"]) ?? "?"} ${num(o["used_percent"])?.toFixed(0) ?? "?"}%`;
    })
    .join(", ");
}

const WINDOW_NAMES: Record<string, string> = {
  five_hour: "5h",
  seven_day: "week",
  spend_limit: "spend",
};

/** A limits window's short name, as Claude Code's status line shows it:
 * `five_hour` → `5h`, `seven_day` → `week`, `seven_day_opus` → `week (opus)`. */
export function windowName(id: string): string {
  const known = WINDOW_NAMES[id];
  if (known !== undefined) return known;
  if (id.startsWith("seven_day_")) return `week (${id.slice("seven_day_".length).replace(/_/g, " ")})`;
  return id.replace(/_/g, " ");
}

/** A limit window as the hello's `limits` says it (the machine's pace). */
export interface LimitStanding {
  harness: string;
  account?: string | null;
  email?: string | null;
  window: string;
  used_percent: number;
  resets_at: string;
  runs_out_at?: string | null;
}

/** A window in one line, `clock` saying the times: `5h 63% · resets 15:00 ·
 * runs out around 14:20 at this pace`. */
export function standingLine(w: LimitStanding, clock: (iso: string) => string): string {
  const parts = [`${windowName(w.window)} ${Math.round(w.used_percent)}%`, `resets ${clock(w.resets_at)}`];
  if (w.runs_out_at) parts.push(`runs out around ${clock(w.runs_out_at)} at this pace`);
  return parts.join(" · ");
}
