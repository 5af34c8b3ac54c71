// What became of a sent command: polls GET /app/api/commands/<id> every second
// until its final ack (paused while the page is hidden), and shows it as steps:
// Sent → Taken → the reply as it grows → Delivered, or why not.

import { ApiError, api, describeError } from "./api";
import { h, type Child } from "@sessionpipe/web-shared/dom";
import { refusalWords } from "./format";
import type { CommandStatus } from "./types";

const POLL_MS = 1000;
const SLOW_MS = 5000;

export interface Watch {
  node: HTMLElement;
  stop: () => void;
}

export interface WatchOptions {
  /** What the command was, for the heading: "Your message", "Allow". */
  what: string;
  /** Said while the command waits to be picked up. */
  offline?: boolean;
  /** Called once, with the final status. */
  onFinal?: (status: CommandStatus) => void;
  /** Extra things to show once it is final (a link to the new session). */
  after?: (status: CommandStatus) => Child;
}

type Step = "done" | "now" | "todo" | "bad";

function step(state: Step, words: string): HTMLElement {
  const mark = state === "done" ? "✓" : state === "bad" ? "✕" : state === "now" ? "…" : "";
  return h(
    "li",
    { class: `step ${state}`, "aria-current": state === "now" ? "step" : null },
    h("span", { class: "dot", "aria-hidden": "true" }, mark),
    words,
  );
}

/** The steps and words for a status (pure: also used to redraw after a reload). */
function render(machine: string, s: CommandStatus | null, opts: WatchOptions, trouble: string | null): Child[] {
  const final = s?.acks.final ?? null;
  const expired = s?.state === "expired" || final?.outcome === "expired";
  const picked = s !== null && s.state !== "queued";
  const taken = s !== null && (s.state === "taken" || s.state === "final" || s.acks.progress !== null);
  const steps: HTMLElement[] = [];
  let line: string;
  let tone: "info" | "ok" | "error" | "warn" = "info";
  let reply: string | undefined = s?.acks.progress?.reply;

  steps.push(step("done", "Sent"));
  if (final !== null && final.outcome !== "expired") {
    reply = final.reply ?? reply;
    switch (final.outcome) {
      case "delivered":
        steps.push(step("done", "Taken"), step("done", "Delivered"));
        line = reply !== undefined && reply !== "" ? "Delivered. The reply:" : "Delivered.";
        tone = "ok";
        break;
      case "refused":
        steps.push(step("bad", "Refused"));
        line = `Refused: ${refusalWords(final.code, final.detail)}.`;
        tone = "error";
        break;
      case "unsupported":
        steps.push(step("bad", "Not supported"));
        line = `Not supported on that machine${final.detail ? `: ${final.detail}` : "."}`;
        tone = "warn";
        break;
      case "failed":
        steps.push(step(taken ? "done" : "bad", "Taken"), step("bad", "Failed"));
        line = `Failed: ${final.detail ?? refusalWords(final.code)}${final.detail?.endsWith(".") ? "" : "."}`;
        tone = "error";
        break;
      default:
        steps.push(step("done", "Taken"), step("now", "Replying"));
        line = "Still going.";
    }
  } else if (expired) {
    steps.push(step("bad", "Expired"));
    line = `Expired: ${machine} didn't pick it up in time. Nothing ran.`;
    tone = "warn";
  } else if (taken) {
    steps.push(step("done", "Taken"), step("now", reply !== undefined ? "Replying" : "Working"), step("todo", "Delivered"));
    line = reply !== undefined ? "The reply so far:" : `Taken: ${machine} handed it over and is waiting for the reply.`;
  } else if (picked) {
    steps.push(step("now", "Taken"), step("todo", "Delivered"));
    line = `${machine} picked it up and is checking the signature.`;
  } else {
    steps.push(step("now", "Taken"), step("todo", "Delivered"));
    line =
      s === null
        ? "Sent to the receiver."
        : `Sent. Waiting for ${machine} to pick it up${opts.offline ? " (it's offline now: it gets it when it's back, within a day)" : ""}.`;
  }

  return [
    h("ol", { class: "steps", "aria-label": `${opts.what}: progress` }, steps),
    h("p", { class: `ack-line ${tone}`, role: "status", "aria-live": "polite" }, line),
    reply !== undefined && reply !== "" ? h("div", { class: "reply" }, reply) : null,
    trouble !== null ? h("p", { class: "hint" }, trouble) : null,
    s !== null && (final !== null || expired) && opts.after ? opts.after(s) : null,
  ];
}

/** Starts watching command `id` sent to the machine called `machine`. */
export function watchCommand(id: string, machine: string, opts: WatchOptions): Watch {
  const body = h("div", { class: "ack-body" });
  const node = h("section", { class: "acks", "aria-label": opts.what }, h("h3", null, opts.what), body);
  let stopped = false;
  let timer: number | undefined;
  let last: CommandStatus | null = null;
  let trouble: string | null = null;
  let drawn = "";

  function draw(): void {
    const next = h("div", null, render(machine, last, opts, trouble));
    if (next.innerHTML === drawn) return;
    drawn = next.innerHTML;
    body.replaceChildren(...Array.from(next.childNodes));
  }

  function schedule(ms: number): void {
    if (stopped) return;
    window.clearTimeout(timer);
    timer = window.setTimeout(() => void tick(), ms);
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    if (document.visibilityState === "hidden") return; // resumed by onVisible
    try {
      last = await api.commandStatus(id);
      trouble = null;
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) {
        trouble = "The receiver no longer has this command.";
        draw();
        stop();
        return;
      }
      trouble = `Can't check on it right now: ${describeError(e)} Trying again.`;
      draw();
      schedule(SLOW_MS);
      return;
    }
    draw();
    if (last.state === "final" || last.state === "expired" || last.acks.final !== null) {
      stop();
      opts.onFinal?.(last);
      return;
    }
    schedule(POLL_MS);
  }

  function onVisible(): void {
    if (document.visibilityState === "visible") schedule(0);
  }

  function stop(): void {
    stopped = true;
    window.clearTimeout(timer);
    document.removeEventListener("visibilitychange", onVisible);
  }

  document.addEventListener("visibilitychange", onVisible);
  draw();
  schedule(POLL_MS);
  return { node, stop };
}
