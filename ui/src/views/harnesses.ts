// Harnesses: a switch per harness that installs or removes its hooks, each file's
// state and, for skipped or inactive, why. A harness's note is shown once, when
// its hooks are installed. An ACP agent installed here is marked drivable over
// ACP, beside its hooks or, when it has none, as a row of its own.

import { ApiError, describeError } from "../api";
import { h, message, prose, type Child } from "@sessionpipe/web-shared/dom";
import { harnessName } from "../format";
import type { AcpAgent, FileReport, HarnessReport } from "../types";
import type { Mounted, ViewContext } from "../view";

/** States in which our hooks are in the file. */
const PRESENT = new Set(["current", "outdated", "installed"]);

const STATE_WORDS: Record<string, string> = {
  current: "installed, up to date",
  outdated: "installed, out of date",
  missing: "not installed",
  skipped: "skipped",
  inactive: "inactive",
  kept: "kept (your own entry holds its place)",
  installed: "installed",
  would_install: "would install",
  removed: "removed",
  would_remove: "would remove",
  not_installed: "not installed",
};

interface Outcome {
  kind: "ok" | "error" | "info";
  text: string;
  note?: string | null;
}

export function mountHarnesses(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  let reports: HarnessReport[] | null = null;
  let loadError: string | null = null;
  const outcomes = new Map<string, Outcome>();
  const pending = new Set<string>();
  let stopped = false;

  const list = h("div", { class: "harness-list" }, h("p", { class: "muted" }, "Loading harnesses…"));
  root.replaceChildren(
    h(
      "section",
      { class: "view", "aria-labelledby": "harnesses-h" },
      h("h1", { id: "harnesses-h", tabindex: "-1" }, "Harnesses"),
      h(
        "p",
        { class: "lead" },
        "Turning a harness on writes sessionpipe's hook entries into that harness's own settings files on this machine; turning it off removes exactly those entries and leaves everything else in the files as it was.",
      ),
      h(
        "p",
        { class: "muted" },
        "An ACP agent installed here (its CLI on PATH, or the file SESSIONPIPE_ACP_<HARNESS> names) is one control can start and drive over the Agent Client Protocol; nothing is downloaded.",
      ),
      list,
    ),
  );

  async function load(): Promise<void> {
    try {
      reports = await api.harnesses();
      loadError = null;
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return;
      loadError = describeError(e);
    }
    if (!stopped) draw();
  }

  async function toggle(name: string, on: boolean): Promise<void> {
    pending.add(name);
    outcomes.delete(name);
    draw(name);
    try {
      const [report] = await api.setHarness(name, on);
      if (report === undefined) throw new Error("The daemon answered with no report.");
      const skipped = report.files.filter((f) => f.state === "skipped" || f.state === "inactive");
      if (skipped.length > 0) {
        outcomes.set(name, { kind: "error", text: report.line });
      } else {
        outcomes.set(name, { kind: "ok", text: report.line, note: on ? report.note : null });
      }
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return;
      outcomes.set(name, { kind: "error", text: `${on ? "Installing" : "Removing"} the hooks failed: ${describeError(e)}` });
    } finally {
      pending.delete(name);
    }
    await load();
    document.getElementById(`switch-${name}`)?.focus();
  }

  function draw(focusName?: string): void {
    if (loadError !== null && reports === null) {
      list.replaceChildren(message("error", h("p", null, `The harnesses could not be read: ${loadError}`)));
      return;
    }
    if (reports === null) return;
    list.replaceChildren(
      loadError !== null ? message("error", h("p", null, `The harnesses could not be refreshed: ${loadError}`)) : "",
      ...reports.map((r) => renderHarness(r, pending.has(r.harness), outcomes.get(r.harness), toggle, () => {
        outcomes.delete(r.harness);
        draw();
      })),
    );
    if (focusName !== undefined) document.getElementById(`switch-${focusName}`)?.focus();
  }

  void load();
  return {
    unmount() {
      stopped = true;
    },
  };
}

/** The ACP facts of a harness: drivable over ACP (or by its own driver), and the program found. */
function renderAcp(a: AcpAgent): HTMLElement {
  return h(
    "p",
    { class: "acp" },
    a.over_acp
      ? h("span", { class: "badge acp" }, "Drivable over ACP")
      : h("span", { class: "badge" }, "ACP agent, driven by its own driver"),
    " ",
    h("code", { class: "small" }, a.program),
  );
}

/** An ACP agent installed here that has no hooks: drivable, reporting no events of its own. */
function renderAcpOnly(r: HarnessReport, a: AcpAgent): HTMLElement {
  const headId = `h-${r.harness}`;
  return h(
    "section",
    { class: "panel harness acp-only", "data-harness": r.harness, "aria-labelledby": headId },
    h(
      "div",
      { class: "harness-head" },
      h("h2", { id: headId }, a.product, " ", h("code", { class: "muted small" }, r.harness)),
      h("span", { class: "badge no-hooks" }, "No hooks"),
    ),
    h(
      "div",
      { class: "harness-state" },
      renderAcp(a),
      h("p", { class: "muted" }, `${a.product} has no hooks, so it reports nothing of its own; control can start its sessions over ACP.`),
    ),
  );
}

function renderHarness(
  r: HarnessReport,
  busy: boolean,
  outcome: Outcome | undefined,
  toggle: (name: string, on: boolean) => Promise<void>,
  dismiss: () => void,
): HTMLElement {
  if (!r.hooks && r.acp !== null) return renderAcpOnly(r, r.acp);
  const found = r.files.length > 0;
  const on = r.files.some((f) => PRESENT.has(f.state));
  const name = harnessName(r.harness);
  const headId = `h-${r.harness}`;
  const descId = `d-${r.harness}`;
  let control: Child;
  if (found) {
    control = h(
      "label",
      { class: "switch" },
      h("input", {
        type: "checkbox",
        role: "switch",
        id: `switch-${r.harness}`,
        checked: on,
        disabled: busy,
        "aria-describedby": descId,
        onchange: (e: Event) => {
          const input = e.currentTarget as HTMLInputElement;
          void toggle(r.harness, input.checked);
        },
      }),
      h("span", { class: "switch-text" }, `${name} hooks`),
    );
  } else {
    control = h("span", { class: "badge not-found" }, "Not found");
  }
  const summary = found ? (busy ? "working…" : r.summary) : "not found";
  return h(
    "section",
    { class: "panel harness", "data-harness": r.harness, "aria-labelledby": headId, "aria-busy": busy ? "true" : null },
    h(
      "div",
      { class: "harness-head" },
      h("h2", { id: headId }, name, " ", h("code", { class: "muted small" }, r.harness)),
      control,
    ),
    h(
      "div",
      { id: descId, class: "harness-state" },
      found
        ? h(
            "p",
            null,
            h("span", { class: `badge summary-${r.summary.replace(/\s+/g, "_")}` }, summary),
            r.summary === "outdated" && !busy
              ? h("button", { type: "button", class: "small-button", onclick: () => void toggle(r.harness, true) }, "Bring up to date")
              : null,
          )
        : h(
            "p",
            { class: "muted" },
            r.acp !== null
              ? `${name}'s settings were not found, so no hooks are written for it.`
              : `${name} was not found on this machine, so nothing is written for it.`,
            r.looked_for !== undefined && r.looked_for.length > 0 ? ` Looked for: ${r.looked_for.join(", ")}.` : "",
          ),
      found ? h("ul", { class: "files" }, r.files.map(renderFile)) : null,
      r.acp !== null ? renderAcp(r.acp) : null,
    ),
    outcome !== undefined
      ? message(
          outcome.kind,
          h("p", null, outcome.text),
          outcome.note ? h("p", { class: "note" }, h("strong", null, "Note: "), ...prose(outcome.note)) : null,
          h("button", { type: "button", class: "link", onclick: dismiss }, "Dismiss"),
        )
      : null,
  );
}

function renderFile(f: FileReport): HTMLElement {
  const place = f.entry !== undefined ? `${f.entry} in ` : "";
  return h(
    "li",
    { class: `file state-${f.state}` },
    place,
    h("code", null, f.path),
    ": ",
    h("span", { class: "state" }, STATE_WORDS[f.state] ?? f.state),
    "reason" in f ? h("span", { class: "reason" }, ` — ${f.reason}`) : null,
  );
}
