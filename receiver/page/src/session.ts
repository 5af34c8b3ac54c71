// One session: what it is, Stop while its machine can end the running turn (a
// signed `cancel`, offered only where the receiver says `can_stop`: the
// machine's hello lists the session in `cancels`), the open attention with Allow / Deny (a signed
// `permission.answer`), the timeline (newest at the bottom), its Changes (the
// files each turn changed, each edit's diff at tier 3: drawn by web-shared's
// `changes`), and a box to send it a message (a signed `prompt`), each send
// followed by its acks.
// GET /app/api/sessions/<key> every 3 s while visible; its /changes while
// Changes is open and the session moved on.

import { ApiError, api, describeError } from "./api";
import { machineById, signerOf, type App, type Mounted } from "./app";
import { drawChanges } from "@sessionpipe/web-shared/changes";
import { h, message, patch, type Child } from "@sessionpipe/web-shared/dom";
import { STATE_WORDS, ago, attentionText, clock, cut, eventDetail, harnessName, kindWord, sessionName, turnWords, typeWord } from "./format";
import { poll } from "./poll";
import { sessionHref, type Route } from "./route";
import { send, sendError } from "./send";
import { needsGrant, type Decision } from "./sign";
import type { Attention, Machine, Session, SessionEvent, SessionPage } from "./types";

const REFRESH_MS = 3000;
const SHOWN = 150;
const MAX_TEXT = 20_000;

type SessionRoute = Extract<Route, { view: "session" }>;

interface Answered {
  decision: Decision;
  state: "signing" | "sent" | "failed";
  error?: string;
}

export function mountSession(root: HTMLElement, app: App, first: SessionRoute): Mounted {
  let route = first;
  let page: SessionPage | null = null;
  let error: string | null = null;
  let gone = false;
  let showAll = false;
  let scrolled = false;
  /** Answers given here, by attention id: the buttons stay down once one is sent. */
  const answers = new Map<string, Answered>();
  const watches: { stop: () => void }[] = [];

  const head = h("div", { class: "session-head" }, h("h1", { id: "session-h", tabindex: "-1" }, "Session"));
  const stopSlot = h("div", { class: "stop-slot" });
  /** The Stop sent for the turn running now ("signing" while the passkey is asked). */
  let stopping: "signing" | "sent" | null = null;
  let stopError: string | null = null;
  const attention = h("div", { class: "attention-slot" });
  const answerAcks = h("div", { class: "sent-list" });
  const timeline = h("div", { class: "timeline", tabindex: "0", role: "region", "aria-label": "Timeline, newest at the bottom" });
  const changesBody = h("div", { class: "changes", id: "changes" });
  const changes = h(
    "details",
    { class: "changes-section" },
    h("summary", null, h("h2", { id: "changes-h" }, "Changes")),
    changesBody,
  );
  /** The session's `last_at` the drawn changes were read at, and reads asked. */
  let changesAt: string | null = null;
  let changesAsked = 0;
  changes.addEventListener("toggle", () => {
    if (changes.open) void loadChanges();
  });
  const composer = h("div", { class: "composer-slot" });
  const sentList = h("div", { class: "sent-list" });

  root.replaceChildren(
    h("p", { class: "back" }, h("a", { href: "/#" }, "← All sessions")),
    head,
    stopSlot,
    attention,
    answerAcks,
    h("section", { class: "timeline-section", "aria-labelledby": "timeline-h" }, h("h2", { id: "timeline-h" }, "Timeline"), timeline),
    changes,
    composer,
    sentList,
  );

  const poller = poll(async () => {
    const key = route.key;
    try {
      const next = await api.session(key);
      if (key !== route.key) return;
      page = next;
      error = null;
      gone = false;
    } catch (e) {
      if (key !== route.key) return;
      gone = e instanceof ApiError && e.status === 404;
      error = describeError(e);
    }
    draw();
  }, REFRESH_MS);

  function machine(): Machine | undefined {
    return machineById(app, page?.session.machine_id ?? null);
  }

  /** Reads and draws the changes (when Changes is open and the session moved on). */
  async function loadChanges(): Promise<void> {
    const key = route.key;
    const at = page?.session.last_at ?? null;
    if (changesAt !== null && changesAt === at) return;
    changesAt = at;
    // Only the newest read draws (an older answer may come last).
    const asked = ++changesAsked;
    if (changesBody.childElementCount === 0) changesBody.append(h("p", { class: "muted" }, "Loading…"));
    try {
      const got = await api.changes(key);
      if (key !== route.key || asked !== changesAsked) return;
      const tier = machine()?.hello?.tier;
      const hidden =
        tier !== undefined && tier < 3
          ? `This machine sends the receiver tier ${tier}: which files changed, not how. At tier 3 each edit shows here.`
          : "How it changed did not reach the receiver.";
      drawChanges(changesBody, got, { hidden, clock });
    } catch (e) {
      if (asked !== changesAsked) return;
      changesAt = null;
      changesBody.replaceChildren(message("error", h("p", null, `Can't load the changes: ${describeError(e)}`)));
    }
  }

  function draw(): void {
    if (page === null) {
      patch(head, h("div", null, h("h1", { id: "session-h", tabindex: "-1" }, "Session"), error !== null ? message("error", h("p", null, gone ? "This session is not on the receiver: it may have been forgotten, or the link is wrong." : `Can't load it: ${error}`)) : h("p", { class: "muted" }, "Loading…")));
      return;
    }
    const s = page.session;
    document.title = `${sessionName(s)} · sessionpipe`;
    patch(head, h("div", null, renderHead(s, error)));
    patch(stopSlot, h("div", null, renderStop(s, machine())));
    patch(attention, h("div", null, renderAttention(s, machine())));
    const nearBottom = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 48;
    const changed = patch(timeline, h("div", null, renderTimeline(page.events, showAll, () => { showAll = true; draw(); })));
    if (!scrolled || (changed && nearBottom)) {
      timeline.scrollTop = timeline.scrollHeight;
      scrolled = true;
    }
    if (changes.open) void loadChanges();
    if (composer.childElementCount === 0 || composer.dataset["for"] !== `${s.key}|${s.machine_id ?? ""}`) {
      composer.dataset["for"] = `${s.key}|${s.machine_id ?? ""}`;
      composer.replaceChildren(renderComposer(s, machine()));
    }
  }

  function renderAttention(s: Session, m: Machine | undefined): Child {
    const a = s.attention;
    const fromNotification = route.answer !== null && route.attention !== null;
    if (a === null) {
      return fromNotification
        ? message("info", h("p", null, "That request is no longer waiting: it was answered, cancelled or timed out. Nothing was sent."))
        : null;
    }
    // The receiver's words for it, the notification's (protocol::asked); a
    // receiver older than them leaves the page's own.
    const said = s.attention_words;
    const what = said !== null ? (said.what ?? "") : attentionText(a);
    const hidden = said?.hidden ?? null;
    const machineName = m?.name ?? s.machine ?? "its machine";
    const given = answers.get(a.id);
    const stale = fromNotification && route.attention !== a.id;
    const chosen: Decision | null = fromNotification && route.attention === a.id ? route.answer : null;
    return h(
      "section",
      { class: "card attention", "aria-labelledby": "attention-h" },
      h("h2", { id: "attention-h" }, said?.headline ?? kindWord(a.kind), h("span", { class: "age" }, ago(a.at))),
      what !== "" ? h("p", { class: "ask" }, what) : null,
      said !== null && said.place !== "" ? h("p", { class: "place" }, said.place) : null,
      hidden !== null ? message("warn", h("p", null, hidden)) : null,
      stale ? message("info", h("p", null, "The request you tapped in the notification is no longer waiting; this is a newer one.")) : null,
      a.kind !== "permission"
        ? h("p", { class: "hint" }, "Answer it in a message below: it reaches the agent where it waits.")
        : m === undefined
          ? h("p", { class: "hint" }, `${machineName} is not one of your paired machines, so it can't be answered from here.`)
          : [
              chosen !== null && given === undefined
                ? h("p", { class: "confirm-note" }, `You tapped ${chosen === "allow" ? "Allow" : "Deny"} in the notification. Tap it once more to send it, signed on this device.`)
                : null,
              h(
                "div",
                { class: "answer-row" },
                // What runs is what a person approves: not shown, not offered.
                hidden === null ? answerButton(a, m, "allow", chosen, given) : null,
                answerButton(a, m, "deny", chosen, given),
              ),
              h(
                "p",
                { class: "hint" },
                hidden === null ? `Allow runs ${a.tool ?? "it"} on ${m.name}. ` : "",
                "Deny tells the agent no, and it carries on without it.",
                grantNeeded() ? " Your passkey is asked for once: it lets this device sign for the next 24 hours." : "",
              ),
              given?.state === "failed" ? message("error", h("p", null, given.error ?? "Not sent.")) : null,
            ],
    );
  }

  /** Stop, where the machine says it can end this session's running turn. */
  function renderStop(s: Session, m: Machine | undefined): Child {
    const can = m !== undefined && s.can_stop;
    if (!can) {
      // The turn ended (or the machine no longer offers it): ready for the next.
      if (stopping === "sent") stopping = null;
      return stopError !== null ? message("error", h("p", null, stopError)) : null;
    }
    return h(
      "div",
      { class: "stop-row" },
      h(
        "button",
        { type: "button", class: "big stop", disabled: stopping !== null, "data-focus": "stop", onclick: () => void stop(s, m) },
        stopping === "signing" ? "Signing…" : stopping === "sent" ? "Stopping…" : "Stop",
      ),
      h("span", { class: "hint" }, `Ends the turn running now on ${m.name}, through ${harnessName(s.harness)}'s own interrupt. What it did so far stays.`),
      stopError !== null ? message("error", h("p", null, stopError)) : null,
    );
  }

  async function stop(s: Session, m: Machine): Promise<void> {
    if (stopping !== null) return;
    stopping = "signing";
    stopError = null;
    draw();
    try {
      const sent = await send(app, m, s.key, { kind: "cancel" }, {
        what: "Stop",
        onFinal: (status) => {
          if (status.acks.final?.outcome !== "delivered") stopping = null;
          poller.now();
        },
      });
      stopping = "sent";
      watches.push(sent.watch);
      sentList.prepend(sent.watch.node);
    } catch (e) {
      stopping = null;
      stopError = sendError(e);
    }
    draw();
  }

  /** Whether the next signature asks for the passkey (no grant, or one ending within the hour). */
  function grantNeeded(): boolean {
    const s = signerOf(app);
    return typeof s !== "string" && needsGrant(s);
  }

  function answerButton(a: Attention, m: Machine, decision: Decision, chosen: Decision | null, given: Answered | undefined): HTMLElement {
    const sending = given !== undefined && given.state !== "failed";
    const label = decision === "allow" ? "Allow" : "Deny";
    const words = given?.decision === decision && given.state === "signing" ? "Signing…" : given?.decision === decision && given.state === "sent" ? `${label}: sent` : label;
    return h(
      "button",
      {
        type: "button",
        class: `big ${decision} ${chosen === decision ? "chosen" : ""}`,
        disabled: sending,
        "data-focus": `answer:${decision}`,
        onclick: () => void answer(a, m, decision),
      },
      words,
    );
  }

  async function answer(a: Attention, m: Machine, decision: Decision): Promise<void> {
    const s = page?.session;
    if (s === undefined || answers.get(a.id)?.state === "signing") return;
    answers.set(a.id, { decision, state: "signing" });
    draw();
    try {
      const sent = await send(app, m, s.key, { kind: "permission.answer", for: a.id, decision }, {
        what: decision === "allow" ? `Allow ${a.tool ?? ""}`.trim() : `Deny ${a.tool ?? ""}`.trim(),
        onFinal: (status) => {
          // Not taken (refused, failed, expired): the buttons come back for another try.
          if (status.acks.final?.outcome !== "delivered") answers.delete(a.id);
          poller.now();
        },
      });
      answers.set(a.id, { decision, state: "sent" });
      watches.push(sent.watch);
      answerAcks.prepend(sent.watch.node);
      if (route.answer !== null) history.replaceState(null, "", sessionHref(s.key));
      route = { ...route, answer: null, attention: null };
    } catch (e) {
      answers.set(a.id, { decision, state: "failed", error: sendError(e) });
    }
    draw();
  }

  function renderComposer(s: Session, to: Machine | undefined): HTMLElement {
    if (to === undefined) {
      return h(
        "section",
        { class: "card composer", "aria-labelledby": "composer-h" },
        h("h2", { id: "composer-h" }, "Send a message"),
        h("p", { class: "hint" }, s.machine === null ? "The receiver doesn't know which machine runs this session, so nothing can be sent to it from here." : `${s.machine} is not one of your paired machines, so nothing can be sent to it from here.`),
      );
    }
    const m: Machine = to;
    const text = h("textarea", { id: "message", rows: "3", maxlength: String(MAX_TEXT), required: true, placeholder: "Write to the agent…", "data-focus": "message" });
    const button = h("button", { type: "submit", class: "big primary" }, "Send");
    const out = h("div", { class: "form-out" });
    const form = h(
      "form",
      {
        class: "card composer",
        "aria-labelledby": "composer-h",
        onsubmit: (e: Event) => {
          e.preventDefault();
          void submit();
        },
      },
      h("h2", { id: "composer-h" }, h("label", { for: "message" }, "Send a message")),
      text,
      h(
        "p",
        { class: "hint", id: "message-hint" },
        `Goes to ${harnessName(s.harness)} on ${m.name}, signed on this device. It reaches the agent where it waits, or at the end of its turn.`,
      ),
      h("div", { class: "actions" }, button),
      out,
    );
    text.setAttribute("aria-describedby", "message-hint");
    text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) {
        e.preventDefault();
        form.requestSubmit();
      }
    });

    async function submit(): Promise<void> {
      const words = text.value;
      out.replaceChildren();
      if (words.trim() === "") {
        out.replaceChildren(message("error", h("p", null, "Write something first.")));
        text.focus();
        return;
      }
      button.disabled = true;
      button.textContent = grantNeeded() ? "Waiting for your passkey…" : "Sending…";
      try {
        const sent = await send(app, m, s.key, { kind: "prompt", text: words }, { what: `“${cut(words, 60)}”`, onFinal: () => poller.now() });
        text.value = "";
        watches.push(sent.watch);
        sentList.prepend(sent.watch.node);
      } catch (e) {
        out.replaceChildren(message("error", h("p", null, sendError(e))));
      } finally {
        button.disabled = false;
        button.textContent = "Send";
      }
    }
    return form;
  }

  return {
    unmount() {
      poller.stop();
      for (const w of watches) w.stop();
    },
    update(next) {
      if (next.view !== "session" || next.key !== route.key) return false;
      route = next;
      draw();
      return true;
    },
  };
}

function renderHead(s: Session, error: string | null): Child[] {
  return [
    h("h1", { id: "session-h", tabindex: "-1" }, sessionName(s)),
    h("p", { class: "badges" }, h("span", { class: `badge state ${s.state}` }, STATE_WORDS[s.state]), " ", h("span", { class: "muted" }, `active ${ago(s.last_at)}`)),
    h(
      "dl",
      { class: "facts" },
      fact("Machine", s.machine ?? "unknown"),
      fact("Harness", harnessName(s.harness)),
      s.model ? fact("Model", s.model) : null,
      s.cwd ? fact("Folder", h("span", { class: "folder" }, s.cwd)) : null,
      s.branch ? fact("Branch", h("span", { class: "folder" }, s.branch)) : null,
      fact("Started", clock(s.first_at)),
    ),
    error !== null ? message("error", h("p", null, `Can't refresh right now: ${error}`)) : null,
  ];
}

function fact(term: string, value: Child): HTMLElement[] {
  return [h("dt", null, term), h("dd", null, value)];
}

/** The events worth a line: heartbeats dropped, a running tool's start kept only until it ends, only the newest progress. */
function worthShowing(events: SessionEvent[]): SessionEvent[] {
  const ended = new Set<string>();
  let laterWords = false;
  const out: SessionEvent[] = [];
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const e = events[i];
    if (e === undefined || e.type === "session.heartbeat") continue;
    const call = typeof e.data["call_id"] === "string" ? e.data["call_id"] : null;
    if (e.type === "tool.ended" && call !== null) ended.add(call);
    if (e.type === "tool.started" && call !== null && ended.has(call)) continue;
    if (e.type === "turn.progress") {
      if (laterWords) continue;
      laterWords = true;
    }
    if (e.type === "turn.transcript" || e.type === "turn.ended") laterWords = true;
    out.push(e);
  }
  return out.reverse();
}

function renderTimeline(events: SessionEvent[], showAll: boolean, more: () => void): Child[] {
  const shown = worthShowing(events);
  if (shown.length === 0) return [h("p", { class: "muted" }, "Nothing yet.")];
  const hidden = showAll ? 0 : Math.max(0, shown.length - SHOWN);
  return [
    hidden > 0 ? h("button", { type: "button", class: "link", onclick: more, "data-focus": "more" }, `Show ${hidden} earlier`) : null,
    h("ol", { class: "events" }, shown.slice(hidden).map(eventItem)),
  ];
}

function eventItem(e: SessionEvent): HTMLElement {
  const words = turnWords(e);
  const detail = eventDetail(e);
  const running = e.type === "tool.started";
  return h(
    "li",
    { class: `event t-${e.type.replace(/\./g, "-")}` },
    h(
      "div",
      { class: "event-line" },
      h("time", { datetime: e.time }, clock(e.time)),
      h("span", { class: "type" }, running ? "Running" : typeWord(e.type)),
      detail !== "" ? h("span", { class: "detail" }, detail) : null,
    ),
    words.user !== undefined ? h("div", { class: "bubble user" }, h("span", { class: "who" }, "You"), words.user) : null,
    words.assistant !== undefined ? h("div", { class: "bubble agent" }, h("span", { class: "who" }, e.type === "turn.progress" ? "Agent, so far" : "Agent"), words.assistant) : null,
  );
}
