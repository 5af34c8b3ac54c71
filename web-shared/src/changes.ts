// A session's changes as a person reviews them, on the phone page and in the
// desktop window alike: per turn, each file collapsed with its +/− counts,
// and once opened each edit as a diff of its text before and after (made
// with jsdiff, `diff`). What changed is the receiver's and the daemon's to
// say (`protocol::changes`, the same reading on both); this only draws it.
// Owns no state beyond the DOM it returns; never fetches.

import { diffLines } from "diff";
import { fill, h, type Child } from "./dom";

/** An edit as `protocol::changes::Edit` serializes it (both generated APIs). */
export interface EditShape {
  tool: string;
  kind: "replace" | "write" | "delete";
  old: string;
  new: string;
  moved_to?: string;
  cut: boolean;
}

export interface ChangesShape {
  turns: { turn: number; at: string | null; files: { path: string; edits: EditShape[] }[]; unseen: number }[];
  cut: boolean;
  older: boolean;
}

export interface ChangesWords {
  /** Said of a file whose edits did not reach this side (the tier hides them). */
  hidden: string;
  /** A turn's start, as the app writes times. */
  clock: (at: string) => string;
}

interface Line {
  mark: "+" | "-" | " " | "…";
  text: string;
}

/** Unchanged lines kept around a change; a longer run is folded. */
const CONTEXT = 3;
/** Lines one edit shows at most (a whole file written is cut there). */
const MAX_LINES = 400;
/** The most line edits a diff searches for: past it (two long texts that
 * differ throughout) the edit shows as all removed, then all added, at once. */
const MAX_EDIT_LENGTH = 2000;

function linesOf(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** An edit as marked lines, long unchanged runs folded, and its counts. */
export function editLines(e: EditShape): { lines: Line[]; added: number; removed: number } {
  if (e.kind === "delete") return { lines: [], added: 0, removed: 0 };
  if (e.kind === "write") {
    const lines = linesOf(e.new).map((text): Line => ({ mark: "+", text }));
    return { lines, added: lines.length, removed: 0 };
  }
  const raw: Line[] = [];
  let added = 0;
  let removed = 0;
  const parts = diffLines(e.old, e.new, { maxEditLength: MAX_EDIT_LENGTH }) ?? [
    { value: e.old, removed: true, added: false, count: linesOf(e.old).length },
    { value: e.new, added: true, removed: false, count: linesOf(e.new).length },
  ];
  for (const part of parts) {
    const mark = part.added ? "+" : part.removed ? "-" : " ";
    for (const text of linesOf(part.value)) raw.push({ mark, text });
    if (part.added) added += part.count ?? 0;
    if (part.removed) removed += part.count ?? 0;
  }
  return { lines: fold(raw), added, removed };
}

/** Runs of unchanged lines longer than twice the context become one "…" line. */
function fold(lines: Line[]): Line[] {
  const out: Line[] = [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i]?.mark !== " ") {
      out.push(lines[i] as Line);
      i += 1;
      continue;
    }
    let j = i;
    while (j < lines.length && lines[j]?.mark === " ") j += 1;
    const keepHead = i === 0 ? 0 : CONTEXT;
    const keepTail = j === lines.length ? 0 : CONTEXT;
    if (j - i > keepHead + keepTail + 1) {
      out.push(...lines.slice(i, i + keepHead));
      out.push({ mark: "…", text: `${j - i - keepHead - keepTail} unchanged lines` });
      out.push(...lines.slice(j - keepTail, j));
    } else {
      out.push(...lines.slice(i, j));
    }
    i = j;
  }
  return out;
}

function renderEdit(e: EditShape, lines: Line[]): HTMLElement {
  const moved = e.moved_to !== undefined ? ` → ${e.moved_to}` : "";
  const note =
    e.cut ? "Too large to show here with the rest." : e.kind === "delete" ? "Deleted." : lines.length === 0 ? "No text changed." : null;
  const shown = lines.slice(0, MAX_LINES);
  return h(
    "div",
    { class: "edit" },
    h("p", { class: "edit-tool" }, `${e.tool}${e.kind === "write" ? " (whole file)" : ""}${moved}`),
    note !== null
      ? h("p", { class: "muted" }, note)
      : h(
          "pre",
          { class: "diff" },
          shown.map((l) => h("span", { class: l.mark === "+" ? "add" : l.mark === "-" ? "del" : l.mark === "…" ? "fold" : "same" }, `${l.mark === "…" ? "⋯" : l.mark} ${l.text}`)),
          lines.length > MAX_LINES ? h("span", { class: "fold" }, `⋯ ${lines.length - MAX_LINES} more lines`) : null,
        ),
  );
}

function renderFile(turn: number, f: { path: string; edits: EditShape[] }, words: ChangesWords): HTMLElement {
  const read = f.edits.map((e) => ({ e, ...editLines(e) }));
  const added = read.reduce((n, r) => n + r.added, 0);
  const removed = read.reduce((n, r) => n + r.removed, 0);
  const body = h("div", { class: "change-body" });
  const file = h(
    "details",
    { class: "change-file", "data-key": `${turn}:${f.path}` },
    h(
      "summary",
      null,
      h("span", { class: "path" }, f.path),
      f.edits.length > 0 ? [" ", h("span", { class: "adds" }, `+${added}`), " ", h("span", { class: "dels" }, `−${removed}`)] : null,
    ),
    body,
  );
  // Drawn when first opened: a review of many edits lists fast.
  file.addEventListener("toggle", () => {
    if (!file.open || body.childElementCount > 0) return;
    if (f.edits.length === 0) body.append(h("p", { class: "muted" }, words.hidden));
    else body.append(...read.map((r) => renderEdit(r.e, r.lines)));
  });
  return file;
}

/** The whole review: newest turn first (the one a person came to look at). */
export function renderChanges(c: ChangesShape, words: ChangesWords): Child[] {
  if (c.turns.length === 0) return [h("p", { class: "muted" }, "No file changed yet.")];
  const turns = [...c.turns].reverse();
  return [
    c.cut ? h("p", { class: "muted" }, "Some older edits are too large to show here with the newer ones; their files are listed.") : null,
    c.older ? h("p", { class: "muted" }, "Older turns are not shown here: the turns are counted from the first one shown.") : null,
    turns.map((t) =>
      h(
        "section",
        { class: "change-turn" },
        h("h3", null, t.turn === 0 ? "Before the first turn here" : `Turn ${t.turn}`, t.at !== null ? h("span", { class: "age" }, words.clock(t.at)) : null),
        h("div", { class: "change-files" }, t.files.map((f) => renderFile(t.turn, f, words))),
        t.unseen > 0 ? h("p", { class: "muted" }, `${t.unseen} ${t.unseen === 1 ? "edit" : "edits"} not shown: ${words.hidden}`) : null,
      ),
    ),
  ];
}

/**
 * Draws `c` into `target`, keeping open the files that were open (a refresh
 * must not fold what a person is reading). Times the drawing as
 * `changes-render` (a Performance measure the tests report).
 */
export function drawChanges(target: HTMLElement, c: ChangesShape, words: ChangesWords): void {
  const open = new Set(Array.from(target.querySelectorAll<HTMLDetailsElement>("details.change-file[open]"), (d) => d.dataset["key"] ?? ""));
  performance.mark("changes-start");
  fill(target, renderChanges(c, words));
  for (const d of target.querySelectorAll<HTMLDetailsElement>("details.change-file")) {
    if (open.has(d.dataset["key"] ?? "")) d.open = true;
  }
  performance.measure("changes-render", "changes-start");
}
