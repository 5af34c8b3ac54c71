// The board: the account's sessions as "Needs you" / "Working" / "Done", and
// its machines, online or not. GET /app/api/board every 3 s while visible.

import { api, describeError } from "./api";
import { thisCredential, trusts, type App, type Mounted } from "./app";
import { h, message, patch, type Child } from "@sessionpipe/web-shared/dom";
import { HIDDEN_SENTENCE } from "@sessionpipe/web-shared/tier-words";
import { standingLine } from "@sessionpipe/web-shared/format";
import { STATE_WORDS, age, ago, attentionText, clock, harnessName, kindWord, sessionName } from "./format";
import { poll } from "./poll";
import { href, sessionHref } from "./route";
import type { Board, Machine, Session, SessionState } from "./types";

const REFRESH_MS = 3000;
const ORDER: SessionState[] = ["needs_you", "working", "done"];

const EMPTY: Record<SessionState, string> = {
  needs_you: "Nothing needs you right now.",
  working: "No agent is working right now.",
  done: "No finished sessions yet.",
};

export function mountBoard(root: HTMLElement, app: App): Mounted {
  const live = h("div", { class: "live" }, h("p", { class: "muted" }, "Loading your sessions…"));
  root.replaceChildren(h("h1", { id: "board-h", tabindex: "-1", class: "sr-only" }, "Your sessions"), live);
  let error: string | null = null;

  const poller = poll(async () => {
    try {
      app.board = await api.board();
      error = null;
    } catch (e) {
      error = describeError(e);
    }
    draw();
  }, REFRESH_MS);

  function draw(): void {
    patch(live, h("div", null, render(app, app.board, error)));
    const waiting = app.board?.sessions.filter((s) => s.state === "needs_you").length ?? 0;
    document.title = `${waiting > 0 ? `(${waiting}) ` : ""}sessionpipe`;
  }

  return { unmount: () => poller.stop() };
}

function render(app: App, board: Board | null, error: string | null): Child[] {
  if (board === null) {
    return [error !== null ? message("error", h("p", null, `Can't load your sessions: ${error}`)) : h("p", { class: "muted" }, "Loading your sessions…")];
  }
  const groups = new Map<SessionState, Session[]>(ORDER.map((s) => [s, []]));
  for (const s of board.sessions) groups.get(s.state)?.push(s);
  return [
    error !== null ? message("error", h("p", null, `Can't refresh right now: ${error} Showing what was there.`)) : null,
    ORDER.map((state) => {
      const list = groups.get(state) ?? [];
      const id = `group-${state}`;
      return h(
        "section",
        { class: `group ${state}`, "aria-labelledby": id },
        h("h2", { id }, STATE_WORDS[state], " ", h("span", { class: "count" }, String(list.length), h("span", { class: "sr-only" }, list.length === 1 ? " session" : " sessions"))),
        list.length === 0
          ? h("p", { class: "muted empty" }, EMPTY[state])
          : h("ul", { class: "cards" }, list.map((s) => h("li", null, sessionCard(s)))),
      );
    }),
    machinesSection(app, board.machines),
  ];
}

function sessionCard(s: Session): HTMLElement {
  const when = age(s.last_at);
  return h(
    "a",
    { class: `card session ${s.state}`, href: sessionHref(s.key), "data-focus": `s:${s.key}` },
    h("span", { class: "title-row" }, h("strong", { class: "title" }, sessionName(s)), when !== "" ? h("span", { class: "age" }, when) : null),
    s.attention !== null
      ? h("span", { class: "attention-line" }, h("span", { class: "badge need" }, kindWord(s.attention.kind)), " ", askedLine(s))
      : null,
    s.cwd || s.branch ? h("span", { class: "folder" }, [s.cwd, s.branch].filter((p) => p).join(" · ")) : null,
    h(
      "span",
      { class: "meta" },
      [s.machine ?? "unknown machine", harnessName(s.harness), s.model].filter((p): p is string => typeof p === "string" && p !== "").join(" · "),
    ),
    s.last_words ? h("span", { class: "last-words" }, s.last_words) : null,
  );
}

/** What the open attention asks, as the notifications say it; the sentence when the machine hid it. */
function askedLine(s: Session): string {
  const said = s.attention_words;
  if (said === null) return s.attention !== null ? attentionText(s.attention) : "";
  return said.what ?? said.hidden ?? "";
}

function machinesSection(app: App, machines: Machine[]): HTMLElement {
  const me = thisCredential(app.me);
  return h(
    "section",
    { class: "group machines", "aria-labelledby": "machines-h" },
    h("h2", { id: "machines-h" }, "Machines"),
    machines.length === 0
      ? h(
          "div",
          { class: "card" },
          h("p", null, "No machines yet."),
          h(
            "p",
            { class: "hint" },
            "On a computer with sessionpipe, run ",
            h("code", null, `sessionpipe connect ${location.origin}`),
            " (or ",
            h("code", null, `sessionpipe control pair ${location.origin}`),
            "). It shows a link and six digits: open the link on this device to approve it.",
          ),
        )
      : h(
          "ul",
          { class: "machine-list" },
          machines.map((m) => {
            const starts = Object.keys(m.hello?.starts ?? {});
            const trusted = me === null || trusts(m, me.id);
            return h(
              "li",
              { class: "card machine" },
              h(
                "span",
                { class: "title-row" },
                h("strong", null, m.name),
                h("span", { class: `presence ${m.online ? "online" : "offline"}` }, h("span", { class: "dot", "aria-hidden": "true" }), m.online ? "Online" : "Offline"),
              ),
              h("span", { class: "meta" }, machineMeta(m)),
              m.hello?.tier === 0 ? h("p", { class: "hint", "data-hidden": "tier-0" }, HIDDEN_SENTENCE) : null,
              renderLimits(m),
              trusted ? null : h("p", { class: "hint warn-text" }, "It doesn't trust this device yet, so it would refuse what you send from here. Pair it again from that machine, or add this device from one it trusts (Devices)."),
              starts.length > 0
                ? h("a", { class: "button secondary", href: href({ view: "start", machine: m.id }), "data-focus": `start:${m.id}` }, "Start a session")
                : null,
            );
          }),
        ),
  );
}

/** The machine's accounts' limit windows and when this pace runs one out. */
function renderLimits(m: Machine): HTMLElement | null {
  const limits = m.hello?.limits ?? [];
  if (limits.length === 0) return null;
  return h(
    "ul",
    { class: "limits", "aria-label": `${m.name}'s limit windows` },
    limits.map((l) =>
      h(
        "li",
        { class: l.runs_out_at ? "limit runs-out" : "limit", "data-window": l.window },
        h("span", { class: "meta" }, [harnessName(l.harness), l.email ?? l.account].filter(Boolean).join(" ")),
        " ",
        standingLine(l, clock),
      ),
    ),
  );
}

function machineMeta(m: Machine): string {
  const parts: string[] = [];
  if (!m.online && m.last_poll_at !== null) parts.push(`last seen ${ago(m.last_poll_at)}`);
  if (m.hello === null) parts.push("hasn't said hello yet");
  else if (m.hello.harnesses && m.hello.harnesses.length > 0) parts.push(m.hello.harnesses.map(harnessName).join(", "));
  const text = parts.join(" · ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}
