// Approve a pairing: a machine's terminal shows `<receiver>/pair/<code>` and six
// digits. This screen shows the machine's name and the same digits, and on
// Approve makes the proof (a passkey assertion over
// SHA-256("sessionpipe.pair:" + machine + ":" + code)) and hands over this
// device's key. It says what the page will see of the machine's agents (the
// tier the machine chose; the protocol's sentences).

import { ApiError, api, describeError } from "./api";
import { signerOf, thisCredential, type App, type Mounted } from "./app";
import { h, message, patch, type Child } from "@sessionpipe/web-shared/dom";
import { until } from "./format";
import { HIDDEN_SENTENCE, PAIRING_TIER, TIER_1_SENTENCE } from "@sessionpipe/web-shared/tier-words";
import { passkeyError } from "./passkey";
import { poll } from "./poll";
import type { Route } from "./route";
import { pairProof } from "./sign";
import type { Pairing } from "./types";

type PairRoute = Extract<Route, { view: "pair" }>;

const REFRESH_MS = 3000;

export function mountPair(root: HTMLElement, app: App, route: PairRoute): Mounted {
  let pairing: Pairing | null = null;
  let error: string | null = null;
  let approving = false;
  let done: string | null = null;
  let failed: string | null = null;

  const body = h("div", null, h("p", { class: "muted" }, "Loading the pairing…"));
  root.replaceChildren(h("h1", { tabindex: "-1" }, "Approve a machine"), body);

  const poller = poll(async () => {
    if (approving) return;
    try {
      pairing = await api.pairing(route.code);
      error = null;
    } catch (e) {
      error = e instanceof ApiError && e.status === 404 ? "There is no such pairing: the link may be mistyped, or the pairing is over. Start it again on the machine." : describeError(e);
    }
    draw();
    if (pairing !== null && pairing.status !== "pending") poller.stop();
  }, REFRESH_MS);

  function draw(): void {
    patch(body, h("div", null, render()));
  }

  function render(): Child[] {
    if (done !== null) {
      return [
        message("ok", h("p", null, h("strong", null, `${done} now trusts this device.`)), h("p", null, "The machine finishes pairing on its own within a few seconds.")),
        h("p", null, h("a", { class: "button primary", href: "/#" }, "Go to your sessions")),
      ];
    }
    if (pairing === null) return [error !== null ? message("error", h("p", null, error)) : h("p", { class: "muted" }, "Loading the pairing…")];
    const p = pairing;
    if (p.status === "approved") {
      return [message("ok", h("p", null, `${p.name} is already approved.`)), h("p", null, h("a", { href: "/#" }, "Go to your sessions"))];
    }
    if (p.status === "expired") {
      return [message("warn", h("p", null, `This pairing of ${p.name} has expired. Start it again on the machine, then open the new link.`))];
    }
    const cred = thisCredential(app.me);
    const expires = Date.parse(p.expires_at);
    const approve = h("button", { type: "button", class: "big primary", disabled: approving, "data-focus": "approve" }, approving ? "Waiting for your passkey…" : "Approve");
    approve.addEventListener("click", () => void go(p));
    return [
      h("p", { class: "lead" }, p.first ? "A machine asks to join your account:" : "A machine on your account asks to trust this device:"),
      h("p", { class: "machine-name" }, p.name),
      h("p", { class: "digits-label", id: "digits-label" }, "Its digits:"),
      h("p", { class: "digits", "aria-labelledby": "digits-label" }, h("span", { "aria-hidden": "true" }, `${p.check.slice(0, 3)} ${p.check.slice(3)}`), h("span", { class: "sr-only" }, p.check.split("").join(" "))),
      h("p", { class: "question" }, "Do these digits match the ones on your machine?"),
      h(
        "p",
        { class: "hint" },
        `Approve only if they do. ${p.name} will then trust commands signed on this device (${cred?.name ?? "this device"}): messages, starts, and answers to its permission prompts.`,
        Number.isFinite(expires) ? ` The request ends ${until(expires)}.` : "",
      ),
      h(
        "p",
        { class: "hint" },
        `What this page sees of its agents is chosen on the machine; pairing proposes tier ${PAIRING_TIER}. ${TIER_1_SENTENCE} At tier 0 each request says: “${HIDDEN_SENTENCE}”`,
      ),
      failed !== null ? message("error", h("p", null, failed)) : null,
      h("div", { class: "actions" }, approve, h("a", { class: "button secondary", href: "/#" }, "They don't match")),
    ];
  }

  async function go(p: Pairing): Promise<void> {
    if (approving) return;
    const signer = signerOf(app);
    const cred = thisCredential(app.me);
    if (typeof signer === "string" || cred === null) {
      failed = typeof signer === "string" ? signer : "This device's passkey is not on the account.";
      draw();
      return;
    }
    approving = true;
    failed = null;
    draw();
    try {
      const proof = await pairProof(signer, p.machine, p.code);
      await api.approvePairing(p.code, { id: cred.id, alg: cred.alg, spki: cred.spki }, proof);
      done = p.name;
      poller.stop();
      void app.refreshMe();
    } catch (e) {
      failed =
        e instanceof DOMException
          ? passkeyError(e)
          : e instanceof ApiError && e.reason === "bad_assertion"
            ? "The receiver didn't accept the passkey's proof. Try again; if it keeps failing, sign out and in again on this device."
            : `Not approved: ${describeError(e)}`;
    }
    approving = false;
    draw();
  }

  return { unmount: () => poller.stop() };
}
