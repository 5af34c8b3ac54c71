// Sessions: the live board (needs you, working, done), the approvals across all
// sessions, and one session's recent events, its Stop (while the daemon can
// end its running turn: through the harness's own interrupt) and its Changes (the files each
// turn changed, each edit as a diff: web-shared's `changes`, drawn as on the
// phone; read while open). Redrawn every 2 s and on focus.
// A session whose limits named its account shows it and the window it burns
// most (`a@x · 5h 93%`).
// An approval the daemon says is answerable (local approvals on, its hook waits)
// has Allow and Deny buttons: the person's click posts /api/approvals and the
// answer, or why it was not taken, shows under it. A harness found after
// setup is offered above the board (`offers`).

import { ApiError, describeError } from "../api";
import { drawChanges } from "@sessionpipe/web-shared/changes";
import { h, message, patch, type Child } from "@sessionpipe/web-shared/dom";
import { STATE_WORDS, accountText, age, attentionText, clock, harnessName, kindWord, summary, when } from "../format";
import { href, splitKey, type Route } from "../route";
import type { Approval, ApprovalDecision, EventEnvelope, Overview, SessionAccount, SessionState, SessionView } from "../types";
import type { Mounted, ViewContext } from "../view";
import { mountOffers } from "../offers";

const REFRESH_MS = 2000;
const EVENT_LIMIT = 50;

const EMPTY: Record<SessionState, string> = {
  needs_you: "Nothing needs you right now.",
  working: "No agent is working right now.",
  done: "No session finished in the last day.",
};

interface Loaded<T> {
  value: T | null;
  error: string | null;
}

/** What became of a person's answer to one approval. */
interface Answer {
  state: "sending" | "answered" | "failed";
  decision: ApprovalDecision;
  error?: string;
}

/** The Stops sent from this page, by session, and how to send one. */
interface Stopping {
  sent: Map<string, { state: "sending" | "done" | "failed"; words: string }>;
  stop: (key: string) => void;
}

/** The answers given from this page, by approval, and how to give one. */
interface Answering {
  answers: Map<string, Answer>;
  answer: (a: Approval, decision: ApprovalDecision) => void;
}

function approvalKey(a: Approval): string {
  return `${a.session}\u001f${a.attention_id}`;
}

export function mountSessions(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  let route: Route = ctx.route;
  let board: Loaded<Overview> = { value: null, error: null };
  let events: Loaded<EventEnvelope[]> & { of: string | null } = { value: null, error: null, of: null };
  let busy = false;
  let again = false;
  let stopped = false;
  const answering: Answering = {
    answers: new Map(),
    answer(a, decision) {
      const key = approvalKey(a);
      if (answering.answers.get(key)?.state === "sending") return;
      answering.answers.set(key, { state: "sending", decision });
      draw();
      api.answerApproval(a.session, a.attention_id, decision).then(
        () => answering.answers.set(key, { state: "answered", decision }),
        (e: unknown) => answering.answers.set(key, { state: "failed", decision, error: describeError(e) }),
      ).finally(() => {
        if (stopped) return;
        draw();
        void refresh();
      });
    },
  };

  const stopping: Stopping = {
    sent: new Map(),
    stop(key) {
      if (stopping.sent.get(key)?.state === "sending") return;
      stopping.sent.set(key, { state: "sending", words: "Stopping…" });
      draw();
      const { harness, id } = splitKey(key);
      api.stop(harness, id).then(
        (r) =>
          stopping.sent.set(key, {
            state: r.outcome === "delivered" ? "done" : "failed",
            words: r.outcome === "delivered" ? `Stopped (through ${r.mode ?? "the harness"}).` : `Not stopped: ${r.detail ?? r.outcome}.`,
          }),
        (e: unknown) => stopping.sent.set(key, { state: "failed", words: `Not stopped: ${describeError(e)}` }),
      ).finally(() => {
        if (stopped) return;
        draw();
        void refresh();
      });
    },
  };

  const live = h("div", { class: "live" }, h("p", { class: "muted" }, "Loading the board…"));
  const offers = mountOffers(api);
  // Outside `live`, which a refresh redraws: what is open here stays open.
  const changes = mountChanges(api);
  root.replaceChildren(
    h(
      "section",
      { class: "view sessions", "aria-labelledby": "sessions-h" },
      h("h1", { id: "sessions-h", tabindex: "-1" }, "Sessions"),
      offers.element,
      live,
      changes.element,
    ),
  );

  async function refresh(): Promise<void> {
    if (stopped) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    const selected = route.session;
    const [ov, ev] = await Promise.allSettled([
      api.overview(),
      selected === null ? Promise.resolve(null) : api.events(splitKey(selected).harness, splitKey(selected).id, EVENT_LIMIT),
    ]);
    busy = false;
    if (stopped) return;
    if ([ov, ev].some((r) => r.status === "rejected" && r.reason instanceof ApiError && r.reason.unauthorized)) return;
    board = ov.status === "fulfilled" ? { value: ov.value, error: null } : { value: board.value, error: describeError(ov.reason) };
    if (selected === route.session) {
      events =
        ev.status === "fulfilled"
          ? { value: ev.value, error: null, of: selected }
          : { value: events.of === selected ? events.value : null, error: describeError(ev.reason), of: selected };
    }
    draw();
    // The changes are read on their own, and only when the session moved on.
    const moved = board.value?.sessions.find((x) => x.key === selected)?.last_ms ?? null;
    void changes.refresh(selected, moved);
    if (again) {
      again = false;
      void refresh();
    }
  }

  function draw(): void {
    // An answer given here is shown while its approval is on the board.
    if (board.value !== null) {
      const listed = new Set(board.value.approvals.map(approvalKey));
      for (const [key, given] of answering.answers) {
        if (!listed.has(key) && given.state !== "sending") answering.answers.delete(key);
      }
    }
    patch(live, render(board, events, route, answering, stopping));
    const waiting = board.value?.approvals.length ?? 0;
    document.title = `${waiting > 0 ? `(${waiting}) ` : ""}Sessions · sessionpipe`;
  }

  const timer = window.setInterval(() => {
    if (document.visibilityState === "visible") void refresh();
  }, REFRESH_MS);
  const onFocus = (): void => void refresh();
  const onVisible = (): void => {
    if (document.visibilityState === "visible") void refresh();
  };
  window.addEventListener("focus", onFocus);
  document.addEventListener("visibilitychange", onVisible);
  void refresh();

  return {
    update(next: Route) {
      const changed = next.session !== route.session;
      route = next;
      if (changed) {
        events = { value: null, error: null, of: null };
        // What a Stop said is news for the session it was sent from only
        // while it stays open.
        for (const [key, sent] of stopping.sent) if (sent.state !== "sending") stopping.sent.delete(key);
        draw();
        // Opening a session moves the focus to it (closing it, to the board).
        live.querySelector<HTMLElement>(next.session !== null ? "#detail-h" : "#approvals-h")?.focus();
        void refresh();
      }
    },
    unmount() {
      stopped = true;
      offers.stop();
      changes.stop();
      window.clearInterval(timer);
      window.removeEventListener("focus", onFocus);
      document.removeEventListener("visibilitychange", onVisible);
    },
  };
}

function render(board: Loaded<Overview>, events: Loaded<EventEnvelope[]> & { of: string | null }, route: Route, answering: Answering, stopping: Stopping): HTMLElement {
  const out = h("div");
  const ov = board.value;
  if (board.error !== null) out.append(message("error", h("p", null, `The board could not be read: ${board.error}`)));
  if (ov === null) {
    if (board.error === null) out.append(h("p", { class: "muted" }, "Loading the board…"));
    return out;
  }
  // The daemon keeps running on the last settings that read: say so, with why.
  if (ov.config_problem !== null) {
    out.append(
      message(
        "warn",
        h("p", null, h("strong", null, "config.json does not read"), `: ${ov.config_problem}. `),
        h("p", null, "sessionpipe goes on with the last settings that read; fix the file (or run sessionpipe doctor) and it picks them up."),
      ),
    );
  }
  out.append(
    h(
      "p",
      { class: "muted meta" },
      `Machine ${ov.machine}`,
      ov.daemon !== null ? ` · ${ov.daemon.mode === "daemon" ? "daemon" : ov.daemon.mode} running (pid ${ov.daemon.pid})` : " · no daemon running",
      ` · ${ov.sessions.length} session${ov.sessions.length === 1 ? "" : "s"} on the board`,
    ),
  );
  const layout = h("div", { class: route.session !== null ? "board-layout with-detail" : "board-layout" });
  if (route.session !== null) layout.append(renderDetail(route.session, ov, events, stopping));
  layout.append(h("div", { class: "board-main" }, renderApprovals(ov, answering), renderBoard(ov, route.session)));
  out.append(layout);
  return out;
}

function renderApprovals(ov: Overview, answering: Answering): HTMLElement {
  const titleOf = new Map(ov.sessions.map((s) => [s.key, s] as const));
  return h(
    "section",
    { class: "panel approvals", "aria-labelledby": "approvals-h" },
    h("h2", { id: "approvals-h", tabindex: "-1", "data-focus": "approvals-h" }, "Approvals ", h("span", { class: "count" }, String(ov.approvals.length))),
    ov.approvals.length === 0
      ? h("p", { class: "muted empty" }, "Nothing is waiting for your answer.")
      : h(
          "ul",
          { class: "list" },
          ov.approvals.map((a) => renderApproval(a, titleOf.get(a.session), answering)),
        ),
  );
}

function renderApproval(a: Approval, s: SessionView | undefined, answering: Answering): HTMLElement {
  const what = attentionText(a);
  const harness = s?.harness ?? splitKey(a.session).harness;
  const since = a.time ? ` · ${age((Date.now() - Date.parse(a.time)) / 1000)}` : "";
  return h(
    "li",
    { class: "approval", "data-attention": a.attention_id },
    h(
      "a",
      { class: "row", href: href({ session: a.session }), "data-focus": `a:${a.session}:${a.attention_id}` },
      h("span", { class: `badge kind-${a.kind ?? "unknown"}` }, kindWord(a.kind)),
      h("span", { class: "what" }, what !== "" ? what : "needs you"),
      h("span", { class: "where muted" }, `${a.title} · ${harnessName(harness)}${since}`),
    ),
    renderAnswer(a, what, answering),
  );
}

const DECIDED: Record<ApprovalDecision, string> = {
  allow: "Allowed: the agent goes on.",
  deny: "Denied: the agent was told no.",
};

/** An answerable approval's Allow and Deny, and what became of an answer given here. */
function renderAnswer(a: Approval, what: string, answering: Answering): Child {
  const given = answering.answers.get(approvalKey(a));
  if (given?.state === "answered") return message("ok", h("p", null, DECIDED[given.decision]));
  const failed = given?.state === "failed" ? message("error", h("p", null, `Not answered: ${given.error ?? "the daemon refused it"}`)) : null;
  if (a.answerable !== true) return failed;
  const sending = given?.state === "sending";
  const label = what !== "" ? what : "this prompt";
  const focus = `${a.session}:${a.attention_id}`;
  return h(
    "div",
    { class: "answer" },
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        { type: "button", class: "primary", "data-action": "allow", "data-focus": `allow:${focus}`, "aria-label": `Allow ${label}`, disabled: sending, onclick: () => answering.answer(a, "allow") },
        sending && given.decision === "allow" ? "Allowing…" : "Allow",
      ),
      h(
        "button",
        { type: "button", class: "danger-outline", "data-action": "deny", "data-focus": `deny:${focus}`, "aria-label": `Deny ${label}`, disabled: sending, onclick: () => answering.answer(a, "deny") },
        sending && given.decision === "deny" ? "Denying…" : "Deny",
      ),
    ),
    failed,
  );
}

function renderBoard(ov: Overview, selected: string | null): HTMLElement {
  const groups: SessionState[] = ["needs_you", "working", "done"];
  return h(
    "div",
    { class: "board" },
    groups.map((state) => {
      const sessions = ov.sessions.filter((s) => s.state === state);
      const id = `group-${state}`;
      return h(
        "section",
        { class: `panel group group-${state}`, "data-group": state, "aria-labelledby": id },
        h("h2", { id }, STATE_WORDS[state], " ", h("span", { class: "count" }, String(sessions.length))),
        sessions.length === 0
          ? h("p", { class: "muted empty" }, EMPTY[state])
          : h(
              "ul",
              { class: "list" },
              sessions.map((s) => renderSession(s, s.key === selected)),
            ),
      );
    }),
  );
}

function renderSession(s: SessionView, selected: boolean): HTMLElement {
  const asks = s.attentions.map((a) => {
    const what = attentionText(a);
    return h("span", { class: "ask" }, `${kindWord(a.kind)}${what !== "" ? `: ${what}` : ""}`);
  });
  return h(
    "li",
    { class: `session state-${s.state}`, "data-session": s.key },
    h(
      "a",
      { class: "row", href: href({ session: s.key }), "aria-current": selected ? "true" : null, "data-focus": `s:${s.key}` },
      h("span", { class: "title" }, s.title),
      h(
        "span",
        { class: "sub muted" },
        h("span", { class: "harness" }, harnessName(s.harness)),
        " · ",
        h("span", { class: `state state-${s.state}` }, STATE_WORDS[s.state]),
        " · ",
        h("span", { class: "age", title: new Date(s.last_ms).toLocaleString() }, s.age_s < 5 ? "just now" : `${age(s.age_s)} ago`),
        s.branch ? ` · ${s.branch}` : null,
        s.account ? [" · ", renderAccount(s.account)] : null,
      ),
      asks,
    ),
  );
}

/** The account a session runs on and the window it burns most (`a@x · 5h 93%`). */
function renderAccount(a: SessionAccount): HTMLElement {
  const w = a.window;
  const near = a.near;
  const pace = w?.runs_out_at ? `; at the last hour's pace it runs out around ${when(w.runs_out_at)}` : "";
  const title = w === null ? `Account ${a.id}` : `Account ${a.id}: its fullest window, ${w.id}, is ${w.used_percent}% used${w.resets_at ? `; it resets ${when(w.resets_at)}` : ""}${pace}`;
  const runsOut = w?.runs_out_at ? h("span", { class: "runs-out" }, ` · runs out ~${clock(w.runs_out_at)}`) : null;
  return h("span", { class: `account${near || runsOut ? " near" : ""}`, "data-account": a.id, title }, accountText(a), runsOut);
}

function renderDetail(key: string, ov: Overview, events: Loaded<EventEnvelope[]> & { of: string | null }, stopping: Stopping): HTMLElement {
  const s = ov.sessions.find((x) => x.key === key);
  const { harness, id } = splitKey(key);
  const list = events.of === key ? events.value : null;
  const last = list !== null && list.length > 0 ? list[list.length - 1] : undefined;
  const title = s?.title ?? last?.session.title ?? last?.session.cwd ?? id.slice(0, 8);
  const facts: [string, Child][] = [
    ["Harness", harnessName(harness)],
    ["State", s ? STATE_WORDS[s.state] : "not on the board"],
    ["Folder", s?.cwd ?? last?.session.cwd ?? null],
    ["Repository", s?.repo ?? last?.session.repo ?? null],
    ["Branch", s?.branch ?? last?.session.branch ?? null],
    ["Model", s?.model ?? last?.session.model ?? null],
    ["Account", s?.account ? accountText(s.account) : null],
    ["Link", linkTo(s?.url ?? last?.session.url ?? null)],
    ["Session id", h("code", null, id)],
  ];
  let body: Child;
  if (events.error !== null && list === null) {
    body = message("error", h("p", null, `The events could not be read: ${events.error}`));
  } else if (list === null) {
    body = h("p", { class: "muted" }, "Loading events…");
  } else if (list.length === 0) {
    body = h("p", { class: "muted empty" }, "No events are stored for this session.");
  } else {
    body = h(
      "ol",
      { class: "events", "aria-label": `Recent events, newest first` },
      [...list].reverse().map((e) =>
        h(
          "li",
          { class: "event", "data-type": e.type },
          h("time", { datetime: e.time }, clock(e.time)),
          h("span", { class: "type" }, e.type),
          h("span", { class: "sum" }, summary(e)),
        ),
      ),
    );
  }
  return h(
    "section",
    { class: "panel detail", "aria-labelledby": "detail-h", "data-detail": key },
    h(
      "div",
      { class: "detail-head" },
      h("h2", { id: "detail-h", tabindex: "-1", "data-focus": "detail-h" }, title),
      h("a", { class: "button", href: href({ view: "sessions" }), "data-focus": "close-detail" }, "Close"),
    ),
    h(
      "dl",
      { class: "facts" },
      facts.filter(([, v]) => v !== null && v !== "").map(([k, v]) => [h("dt", null, k), h("dd", null, v)]),
    ),
    renderStop(key, s?.can_stop ?? false, stopping),
    h("h3", null, `Recent events${list !== null && list.length > 0 ? ` (last ${list.length})` : ""}`),
    events.error !== null && list !== null ? message("error", h("p", null, `The events could not be refreshed: ${events.error}`)) : null,
    body,
  );
}

/** Stop while the daemon can end the session's running turn, and what the last one said. */
function renderStop(key: string, can: boolean, stopping: Stopping): Child {
  const sent = stopping.sent.get(key);
  if (!can && sent === undefined) return null;
  return h(
    "div",
    { class: "stop-row" },
    can
      ? h(
          "button",
          { type: "button", class: "danger", "data-focus": "stop", disabled: sent?.state === "sending", onclick: () => stopping.stop(key) },
          sent?.state === "sending" ? "Stopping…" : "Stop",
        )
      : null,
    can ? h("span", { class: "muted" }, " Ends the turn running now, through the harness's own interrupt. What it did so far stays.") : null,
    sent !== undefined && sent.state !== "sending" ? message(sent.state === "done" ? "ok" : "error", h("p", null, sent.words)) : null,
  );
}

function linkTo(url: string | null): Child {
  if (url === null || !/^https?:\/\//.test(url)) return null;
  return h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url);
}

/**
 * The open session's Changes: a section that reads them while it is open,
 * redrawing only when they changed (`drawChanges` keeps open files open).
 */
function mountChanges(api: ViewContext["api"]): {
  element: HTMLElement;
  refresh: (key: string | null, lastMs?: number | null) => Promise<void>;
  stop: () => void;
} {
  const body = h("div", { class: "changes", id: "changes" });
  const section = h("details", { class: "panel changes-section", hidden: true }, h("summary", null, h("h2", { id: "changes-h" }, "Changes")), body);
  let of: string | null = null;
  let drawn = "";
  let stopped = false;
  /** The session's `last_ms` the changes were last read at, and reads asked. */
  let readAt: number | null = null;
  let asked = 0;
  const words = { hidden: "How it changed was not recorded on this machine.", clock };

  async function refresh(key: string | null, lastMs: number | null = null): Promise<void> {
    if (key !== of) {
      of = key;
      drawn = "";
      readAt = null;
      section.open = false;
      body.replaceChildren();
    }
    section.hidden = key === null;
    if (key === null || !section.open) return;
    if (lastMs !== null && lastMs === readAt) return;
    readAt = lastMs;
    const mine = ++asked;
    const { harness, id } = splitKey(key);
    try {
      const got = await api.changes(harness, id);
      const text = JSON.stringify(got);
      if (stopped || key !== of || mine !== asked || text === drawn) return;
      drawn = text;
      drawChanges(body, got, words);
    } catch (e) {
      if (stopped || key !== of || mine !== asked) return;
      drawn = "";
      readAt = null;
      body.replaceChildren(message("error", h("p", null, `The changes could not be read: ${describeError(e)}`)));
    }
  }
  section.addEventListener("toggle", () => {
    if (section.open && body.childElementCount === 0) body.append(h("p", { class: "muted" }, "Loading…"));
    void refresh(of);
  });
  return {
    element: section,
    refresh,
    stop: () => {
      stopped = true;
    },
  };
}
