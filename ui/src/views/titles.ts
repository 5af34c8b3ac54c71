// Titles: remote titles' switch, live (`GET`/`PUT /api/titles`, what
// `sessionpipe titles on|off` does), with what turning it on reads, sends and
// writes said plainly beside it (the consent parts). It owns this screen's
// state and calls only the titles API. It must not turn anything on by
// itself: only the person's click on the switch changes it, and a failed
// change puts the switch back to what the daemon says.

import { ApiError, describeError } from "../api";
import { h, message, prose, uid } from "@sessionpipe/web-shared/dom";
import type { TitlesResent, TitlesSet, TitlesState } from "../types";
import type { Mounted, ViewContext } from "../view";
import { consentParts } from "./consent";

const LEAD =
  "claude.ai names a session the Claude app started a few seconds after its first message, and never writes that name to this machine. With Titles on, sessionpipe asks claude.ai for that name, bearing Claude Code's own sign-in on this machine for that one read, so your sinks show the same name the Claude app does.";

const ON_DOES =
  "Turning it on also asks about every Claude Code session of the last 30 days with a claude.ai link, and sends each one already sent under another name again, as `session.backfill` with the new name, to every sink.";

export function mountTitles(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  let stopped = false;
  const ids = { status: uid("titles-status"), does: uid("titles-does") };
  const toggle = h("input", {
    type: "checkbox",
    role: "switch",
    disabled: true,
    checked: false,
    "aria-describedby": `${ids.status} ${ids.does}`,
  });
  const status = h("div", { id: ids.status, class: "titles-status" }, h("p", { class: "muted" }, "Reading the setting…"));
  root.replaceChildren(
    h(
      "section",
      { class: "view consent", "aria-labelledby": "titles-h", "data-titles": "" },
      h("h1", { id: "titles-h", tabindex: "-1" }, "Titles"),
      h("p", { class: "lead" }, LEAD),
      h(
        "div",
        { class: "panel" },
        h("label", { class: "switch" }, toggle, h("span", { class: "switch-text" }, "Ask claude.ai for session names")),
        h("p", { id: ids.does, class: "muted" }, ...prose(ON_DOES)),
        status,
      ),
      h("p", { class: "muted" }, "What it does, exactly:"),
      consentParts("titles"),
    ),
  );

  function show(state: TitlesState | TitlesSet): void {
    toggle.checked = state.remote_titles;
    toggle.disabled = false;
    status.replaceChildren(said(state));
  }

  async function load(): Promise<void> {
    try {
      const state = await api.titles();
      if (!stopped) show(state);
    } catch (e) {
      if (stopped || (e instanceof ApiError && e.unauthorized)) return;
      status.replaceChildren(message("error", h("p", null, `The setting could not be read: ${describeError(e)}`)));
    }
  }

  toggle.addEventListener("change", () => {
    const on = toggle.checked;
    toggle.disabled = true;
    status.replaceChildren(
      message("info", h("p", null, on ? "Turning it on and asking about the last 30 days (a few seconds per session at most)…" : "Turning it off…")),
    );
    api
      .setTitles(on)
      .then((state) => {
        if (!stopped) show(state);
      })
      .catch((e: unknown) => {
        if (stopped) return;
        toggle.checked = !on;
        toggle.disabled = false;
        status.replaceChildren(message("error", h("p", null, `Not changed: ${describeError(e)}`)));
      });
  });

  void load();
  return {
    unmount() {
      stopped = true;
    },
  };
}

/** What the state says, in words. */
function said(state: TitlesState | TitlesSet): HTMLElement {
  if (!state.remote_titles) {
    return message("info", h("p", null, h("strong", null, "Off. "), "Nothing reads Claude Code's sign-in or asks claude.ai anything."));
  }
  const parts = [h("strong", null, "On. "), "Sessions with a claude.ai link are asked about from their next hook call."];
  if ("resent" in state && state.resent !== null) parts.push(" ", resentText(state.resent));
  return message("ok", h("p", null, ...parts));
}

function resentText(r: TitlesResent): string {
  const sessions = (n: number) => `${n} session${n === 1 ? "" : "s"}`;
  return `Of the last 30 days, ${sessions(r.asked)} with a claude.ai link ${r.asked === 1 ? "was" : "were"} asked about: ${r.named} named, ${sessions(r.resent)} sent again under the new name.`;
}
