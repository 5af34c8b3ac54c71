// The banner under the top bar while a long work runs on this machine (a
// backfill, remote titles' re-send), on every screen: what it does in words
// and a <progress> bar (its accessible name says which work; no value while
// the harnesses' files are read, the sessions to send not yet counted). It
// asks `GET /api/progress` every second while the page is visible, and goes
// away when the work ends. It decides nothing: it shows what the daemon says.

import type { Api } from "./api";
import { h, patch } from "@sessionpipe/web-shared/dom";
import { grouped, harnessName } from "./format";
import type { LongWork } from "./types";

const REFRESH_MS = 1000;

/** The banner's words: `Backfilling past sessions: 1 200 / 3 400`. */
export function progressText(w: LongWork): string {
  const of = `${grouped(w.done)} / ${grouped(w.total)}`;
  const files = `${harnessName(w.harness ?? "")}'s files`;
  if (w.what === "titles") {
    return w.stage === "reading" ? "Remote titles: reading Claude Code's files…" : `Remote titles: asking about ${of} sessions`;
  }
  return w.stage === "reading" ? `Backfilling past sessions: reading ${w.harness ? files : "the harnesses' files"}…` : `Backfilling past sessions: ${of}`;
}

function render(w: LongWork | null): HTMLElement {
  const box = h("div", null);
  if (w === null) return box;
  const name = w.what === "titles" ? "Remote titles progress" : "Backfill progress";
  // Indeterminate while reading: how many sessions there are is not known yet.
  const bar =
    w.stage === "reading"
      ? h("progress", { "aria-label": name, "aria-describedby": "progress-text" })
      : h("progress", { "aria-label": name, "aria-describedby": "progress-text", max: Math.max(w.total, 1), value: w.done });
  box.append(h("span", { id: "progress-text", class: "progress-text" }, progressText(w)), bar);
  return box;
}

/**
 * Keeps `banner` showing the long work running now. `api` is asked for the
 * current API (none while the page has no token, or is locked).
 */
export function mountProgress(banner: HTMLElement, api: () => Api | null): void {
  let busy = false;
  async function refresh(): Promise<void> {
    const current = api();
    if (busy || current === null || document.visibilityState !== "visible") return;
    busy = true;
    let work: LongWork | null = null;
    try {
      work = (await current.progress()).progress;
    } catch {
      // The daemon gone or the token refused: the page says so elsewhere.
      work = null;
    } finally {
      busy = false;
    }
    banner.hidden = work === null;
    patch(banner, render(work));
  }
  banner.hidden = true;
  window.setInterval(() => void refresh(), REFRESH_MS);
  document.addEventListener("visibilitychange", () => void refresh());
  void refresh();
}
