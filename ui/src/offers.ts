// Offers: a harness found on this machine after setup (its hooks not
// installed, the person has not said no) is offered on the board: Watch it
// (installs its hooks, as the Harnesses page does) or Not now (never offered
// again). It owns only that banner and asks the API every 30 s; it must not
// install anything without the person's click.

import { describeError, type Api } from "./api";
import { h, message } from "@sessionpipe/web-shared/dom";
import { harnessName } from "./format";
import type { HarnessOffer } from "./types";

const LOOK_MS = 30_000;

export function mountOffers(api: Api): { element: HTMLElement; stop(): void } {
  const element = h("div", { class: "offers", "aria-live": "polite" });
  let stopped = false;
  let timer: number | undefined;

  function render(offers: HarnessOffer[], failed: Map<string, string>): void {
    element.replaceChildren(
      ...offers.map((o) => {
        const name = harnessName(o.harness);
        const watch = h("button", { type: "button", class: "primary small-button" }, `Watch ${name}`);
        const no = h("button", { type: "button", class: "small-button" }, "Not now");
        const act = (p: Promise<unknown>) => {
          watch.disabled = no.disabled = true;
          p.then(
            () => void look(),
            (e: unknown) => {
              failed.set(o.harness, describeError(e));
              void look(failed);
            },
          );
        };
        watch.addEventListener("click", () => act(api.setHarness(o.harness, true)));
        no.addEventListener("click", () => act(api.declineOffer(o.harness)));
        const why = failed.get(o.harness);
        return h(
          "section",
          { class: "panel offer", "data-offer": o.harness, "aria-label": `${name} found` },
          h("p", null, h("strong", null, `${name} is on this machine, and sessionpipe does not watch it yet.`), ` Watching it writes sessionpipe's hooks into ${o.files.join(", ")} (your other settings stay as they are).`),
          h("p", { class: "actions" }, watch, " ", no),
          why !== undefined ? message("error", h("p", null, `Not done: ${why}`)) : null,
        );
      }),
    );
  }

  async function look(failed = new Map<string, string>()): Promise<void> {
    window.clearTimeout(timer);
    try {
      const { offers } = await api.offers();
      if (!stopped) render(offers, failed);
    } catch {
      // The board says when the daemon does not answer; nothing to add here.
    }
    if (!stopped) timer = window.setTimeout(() => void look(), LOOK_MS);
  }

  void look();
  return {
    element,
    stop() {
      stopped = true;
      window.clearTimeout(timer);
    },
  };
}
