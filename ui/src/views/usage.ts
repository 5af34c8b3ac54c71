// Usage: the tokens the agents used and what they would cost at API list
// prices (`GET /api/usage/days`, `/api/usage/sessions`), as a daily chart of
// the span (7, 30 or 90 days, stacked by harness or by account, plain SVG),
// the sessions that used most, and each account's limit windows as meters
// with their pace (`GET /api/usage/limits`). Accounts are named by the
// emails the limits and the pool know. Days start at the page's local
// midnight. Refreshed every 30 s.
//
// It owns this screen's state and only reads. It must not guess a cost: a
// model without a price says so, and every cost is said to be the
// API-equivalent one (for a subscription, usage, not what was paid).

import "./usage.css";
import { ApiError, describeError } from "../api";
import { h, message, patch, prose, uid, type Child } from "@sessionpipe/web-shared/dom";
import { grouped, harnessName, windowName } from "../format";
import { href } from "../route";
import type { DayCell, LimitStanding, PoolState, UsageDays, UsageLimits, UsageSession, UsageSessions } from "../types";
import { refreshing, type Mounted, type ViewContext } from "../view";

const REFRESH_MS = 30_000;
const SPANS = [7, 30, 90] as const;
type Span = (typeof SPANS)[number];
type Stack = "harness" | "account";
const TOP_SESSIONS = 10;
/** Series past this many share one colour and the name "Other". */
const COLOURS = 7;
const DAY_MS = 86_400_000;

const COST_WORDS =
  "Costs are API-equivalent: what the same tokens would cost at API list prices. With a subscription you do not pay per token, so for it this is usage, not what was paid. A model without a price is counted in tokens and says “no price”.";

/** What the page read, each part on its own. */
interface Read {
  /** The days, and the span they were asked for. */
  days: { answer: UsageDays; span: Span } | null;
  sessions: UsageSessions | null;
  pool: PoolState | null;
  limits: UsageLimits | null;
  error: string | null;
}

export function mountUsage(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  let span: Span = 30;
  let stack: Stack = "harness";
  let stopped = false;
  let asked = 0;
  // Kept across redraws (a refresh must not close what the person opened).
  const opened = { table: false };
  const read: Read = { days: null, sessions: null, pool: null, limits: null, error: null };
  const ids = { days: uid("usage-days"), top: uid("usage-top"), windows: uid("usage-windows") };

  const choice = <T extends string | number>(name: string, legend: string, values: readonly T[], label: (v: T) => string, initial: T, pick: (v: T) => void): HTMLElement =>
    h(
      "fieldset",
      { class: "usage-choice" },
      h("legend", null, legend),
      h(
        "div",
        { class: "inline-checks" },
        values.map((v) =>
          h(
            "label",
            { class: "check-inline" },
            h("input", { type: "radio", name, value: String(v), checked: v === initial, onchange: () => pick(v) }),
            label(v),
          ),
        ),
      ),
    );

  const chartArea = h("div", { class: "usage-chart-area" }, h("p", { class: "muted" }, "Reading the usage…"));
  const topArea = h("div", { class: "usage-top-area" }, h("p", { class: "muted" }, "Reading the sessions…"));
  const windowsArea = h("div", { class: "usage-windows-area" }, h("p", { class: "muted" }, "Reading the windows…"));
  root.replaceChildren(
    h(
      "section",
      { class: "view usage", "aria-labelledby": "usage-h", "data-usage": "" },
      h("h1", { id: "usage-h", tabindex: "-1" }, "Usage"),
      h(
        "p",
        { class: "lead" },
        "The tokens your agents used, read from the files each harness writes on this machine, and what they would cost at API list prices. Nothing here leaves this machine.",
      ),
      h(
        "div",
        { class: "usage-choices" },
        choice("usage-span", "Span", SPANS, (d) => `${d} days`, span, (d) => {
          span = d;
          void load();
        }),
        choice("usage-stack", "Stack by", ["harness", "account"] as const, (s) => (s === "harness" ? "Harness" : "Account"), stack, (s) => {
          stack = s;
          draw();
        }),
      ),
      h("section", { class: "panel", "aria-labelledby": ids.days }, h("h2", { id: ids.days }, "Per day"), chartArea),
      h("section", { class: "panel", "aria-labelledby": ids.top }, h("h2", { id: ids.top }, "Top sessions"), topArea),
      h(
        "section",
        { class: "panel", "aria-labelledby": ids.windows },
        h("h2", { id: ids.windows }, "Limit windows"),
        windowsArea,
      ),
    ),
  );

  function draw(): void {
    const names = accountNames(read);
    const failed = read.error !== null ? message("error", h("p", null, `The usage could not be read: ${read.error}`)) : null;
    patch(chartArea, h("div", null, failed, read.days === null ? null : renderDays(read.days.answer, read.days.span, stack, names, opened)));
    patch(topArea, h("div", null, read.sessions === null ? null : renderTop(read.sessions, names)));
    patch(windowsArea, h("div", null, renderWindows(read)));
  }

  async function load(): Promise<void> {
    asked += 1;
    const mine = asked;
    const wanted = span;
    const tz = tzOffsetMinutes();
    const since = new Date(spanStartMs(wanted, tz)).toISOString();
    const [days, sessions, pool, limits] = await Promise.allSettled([
      api.usageDays(since, tz),
      api.usageSessions(since, TOP_SESSIONS),
      api.pool(),
      api.usageLimits(),
    ]);
    if (stopped || mine !== asked) return;
    const errors: string[] = [];
    const take = <T>(r: PromiseSettledResult<T>, keep: T | null): T | null => {
      if (r.status === "fulfilled") return r.value;
      if (!(r.reason instanceof ApiError && r.reason.unauthorized)) errors.push(describeError(r.reason));
      return keep;
    };
    const answer = take(days, null);
    read.days = answer !== null ? { answer, span: wanted } : read.days?.span === wanted ? read.days : null;
    read.sessions = take(sessions, read.sessions);
    read.pool = take(pool, read.pool);
    read.limits = take(limits, read.limits);
    read.error = errors.length === 0 ? null : [...new Set(errors)].join("; ");
    draw();
  }

  return refreshing(load, REFRESH_MS, () => {
    stopped = true;
  });
}

/** The page's time zone now, in minutes east of UTC, to the quarter hour the API takes. */
function tzOffsetMinutes(): number {
  return Math.round(-new Date().getTimezoneOffset() / 15) * 15;
}

/** The first day's midnight at `tz`: `days` days up to and with today. */
function spanStartMs(days: number, tz: number): number {
  const local = new Date(Date.now() + tz * 60_000);
  const midnight = Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate()) - tz * 60_000;
  return midnight - (days - 1) * DAY_MS;
}

/** The span's days, `YYYY-MM-DD` at the answer's time zone, oldest first. */
function dayKeys(days: UsageDays, span: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < span; i += 1) {
    out.push(new Date(days.since_ms + days.tz_offset_minutes * 60_000 + i * DAY_MS + DAY_MS / 2).toISOString().slice(0, 10));
  }
  return out;
}

/** All of a cell's tokens: input, output, cache reads and writes. */
function tokensOf(t: { input: number; output: number; cache_read: number; cache_write: number }): number {
  return t.input + t.output + t.cache_read + t.cache_write;
}

/** US dollars with cents; a priced amount under a cent is not shown as nothing. */
function usd(n: number): string {
  if (n > 0 && n < 0.005) return "< $0.01";
  const [whole, cents] = n.toFixed(2).split(".");
  return `$${grouped(Number(whole))}.${cents}`;
}

/** Tokens and cost summed over cells: priced models' cost, and the models with none. */
interface Sum {
  tokens: number;
  usd: number | null;
  unpriced: Set<string>;
}

function add(sum: Sum, c: DayCell): void {
  sum.tokens += tokensOf(c.tokens);
  if (c.api_equivalent_usd === null) sum.unpriced.add(c.model === "" ? "(model not named)" : c.model);
  else sum.usd = (sum.usd ?? 0) + c.api_equivalent_usd;
}

const empty = (): Sum => ({ tokens: 0, usd: null, unpriced: new Set() });

/** `1 320 000 tokens, $1.65`; `… , $1.65 + no price for m`; `… , no price`. */
function sumText(s: { tokens: number; usd: number | null; unpriced: Iterable<string> }): string {
  const unpriced = [...s.unpriced];
  if (s.tokens === 0) return "no tokens";
  const tokens = `${grouped(s.tokens)} tokens`;
  if (s.usd === null) return `${tokens}, no price`;
  return unpriced.length === 0 ? `${tokens}, ${usd(s.usd)}` : `${tokens}, ${usd(s.usd)} + no price for ${unpriced.join(", ")}`;
}

/** `1.3 M`, `650 k`, `12`: an axis's few characters. */
function compact(n: number): string {
  if (n >= 1e9) return `${+(n / 1e9).toFixed(1)} G`;
  if (n >= 1e6) return `${+(n / 1e6).toFixed(1)} M`;
  if (n >= 1e3) return `${+(n / 1e3).toFixed(1)} k`;
  return String(n);
}

/** 1, 2 or 5 times a power of ten, at least `n`. */
function niceCeil(n: number): number {
  if (n <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  return ([1, 2, 5, 10].find((m) => m * p >= n) ?? 10) * p;
}

/** An account's words: its email where the pool knows it (as the pool or the limits say). */
function accountNames(read: Read): Map<string, string> {
  const { pool, limits } = read;
  const names = new Map<string, string>();
  for (const w of limits?.windows ?? []) if (w.account && w.email) names.set(w.account, w.email);
  for (const a of pool?.accounts ?? []) if (a.email) names.set(a.id, a.email);
  return names;
}

function accountName(id: string | null, names: Map<string, string>): string {
  if (id === null || id === "") return "Unknown account";
  return names.get(id) ?? id;
}

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element with its attributes and children (`h` makes HTML ones). */
function s(tag: string, attrs: Record<string, string | number>, ...children: (SVGElement | string)[]): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c);
  return node;
}

/** A day's local calendar words, short: `6 Dec`. */
function dayWords(day: string, withWeekday = false): string {
  const d = new Date(`${day}T12:00:00`);
  if (Number.isNaN(d.getTime())) return day;
  return d.toLocaleDateString([], withWeekday ? { weekday: "short", day: "numeric", month: "short" } : { day: "numeric", month: "short" });
}

function renderDays(days: UsageDays, span: number, stack: Stack, names: Map<string, string>, opened: { table: boolean }): Child {
  const keys = dayKeys(days, span);
  const seriesOf = (c: DayCell): string => (stack === "harness" ? harnessName(c.harness) : accountName(c.account, names));
  // The series, most tokens first; past COLOURS - 1 of them, the rest are one.
  const bySeries = new Map<string, Sum>();
  const total = empty();
  for (const c of days.cells) {
    if (!keys.includes(c.day)) continue;
    const name = seriesOf(c);
    const sum = bySeries.get(name) ?? empty();
    add(sum, c);
    bySeries.set(name, sum);
    add(total, c);
  }
  const ranked = [...bySeries.entries()].sort((a, b) => b[1].tokens - a[1].tokens);
  const shown = ranked.length > COLOURS ? ranked.slice(0, COLOURS - 1) : ranked;
  const colour = new Map(shown.map(([name], i) => [name, i]));
  const legendOf = (name: string): string => (colour.has(name) ? name : "Other");
  const legend: [string, number, Sum][] = shown.map(([name, sum], i) => [name, i, sum]);
  if (ranked.length > shown.length) {
    const other = empty();
    for (const [, sum] of ranked.slice(shown.length)) {
      other.tokens += sum.tokens;
      if (sum.usd !== null) other.usd = (other.usd ?? 0) + sum.usd;
      sum.unpriced.forEach((m) => other.unpriced.add(m));
    }
    legend.push(["Other", COLOURS - 1, other]);
  }

  // Each day: its total, and its series' parts in the legend's order.
  const perDay = new Map<string, { sum: Sum; parts: Map<string, Sum> }>(keys.map((k) => [k, { sum: empty(), parts: new Map() }]));
  for (const c of days.cells) {
    const day = perDay.get(c.day);
    if (day === undefined) continue;
    add(day.sum, c);
    const name = legendOf(seriesOf(c));
    const part = day.parts.get(name) ?? empty();
    add(part, c);
    day.parts.set(name, part);
  }

  const spanWords = `the last ${span} days`;
  const head = h(
    "p",
    { class: "usage-total", "data-total": total.tokens },
    h("strong", null, `In ${spanWords}: `),
    total.tokens === 0 ? "no tokens counted." : `${sumText(total)}${total.usd !== null ? " (API-equivalent)" : ""}.`,
  );
  if (total.tokens === 0) {
    return [
      head,
      h("p", { class: "muted" }, "Nothing used in this span, or nothing sessionpipe could read: usage is counted from transcripts as the daemon reads them, and `sessionpipe backfill` counts past sessions."),
    ];
  }

  const W = 720;
  const H = 220;
  const left = 52;
  const bottom = 22;
  const top = 8;
  const plotH = H - top - bottom;
  const plotW = W - left - 4;
  const max = niceCeil(Math.max(...[...perDay.values()].map((d) => d.sum.tokens)));
  const slot = plotW / keys.length;
  const barW = Math.max(2, slot * 0.72);
  const y = (n: number): number => top + plotH - (n / max) * plotH;
  const every = Math.ceil(keys.length / 8);
  const chartTitle = "usage-chart-title";

  const grid = [0, max / 2, max].map((v) =>
    s(
      "g",
      { class: "grid", "aria-hidden": "true" },
      s("line", { x1: left, x2: W, y1: y(v), y2: y(v) }),
      s("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, compact(v)),
    ),
  );
  const bars = keys.map((day, i) => {
    const d = perDay.get(day) ?? { sum: empty(), parts: new Map<string, Sum>() };
    const label = `${day}: ${sumText(d.sum)}`;
    const x = left + i * slot + (slot - barW) / 2;
    // The legend's first series at the bottom, the next on it.
    let base = 0;
    const parts = legend
      .filter(([name]) => (d.parts.get(name)?.tokens ?? 0) > 0)
      .map(([name, index]) => {
        const part = d.parts.get(name) as Sum;
        const rect = s(
          "rect",
          { class: `series series-${index}`, x, width: barW, y: y(base + part.tokens), height: Math.max(0.5, y(base) - y(base + part.tokens)) },
          s("title", {}, `${day} · ${name}: ${sumText(part)}`),
        );
        base += part.tokens;
        return rect;
      });
    return s(
      "g",
      { class: "bar", role: "img", "aria-label": label, "data-day": day, "data-tokens": d.sum.tokens },
      s("title", {}, label),
      s("rect", { class: "hit", x: left + i * slot, width: slot, y: top, height: plotH }),
      ...parts,
    );
  });
  const ticks = keys.flatMap((day, i) =>
    (keys.length - 1 - i) % every === 0
      ? [s("text", { class: "tick", x: left + i * slot + slot / 2, y: H - 6, "text-anchor": "middle", "aria-hidden": "true" }, dayWords(day))]
      : [],
  );
  const svg = s(
    "svg",
    { class: "usage-chart", viewBox: `0 0 ${W} ${H}`, role: "group", "aria-labelledby": chartTitle, "data-stack": stack },
    s("title", { id: chartTitle }, `Tokens per day in ${spanWords}, stacked by ${stack}`),
    ...grid,
    ...bars,
    ...ticks,
  );

  const withUsage = keys.filter((k) => (perDay.get(k)?.sum.tokens ?? 0) > 0).reverse();
  return [
    head,
    h("figure", { class: "usage-figure" }, svg),
    h(
      "ul",
      { class: "usage-legend", "aria-label": `Stacked by ${stack}` },
      legend.map(([name, index, sum]) =>
        h("li", { "data-series": name }, h("span", { class: `swatch series-${index}`, "aria-hidden": "true" }), h("span", { class: "series-name" }, name), " ", h("span", { class: "muted" }, sumText(sum))),
      ),
    ),
    h(
      "details",
      {
        class: "usage-days-table",
        open: opened.table,
        ontoggle: (e: Event) => {
          opened.table = (e.currentTarget as HTMLDetailsElement).open;
        },
      },
      h("summary", { "data-focus": "days-table" }, "The days as a table"),
      h(
        "table",
        null,
        h("thead", null, h("tr", null, h("th", { scope: "col" }, "Day"), h("th", { scope: "col" }, "Tokens"), h("th", { scope: "col" }, "Cost (API-equivalent)"))),
        h(
          "tbody",
          null,
          withUsage.map((k) => {
            const sum = (perDay.get(k) as { sum: Sum }).sum;
            return h("tr", { "data-day": k }, h("th", { scope: "row" }, `${dayWords(k, true)} (${k})`), h("td", null, grouped(sum.tokens)), h("td", null, costText(sum.usd, [...sum.unpriced])));
          }),
        ),
      ),
    ),
    h("p", { class: "muted usage-note" }, `${COST_WORDS} Prices: ${days.prices.source}, ${days.prices.date}${days.prices.overridden.length > 0 ? `; yours in config.json for ${days.prices.overridden.join(", ")}` : ""}.`),
  ];
}

/** A cost cell: `$1.65`, `$1.65 + no price for m`, or `no price`. */
function costText(cost: number | null, unpriced: string[]): string {
  if (cost === null) return "no price";
  return unpriced.length === 0 ? usd(cost) : `${usd(cost)} + no price for ${unpriced.join(", ")}`;
}

function renderTop(top: UsageSessions, names: Map<string, string>): Child {
  if (top.sessions.length === 0) return h("p", { class: "muted" }, "No session used tokens in this span.");
  const row = (u: UsageSession): HTMLElement => {
    const key = `${u.harness}:${u.id}`;
    const title = u.title !== null && u.title !== "" ? u.title : u.id.slice(0, 8);
    return h(
      "tr",
      { "data-session": key },
      h("th", { scope: "row" }, h("a", { href: href({ session: key }), "data-focus": `top:${key}` }, title), u.account !== null && u.account !== "" ? h("span", { class: "muted usage-account" }, accountName(u.account, names)) : null),
      h("td", null, harnessName(u.harness)),
      h("td", { class: "num" }, grouped(tokensOf(u.usage.tokens))),
      h("td", { class: "num" }, costText(u.usage.api_equivalent_usd, u.usage.unpriced)),
    );
  };
  return h(
    "table",
    { class: "usage-top" },
    h(
      "thead",
      null,
      h("tr", null, h("th", { scope: "col" }, "Session"), h("th", { scope: "col" }, "Harness"), h("th", { scope: "col", class: "num" }, "Tokens"), h("th", { scope: "col", class: "num" }, "Cost (API-equivalent)")),
    ),
    h("tbody", null, top.sessions.map(row)),
  );
}

/** A window of an account, with its projection where the pace makes one. */
interface Window {
  id: string;
  used_percent: number;
  resets_at: string;
  runs_out_at: string | null;
}

interface AccountWindows {
  id: string;
  name: string;
  /** The harness whose account it is, when the daemon says. */
  harness: string | null;
  windows: Window[];
}

/** Each account's windows as `GET /api/usage/limits` has them, in its order. */
function standingWindows(standing: LimitStanding[]): AccountWindows[] {
  const out = new Map<string, AccountWindows>();
  for (const w of standing) {
    const id = w.account ?? "";
    const key = `${w.harness}\u0000${id}`;
    const name = w.email ?? (id !== "" ? id : `${harnessName(w.harness)}, account not named`);
    const known = out.get(key) ?? { id, name, harness: w.harness, windows: [] };
    known.windows.push({ id: w.window, used_percent: w.used_percent, resets_at: w.resets_at, runs_out_at: w.runs_out_at });
    out.set(key, known);
  }
  return [...out.values()];
}

/** A time to come in local words: `15:00` today, else `Tue 7 Dec, 15:00`. */
function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
  if (d.toDateString() === new Date().toDateString()) return time;
  return `${d.toLocaleDateString([], { weekday: "short", day: "numeric", month: "short" })}, ${time}`;
}

function renderWindows(read: Read): Child {
  const { limits } = read;
  if (limits === null) return h("p", { class: "muted" }, "Reading the windows…");
  const accounts = standingWindows(limits.windows);
  if (accounts.length === 0) {
    return h(
      "p",
      { class: "muted" },
      ...prose("No limit window heard yet. Claude Code reports its windows through its status line (`sessionpipe install --status-line`), and the pool reads its accounts' own."),
    );
  }
  return [
    h(
      "ul",
      { class: "usage-accounts" },
      accounts.map((a) =>
        h(
          "li",
          { "data-account": a.id, "data-harness": a.harness },
          h("h3", null, a.name, a.harness !== null ? h("span", { class: "muted usage-harness" }, ` · ${harnessName(a.harness)}`) : null),
          h("ul", { class: "windows", "aria-label": `${a.name}'s windows` }, a.windows.map((w) => renderWindow(w, a.name))),
        ),
      ),
    ),
    !limits.alerts
      ? h("p", { class: "muted" }, ...prose("Warnings before a window runs out are off (`pace_alerts` in config.json)."))
      : null,
  ];
}

function renderWindow(w: Window, account: string): HTMLElement {
  const label = windowName(w.id);
  const used = Math.round(w.used_percent);
  const reset = `resets ${localTime(w.resets_at)}`;
  const runsOut = w.runs_out_at;
  const pace = runsOut !== null ? `will run out around ${localTime(runsOut)} at the last hour's pace` : null;
  return h(
    "li",
    { class: `window${runsOut !== null ? " runs-out" : ""}`, "data-window": w.id },
    h("span", { class: "window-name" }, label),
    h("meter", {
      min: 0,
      max: 100,
      low: 70,
      high: 90,
      optimum: 0,
      value: Math.min(100, Math.max(0, w.used_percent)),
      "aria-label": `${account}: ${label} window, ${used}% used, ${reset}${pace !== null ? `, ${pace}` : ""}`,
      "data-used": w.used_percent,
    }),
    h("span", { class: "window-used" }, `${used}%`),
    h("span", { class: "window-reset muted" }, reset),
    pace !== null ? h("span", { class: "window-pace", "data-runs-out": runsOut }, pace) : null,
  );
}
