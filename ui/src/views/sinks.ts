// Sinks: where events go. Each with its tier, pii, paused reason, last error and
// lag; add (a token is sent once and never shown again), test, remove.

import { ApiError, describeError } from "../api";
import { h, message, uid, type Child } from "@sessionpipe/web-shared/dom";
import { TIERS, tierName } from "../format";
import type { NewSink, SinkTest, SinkView } from "../types";
import type { Mounted, ViewContext } from "../view";

interface SinkUi {
  test?: SinkTest | { error: string };
  testing?: boolean;
  confirming?: boolean;
  removing?: boolean;
  error?: string;
}

export function mountSinks(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  let sinks: SinkView[] | null = null;
  let loadError: string | null = null;
  let stopped = false;
  const ui = new Map<string, SinkUi>();
  let notice: { kind: "ok" | "error"; text: string } | null = null;

  const listArea = h("div", { class: "sink-list" }, h("p", { class: "muted" }, "Loading sinks…"));
  const noticeArea = h("div", { class: "notice-area" });
  const form = renderForm(async (sink) => {
    try {
      const added = await api.addSink(sink);
      notice =
        added.tier < sink.tier
          ? { kind: "ok", text: `Added ${added.added}. The receiver takes tier ${added.tier} at most, so the sink is tier ${added.tier}.` }
          : { kind: "ok", text: `Added ${added.added}.` };
      await load();
      drawNotice();
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return false;
      notice = { kind: "error", text: `The sink was not added: ${describeError(e)}` };
      drawNotice();
      return false;
    }
  });

  root.replaceChildren(
    h(
      "section",
      { class: "view", "aria-labelledby": "sinks-h" },
      h("h1", { id: "sinks-h", tabindex: "-1" }, "Sinks"),
      h(
        "p",
        { class: "lead" },
        "A sink is a destination for this machine's events: an HTTPS receiver, a file or stdout. Each one gets only what its tier lets through, with secrets always redacted first.",
      ),
      h("section", { class: "sinks-current", "aria-labelledby": "sinks-list-h" }, h("h2", { id: "sinks-list-h" }, "Your sinks"), listArea),
      noticeArea,
      form,
    ),
  );

  function drawNotice(): void {
    noticeArea.replaceChildren(notice === null ? "" : message(notice.kind, h("p", null, notice.text)));
  }

  async function load(): Promise<void> {
    try {
      sinks = await api.sinks();
      loadError = null;
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return;
      loadError = describeError(e);
    }
    if (!stopped) draw();
  }

  function set(id: string, patchUi: Partial<SinkUi>): void {
    ui.set(id, { ...(ui.get(id) ?? {}), ...patchUi });
    draw();
  }

  async function test(id: string): Promise<void> {
    const current: SinkUi = { ...(ui.get(id) ?? {}), testing: true };
    delete current.test;
    ui.set(id, current);
    draw();
    try {
      const result = await api.testSink(id);
      set(id, { testing: false, test: result });
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return;
      set(id, { testing: false, test: { error: describeError(e) } });
    }
    focusIn(id, "[data-action=test]");
  }

  async function remove(id: string): Promise<void> {
    set(id, { removing: true });
    try {
      const r = await api.removeSink(id);
      ui.delete(id);
      notice = { kind: "ok", text: `Removed ${r.removed}.` };
      drawNotice();
      await load();
      document.getElementById("sinks-list-h")?.setAttribute("tabindex", "-1");
      document.getElementById("sinks-list-h")?.focus();
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) return;
      set(id, { removing: false, confirming: false, error: `The sink was not removed: ${describeError(e)}` });
    }
  }

  function focusIn(id: string, selector: string): void {
    listArea.querySelector<HTMLElement>(`[data-sink="${CSS.escape(id)}"] ${selector}`)?.focus();
  }

  function draw(): void {
    if (sinks === null) {
      if (loadError !== null) listArea.replaceChildren(message("error", h("p", null, `The sinks could not be read: ${loadError}`)));
      return;
    }
    listArea.replaceChildren(
      loadError !== null ? message("error", h("p", null, `The sinks could not be refreshed: ${loadError}`)) : "",
      sinks.length === 0
        ? h("p", { class: "muted empty" }, "No sinks yet: events stay on this machine. Add one below.")
        : h(
            "ul",
            { class: "sinks" },
            sinks.map((s) =>
              renderSink(s, ui.get(s.id) ?? {}, {
                test: () => void test(s.id),
                askRemove: () => {
                  set(s.id, { confirming: true });
                  focusIn(s.id, "[data-action=confirm-remove]");
                },
                cancelRemove: () => {
                  set(s.id, { confirming: false });
                  focusIn(s.id, "[data-action=remove]");
                },
                remove: () => void remove(s.id),
              }),
            ),
          ),
    );
  }

  void load();
  return {
    unmount() {
      stopped = true;
    },
  };
}

function targetText(s: SinkView): string {
  if (s.kind === "http") return s.url ?? "";
  if (s.kind === "file") return `file:${s.path ?? ""}`;
  return "stdout";
}

interface SinkActions {
  test: () => void;
  askRemove: () => void;
  cancelRemove: () => void;
  remove: () => void;
}

function renderSink(s: SinkView, state: SinkUi, act: SinkActions): HTMLElement {
  const headId = `sink-${s.id}`;
  const facts: [string, Child][] = [
    ["Id", h("code", null, s.id)],
    ["Tier", `${s.tier} · ${tierName(s.tier)}`],
    ["pii@1", s.pii ? "on: emails, phone numbers and home paths are masked" : "off"],
    ["Lag", s.behind === 0 ? "up to date" : `${s.behind} event${s.behind === 1 ? "" : "s"} behind`],
    ["Paused", s.paused],
    ["Last error", s.last_error],
    [
      "Receiver",
      s.discovery !== null
        ? `takes tier ${s.discovery.max_tier} at most; capabilities: ${s.discovery.capabilities.join(", ") || "none"}`
        : null,
    ],
    ["Added", new Date(s.added_at).toLocaleString()],
  ];
  let result: Child = null;
  if (state.testing) {
    result = h("p", { class: "muted", role: "status" }, "Testing…");
  } else if (state.test !== undefined) {
    result =
      "error" in state.test
        ? message("error", h("p", null, `The test failed to run: ${state.test.error}`))
        : message(
            state.test.ok ? "ok" : "error",
            h("p", null, state.test.ok ? "Test passed (nothing was sent):" : "Test found a problem:"),
            h("pre", { class: "lines" }, state.test.lines.join("\n")),
          );
  }
  return h(
    "li",
    { class: `panel sink${s.paused ? " paused" : ""}`, "data-sink": s.id, "aria-labelledby": headId },
    h(
      "div",
      { class: "sink-head" },
      h("h3", { id: headId }, h("code", null, targetText(s))),
      h("span", { class: "badge" }, `tier ${s.tier}`),
      s.pii ? h("span", { class: "badge" }, "pii") : null,
      s.paused ? h("span", { class: "badge warn" }, "paused") : null,
    ),
    h(
      "dl",
      { class: "facts" },
      facts.filter(([, v]) => v !== null && v !== "").map(([k, v]) => [h("dt", null, k), h("dd", null, v)]),
    ),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", "data-action": "test", disabled: state.testing === true, onclick: act.test }, "Test"),
      state.confirming
        ? [
            h("span", { class: "confirm-text" }, "Remove this sink and its stored token?"),
            h("button", { type: "button", class: "danger", "data-action": "confirm-remove", disabled: state.removing === true, onclick: act.remove }, "Remove"),
            h("button", { type: "button", "data-action": "cancel-remove", onclick: act.cancelRemove }, "Cancel"),
          ]
        : h("button", { type: "button", class: "danger-outline", "data-action": "remove", onclick: act.askRemove }, "Remove…"),
    ),
    state.error !== undefined ? message("error", h("p", null, state.error)) : null,
    result,
  );
}

function renderForm(submit: (sink: NewSink) => Promise<boolean>): HTMLElement {
  const targetId = uid("sink-target");
  const targetHelp = uid("sink-target-help");
  const tokenId = uid("sink-token");
  const tokenHelp = uid("sink-token-help");
  const webhookId = uid("sink-webhook");
  const webhookHelp = uid("sink-webhook-help");
  const piiId = uid("sink-pii");
  const target = h("input", {
    id: targetId,
    name: "target",
    type: "text",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "https://…, file:/absolute/path.jsonl or stdout",
    "aria-describedby": targetHelp,
  });
  const token = h("input", { id: tokenId, name: "token", type: "password", autocomplete: "new-password", "aria-describedby": tokenHelp });
  const webhook = h("input", { id: webhookId, name: "webhook_secret", type: "password", autocomplete: "new-password", "aria-describedby": webhookHelp });
  const pii = h("input", { id: piiId, name: "pii", type: "checkbox" });
  const tiers = TIERS.map((t, i) =>
    h(
      "label",
      { class: "radio" },
      h("input", { type: "radio", name: "tier", value: String(i), checked: i === 0 }),
      h("span", null, h("strong", null, `${i} · ${t.name}`), h("span", { class: "muted" }, ` — ${t.adds}`)),
    ),
  );
  const button = h("button", { type: "submit", class: "primary" }, "Add sink");
  const form = h(
    "form",
    { class: "panel add-sink", "aria-labelledby": "add-sink-h", novalidate: true },
    h("h2", { id: "add-sink-h" }, "Add a sink"),
    h("div", { class: "field" }, h("label", { for: targetId }, "Destination"), target),
    h(
      "p",
      { id: targetHelp, class: "help muted" },
      "An HTTPS receiver (plain http only on localhost; its discovery document is read when you add it), file: with an absolute path (one JSON event a line), or stdout.",
    ),
    h("fieldset", { class: "tiers" }, h("legend", null, "Tier: what this sink receives"), tiers),
    h(
      "div",
      { class: "field check" },
      pii,
      h("label", { for: piiId }, "pii@1: mask emails, phone numbers and home paths, hash the machine name, drop account ids"),
    ),
    h("div", { class: "field" }, h("label", { for: tokenId }, "Bearer token (optional)"), token),
    h(
      "p",
      { id: tokenHelp, class: "help muted" },
      "Sent to the daemon once and kept in the keychain (or a 0600 file): it is never shown again, here or anywhere.",
    ),
    h(
      "details",
      { class: "advanced" },
      h("summary", null, "Webhook signing (optional)"),
      h("div", { class: "field" }, h("label", { for: webhookId }, "Webhook secret"), webhook),
      h("p", { id: webhookHelp, class: "help muted" }, "A whsec_… secret: each batch is signed with it (webhook-id, webhook-timestamp, webhook-signature). Stored like the token, never shown again."),
    ),
    h("div", { class: "actions" }, button),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const value = target.value.trim();
    if (value === "") {
      target.setAttribute("aria-invalid", "true");
      target.focus();
      return;
    }
    target.removeAttribute("aria-invalid");
    const checked = form.querySelector<HTMLInputElement>("input[name=tier]:checked");
    const sink: NewSink = { target: value, tier: Number(checked?.value ?? "0"), pii: pii.checked };
    if (token.value !== "") sink.token = token.value;
    if (webhook.value !== "") sink.webhook_secret = webhook.value;
    button.disabled = true;
    button.textContent = "Adding…";
    void submit(sink).then((ok) => {
      button.disabled = false;
      button.textContent = "Add sink";
      if (ok) {
        form.reset();
        token.value = "";
        webhook.value = "";
      }
    });
  });
  return form;
}
