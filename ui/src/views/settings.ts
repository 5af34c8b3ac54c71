// Settings: machine name, open at login, notifications (tier, turn ends, muted
// harnesses, pause), transcripts, how long events are kept. Saving sends only the keys
// that changed.

import { ApiError, describeError } from "../api";
import { h, message, uid } from "@sessionpipe/web-shared/dom";
import { harnessName } from "../format";
import type { Settings, SettingsChange } from "../types";
import type { Mounted, ViewContext } from "../view";

/** What a notification may show at each tier (core/src/notify.rs). */
const NOTIFY_TIERS: readonly { name: string; text: string }[] = [
  { name: "kind only", text: "That a session needs you and what kind of attention (permission, question, input, waiting, error), with its title or folder." },
  { name: "tool and message", text: "Also the tool and its message, e.g. “Claude Code wants to run Bash” with the command. The default." },
  { name: "conversation", text: "Shows what tier 1 shows: notifications carry no prompt or reply text." },
  { name: "full", text: "Shows what tier 1 shows: a tool's input and output never go into a notification." },
];

/** `retention_days` when unset, and the most it takes (core/src/state/config.rs). */
const RETENTION_DEFAULT = 30;
const RETENTION_MAX = 36500;

/** The days typed, or why they are not days. Empty is the default. */
export function parseRetention(text: string): { days: number } | { error: string } {
  const t = text.trim();
  if (t === "") return { days: RETENTION_DEFAULT };
  if (!/^[0-9]+$/.test(t)) return { error: `Keep events for a whole number of days, 1 to ${RETENTION_MAX}, not “${t}”.` };
  const n = Number(t);
  if (n > RETENTION_MAX) return { error: `Keep events for at most ${RETENTION_MAX} days.` };
  return { days: n === 0 ? RETENTION_DEFAULT : n };
}

/** Harnesses listed for muting when the daemon's list cannot be read. */
const FALLBACK_HARNESSES = ["claude-code", "codex", "gemini-cli", "antigravity", "devin", "grok-build", "cursor", "copilot-cli", "droid", "kiro", "opencode"];

export function mountSettings(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  let stopped = false;
  const body = h("div", { class: "settings-body" }, h("p", { class: "muted" }, "Loading settings…"));
  root.replaceChildren(
    h(
      "section",
      { class: "view", "aria-labelledby": "settings-h" },
      h("h1", { id: "settings-h", tabindex: "-1" }, "Settings"),
      body,
    ),
  );

  async function load(): Promise<void> {
    const [settings, harnesses] = await Promise.allSettled([api.settings(), api.harnesses()]);
    if (stopped) return;
    if (settings.status === "rejected") {
      if (settings.reason instanceof ApiError && settings.reason.unauthorized) return;
      body.replaceChildren(message("error", h("p", null, `The settings could not be read: ${describeError(settings.reason)}`)));
      return;
    }
    const names = harnesses.status === "fulfilled" ? harnesses.value.filter((r) => r.hooks).map((r) => r.harness) : FALLBACK_HARNESSES;
    body.replaceChildren(renderForm(settings.value, [...new Set([...names, ...settings.value.muted])], api.putSettings.bind(api)));
  }

  void load();
  return {
    unmount() {
      stopped = true;
    },
  };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

const LABELS: Record<keyof SettingsChange, string> = {
  machine: "machine name",
  open_at_login: "open at login",
  notify_tier: "notification tier",
  notify_turn_end: "notify on turn end",
  muted: "muted harnesses",
  notifications_paused: "pause notifications",
  retention_days: "days events are kept",
  transcripts: "transcripts",
};

function renderForm(
  initial: Settings,
  harnesses: string[],
  put: (change: SettingsChange) => Promise<Settings>,
): HTMLElement {
  let saved: Settings = initial;
  const ids = {
    machine: uid("machine"),
    machineHelp: uid("machine-help"),
    login: uid("login"),
    loginHelp: uid("login-help"),
    turnEnd: uid("turn-end"),
    paused: uid("paused"),
    retention: uid("retention"),
    retentionHelp: uid("retention-help"),
    transcripts: uid("transcripts"),
    transcriptsHelp: uid("transcripts-help"),
  };
  const transcripts = h("input", {
    id: ids.transcripts,
    name: "transcripts",
    type: "checkbox",
    checked: initial.transcripts,
    "aria-describedby": ids.transcriptsHelp,
  });
  const machine = h("input", {
    id: ids.machine,
    name: "machine",
    type: "text",
    maxlength: 80,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: initial.hostname,
    value: initial.machine ?? "",
    "aria-describedby": ids.machineHelp,
  });
  const login = h("input", { id: ids.login, name: "open_at_login", type: "checkbox", checked: initial.open_at_login, "aria-describedby": ids.loginHelp });
  const turnEnd = h("input", { id: ids.turnEnd, name: "notify_turn_end", type: "checkbox", checked: initial.notify_turn_end });
  const paused = h("input", { id: ids.paused, name: "notifications_paused", type: "checkbox", checked: initial.notifications_paused });
  const tiers = NOTIFY_TIERS.map((t, i) =>
    h(
      "label",
      { class: "radio" },
      h("input", { type: "radio", name: "notify_tier", value: String(i), checked: initial.notify_tier === i }),
      h("span", null, h("strong", null, `${i} · ${t.name}`), h("span", { class: "muted" }, ` — ${t.text}`)),
    ),
  );
  const muted = harnesses.map((name) =>
    h(
      "label",
      { class: "check-inline" },
      h("input", { type: "checkbox", name: "muted", value: name, checked: initial.muted.includes(name) }),
      h("span", null, harnessName(name)),
    ),
  );
  const retention = h("input", {
    id: ids.retention,
    name: "retention_days",
    type: "text",
    inputmode: "numeric",
    maxlength: 5,
    autocomplete: "off",
    placeholder: String(RETENTION_DEFAULT),
    value: String(initial.retention_days),
    "aria-describedby": ids.retentionHelp,
  });
  const status = h("div", { class: "save-status" });
  const button = h("button", { type: "submit", class: "primary" }, "Save settings");

  const form = h(
    "form",
    { class: "settings", novalidate: true },
    h(
      "section",
      { class: "panel", "aria-labelledby": "machine-h" },
      h("h2", { id: "machine-h" }, "This machine"),
      h("div", { class: "field" }, h("label", { for: ids.machine }, "Machine name"), machine),
      h(
        "p",
        { id: ids.machineHelp, class: "help muted" },
        `The name events carry for this machine. Leave it empty to use the hostname (${initial.hostname}).`,
      ),
      h("div", { class: "field check" }, login, h("label", { for: ids.login }, "Open at login")),
      h("p", { id: ids.loginHelp, class: "help muted" }, "Starts the sessionpipe app (tray and notifications) when you log in."),
    ),
    h(
      "section",
      { class: "panel", "aria-labelledby": "notify-h" },
      h("h2", { id: "notify-h" }, "Notifications"),
      h("fieldset", { class: "tiers" }, h("legend", null, "Notification tier: the most a notification's text shows"), tiers),
      h("div", { class: "field check" }, turnEnd, h("label", { for: ids.turnEnd }, "Also notify when a turn ends while you are away")),
      h("fieldset", { class: "muted-harnesses" }, h("legend", null, "Muted harnesses: no notifications from these"), h("div", { class: "inline-checks" }, muted)),
      h("div", { class: "field check" }, paused, h("label", { for: ids.paused }, "Pause all notifications (until you turn this off)")),
    ),
    h(
      "section",
      { class: "panel", "aria-labelledby": "transcripts-h" },
      h("h2", { id: "transcripts-h" }, "Transcripts"),
      h("div", { class: "field check" }, transcripts, h("label", { for: ids.transcripts }, "Read what was asked and answered from the transcripts")),
      h(
        "p",
        { id: ids.transcriptsHelp, class: "help muted" },
        "On, each turn's words (the prompt and the agent's answer, secrets removed) become a turn.transcript event, a tier-2 event: only destinations at tier 2 or 3 receive it, and this machine's board shows it. Off, the transcripts are still read for a session's title and model, never for its words. It applies from the next turn.",
      ),
    ),
    h(
      "section",
      { class: "panel", "aria-labelledby": "keep-h" },
      h("h2", { id: "keep-h" }, "Keeping events"),
      h("div", { class: "field" }, h("label", { for: ids.retention }, "Keep events for (days)"), retention),
      h(
        "p",
        { id: ids.retentionHelp, class: "help muted" },
        `Events older than this are deleted from this machine once every destination has them (${RETENTION_DEFAULT} days when left empty). An event a destination has not taken yet is kept whatever its age, so a paused destination holds them back (sessionpipe status says how many). Sessions themselves stay: their title, folder, and when they were first and last seen.`,
      ),
    ),
    h("div", { class: "actions" }, button),
    status,
  );

  function current(): Required<SettingsChange> {
    const name = machine.value.trim();
    const kept = parseRetention(retention.value);
    const tier = form.querySelector<HTMLInputElement>("input[name=notify_tier]:checked");
    return {
      machine: name === "" ? null : name,
      open_at_login: login.checked,
      notify_tier: tier !== null ? Number(tier.value) : saved.notify_tier,
      notify_turn_end: turnEnd.checked,
      muted: Array.from(form.querySelectorAll<HTMLInputElement>("input[name=muted]:checked")).map((i) => i.value),
      notifications_paused: paused.checked,
      retention_days: "days" in kept ? kept.days : saved.retention_days,
      transcripts: transcripts.checked,
    };
  }

  /** Only the keys whose value differs from what is stored. */
  function changes(): SettingsChange {
    const now = current();
    const out: SettingsChange = {};
    if (now.machine !== saved.machine) out.machine = now.machine;
    if (now.open_at_login !== saved.open_at_login) out.open_at_login = now.open_at_login;
    if (now.notify_tier !== saved.notify_tier) out.notify_tier = now.notify_tier;
    if (now.notify_turn_end !== saved.notify_turn_end) out.notify_turn_end = now.notify_turn_end;
    if (!sameSet(now.muted, saved.muted)) out.muted = now.muted;
    if (now.notifications_paused !== saved.notifications_paused) out.notifications_paused = now.notifications_paused;
    if (now.retention_days !== saved.retention_days) out.retention_days = now.retention_days;
    if (now.transcripts !== saved.transcripts) out.transcripts = now.transcripts;
    return out;
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const kept = parseRetention(retention.value);
    if ("error" in kept) {
      retention.setAttribute("aria-invalid", "true");
      status.replaceChildren(message("error", h("p", null, kept.error)));
      retention.focus();
      return;
    }
    retention.removeAttribute("aria-invalid");
    const change = changes();
    const keys = Object.keys(change) as (keyof SettingsChange)[];
    if (keys.length === 0) {
      status.replaceChildren(message("info", h("p", null, "Nothing changed.")));
      return;
    }
    button.disabled = true;
    button.textContent = "Saving…";
    put(change)
      .then((now) => {
        saved = now;
        retention.value = String(now.retention_days);
        status.replaceChildren(message("ok", h("p", null, `Saved: ${keys.map((k) => LABELS[k]).join(", ")}.`)));
      })
      .catch((err: unknown) => {
        if (err instanceof ApiError && err.unauthorized) return;
        status.replaceChildren(message("error", h("p", null, `The settings were not saved: ${describeError(err)}`)));
      })
      .finally(() => {
        button.disabled = false;
        button.textContent = "Save settings";
      });
  });
  return form;
}
