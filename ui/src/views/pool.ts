// Pool: the account pool's switch, live (`GET /api/pool`, `POST /api/pool/on|off`,
// what `sessionpipe pool on|off` does), the vendor's-terms warning, each account
// as a card (status, windows as meters, sign-in expiry, pinned sessions, its
// enabled switch and Remove), Import (`pool add --import`), and what turning
// it on reads, writes and sends (the consent parts). Refreshed every 3 s.
//
// It owns this screen's state and calls only the pool API. It must not turn
// anything on by itself: only the person's click changes the switch or an
// account, a failed change puts the switch back to what the daemon says, and
// a refresh never moves a switch while a change is on its way. It never shows
// a credential (the API holds none) and never signs an account in: `pool add
// --login` needs a pasted code and stays at the terminal.

import "./pool.css";
import { ApiError, describeError } from "../api";
import { h, message, patch, prose, uid, type Child } from "@sessionpipe/web-shared/dom";
import { when, windowName } from "../format";
import type { LimitWindow, PoolAccount, PoolState } from "../types";
import { refreshing, type Mounted, type ViewContext } from "../view";
import { consentHead, consentParts } from "./consent";

const REFRESH_MS = 3000;

const ON_DOES =
  "Turning it on writes three keys into `env` of every Claude Code config dir's `settings.json`, pointing Claude Code at this daemon's listener on 127.0.0.1: from then on each Claude Code request goes out with one of the accounts below. Turning it off takes exactly those keys out again. A Claude Code already running picks the change up when it starts again.";

const WARNING =
  "Routing a subscription through a proxy may be against the vendor's terms (Anthropic's, for Claude). Read them before you turn the pool on: it is your call, and your accounts.";

const STATUS_WORDS: Record<string, string> = {
  allowed: "Allowed",
  allowed_warning: "Near a limit",
  rejected: "Rejected",
  unknown: "Nothing heard yet",
  sign_in_again: "Sign in again",
  no_sign_in: "No sign-in",
  expired: "Sign-in expired",
};

/** What the page is doing for one account, beside what the daemon says. */
interface AccountUi {
  busy?: boolean;
  confirming?: boolean;
  error?: string | undefined;
}

interface Notice {
  kind: "ok" | "error" | "info";
  text: string;
}

export function mountPool(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  const head = consentHead("pool");
  let state: PoolState | null = null;
  let loadError: string | null = null;
  let switching = false;
  let importing = false;
  let stopped = false;
  let switchNotice: Notice | null = null;
  let notice: Notice | null = null;
  const ui = new Map<string, AccountUi>();
  const ids = { status: uid("pool-status"), does: uid("pool-does"), warning: uid("pool-warning") };

  const toggle = h("input", {
    type: "checkbox",
    role: "switch",
    disabled: true,
    checked: false,
    "aria-describedby": `${ids.warning} ${ids.does} ${ids.status}`,
  });
  const status = h("div", { id: ids.status, class: "pool-status" }, h("p", { class: "muted" }, "Reading the pool…"));
  const accountsArea = h("div", { class: "pool-accounts" }, h("p", { class: "muted" }, "Loading the accounts…"));
  const noticeArea = h("div", { class: "notice-area" });
  const importButton = h("button", { type: "button", "data-action": "import" }, "Import Claude Code's sign-in");
  root.replaceChildren(
    h(
      "section",
      { class: "view consent pool", "aria-labelledby": "pool-h", "data-pool": "" },
      h("h1", { id: "pool-h", tabindex: "-1" }, head.title),
      h("p", { class: "lead" }, head.lead),
      h(
        "div",
        { id: ids.warning, class: "message warn pool-warning", role: "note", "data-pool-warning": "" },
        h("p", null, h("strong", null, "Check the vendor's terms. "), WARNING),
      ),
      h(
        "div",
        { class: "panel" },
        h("label", { class: "switch" }, toggle, h("span", { class: "switch-text" }, head.switchLabel)),
        h("p", { id: ids.does, class: "muted" }, ...prose(ON_DOES)),
        status,
      ),
      h(
        "section",
        { class: "pool-current", "aria-labelledby": "pool-accounts-h" },
        h("h2", { id: "pool-accounts-h", tabindex: "-1" }, "Accounts"),
        accountsArea,
        noticeArea,
        h(
          "div",
          { class: "panel pool-add" },
          h("h3", null, "Add an account"),
          h(
            "p",
            { class: "muted" },
            ...prose(
              "Import copies the sign-in of every Claude Code config dir on this machine into sessionpipe's secrets store (Claude Code's own stays where it is): what `sessionpipe pool add --import` does. To sign another account in, run `sessionpipe pool add --login` in a terminal here.",
            ),
          ),
          h("div", { class: "actions" }, importButton),
        ),
      ),
      h("p", { class: "muted" }, "What it does, exactly:"),
      consentParts("pool"),
    ),
  );

  function draw(): void {
    if (state !== null && !switching) {
      toggle.checked = state.on;
      // Off with no account to route to: the daemon would refuse (`pool on` does).
      toggle.disabled = !state.on && !state.accounts.some((a) => a.enabled);
    }
    // Patched, not replaced: a message redrawn every 3 s would be read out again.
    patch(status, h("div", null, switchNotice !== null ? message(switchNotice.kind, h("p", null, switchNotice.text)) : null, stateText(state, loadError)));
    patch(accountsArea, renderAccounts(state, loadError, ui, actions));
    patch(noticeArea, h("div", null, notice === null ? null : message(notice.kind, h("p", null, notice.text))));
    importButton.disabled = importing;
    importButton.textContent = importing ? "Importing…" : "Import Claude Code's sign-in";
  }

  // Bumped by every change: a read that began before one is stale when it ends.
  let changes = 0;

  async function load(): Promise<void> {
    const began = changes;
    try {
      const next = await api.pool();
      if (stopped || began !== changes) return;
      state = next;
      loadError = null;
    } catch (e) {
      if (stopped || (e instanceof ApiError && e.unauthorized)) return;
      loadError = describeError(e);
    }
    draw();
  }

  toggle.addEventListener("change", () => {
    const on = toggle.checked;
    changes += 1;
    switching = true;
    toggle.disabled = true;
    switchNotice = { kind: "info", text: on ? "Turning the pool on…" : "Turning the pool off…" };
    draw();
    api
      .setPool(on)
      .then((next) => {
        if (stopped) return;
        state = next;
        const files = next.settings.map((f) => `${f.file}: ${f.outcome}`).join("; ");
        switchNotice = { kind: "ok", text: `${on ? "Turned on" : "Turned off"}${files !== "" ? ` (${files})` : ""}.` };
      })
      .catch((e: unknown) => {
        if (stopped) return;
        switchNotice = { kind: "error", text: `Not changed: ${describeError(e)}` };
      })
      .finally(() => {
        if (stopped) return;
        switching = false;
        // `draw` puts the switch where the daemon says, changed or not.
        draw();
        void load();
      });
  });

  function set(id: string, change: Partial<AccountUi>): void {
    if (change.busy === true) changes += 1;
    ui.set(id, { ...(ui.get(id) ?? {}), ...change });
    draw();
  }

  function focusIn(id: string, selector: string): void {
    accountsArea.querySelector<HTMLElement>(`[data-account="${CSS.escape(id)}"] ${selector}`)?.focus();
  }

  const actions: AccountActions = {
    setEnabled(a, enabled) {
      set(a.id, { busy: true, error: undefined });
      api
        .setPoolAccount(a.id, enabled)
        .then((next) => {
          if (stopped) return;
          state = next;
          set(a.id, { busy: false });
        })
        .catch((e: unknown) => {
          if (stopped || (e instanceof ApiError && e.unauthorized)) return;
          set(a.id, { busy: false, error: `Not changed: ${describeError(e)}` });
        })
        .finally(() => {
          if (!stopped) focusIn(a.id, "[data-action=enabled]");
        });
    },
    askRemove(a) {
      set(a.id, { confirming: true });
      focusIn(a.id, "[data-action=confirm-remove]");
    },
    cancelRemove(a) {
      set(a.id, { confirming: false });
      focusIn(a.id, "[data-action=remove]");
    },
    remove(a) {
      set(a.id, { busy: true, error: undefined });
      api
        .removePoolAccount(a.id)
        .then((next) => {
          if (stopped) return;
          ui.delete(a.id);
          state = next;
          notice = { kind: "ok", text: `Removed ${a.email ?? a.id} and its stored sign-in.` };
          draw();
          document.getElementById("pool-accounts-h")?.focus();
        })
        .catch((e: unknown) => {
          if (stopped || (e instanceof ApiError && e.unauthorized)) return;
          set(a.id, { busy: false, confirming: false, error: `Not removed: ${describeError(e)}` });
        });
    },
  };

  importButton.addEventListener("click", () => {
    changes += 1;
    importing = true;
    notice = null;
    draw();
    api
      .importPool()
      .then((next) => {
        if (stopped) return;
        state = next;
        const names = next.added.map((a) => `${a.again ? "updated" : "added"} ${a.email ?? a.id}${a.from ? ` from ${a.from}` : ""}`);
        notice = { kind: "ok", text: `Imported: ${names.join("; ")}.` };
      })
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.unauthorized) return;
        notice = { kind: "error", text: `Nothing imported: ${describeError(e)}` };
      })
      .finally(() => {
        importing = false;
        if (!stopped) draw();
      });
  });

  return refreshing(load, REFRESH_MS, () => {
    stopped = true;
  });
}

/** The switch's state, in words. */
function stateText(state: PoolState | null, loadError: string | null): Child {
  if (state === null) {
    return loadError !== null
      ? message("error", h("p", null, `The pool could not be read: ${loadError}`))
      : h("p", { class: "muted" }, "Reading the pool…");
  }
  const error = loadError !== null ? message("error", h("p", null, `The pool could not be refreshed: ${loadError}`)) : null;
  if (state.on) {
    return [
      error,
      message(
        "ok",
        h("p", null, h("strong", null, "On. "), `Claude Code's requests go through the listener on 127.0.0.1${state.port !== null ? `:${state.port}` : ""}, each with one of your enabled accounts.`),
      ),
    ];
  }
  const none = !state.accounts.some((a) => a.enabled);
  return [
    error,
    message(
      "info",
      h(
        "p",
        null,
        h("strong", null, "Off. "),
        none
          ? "Add an account (or enable one) before turning it on: with none, Claude Code's requests would have nowhere to go."
          : "Claude Code talks to Anthropic with its own sign-in; nothing goes through the pool.",
      ),
    ),
  ];
}

interface AccountActions {
  setEnabled: (a: PoolAccount, enabled: boolean) => void;
  askRemove: (a: PoolAccount) => void;
  cancelRemove: (a: PoolAccount) => void;
  remove: (a: PoolAccount) => void;
}

function renderAccounts(state: PoolState | null, loadError: string | null, ui: Map<string, AccountUi>, act: AccountActions): HTMLElement {
  const out = h("div");
  if (state === null) {
    out.append(loadError !== null ? h("p", { class: "muted" }, "No accounts to show.") : h("p", { class: "muted" }, "Loading the accounts…"));
    return out;
  }
  if (state.accounts.length === 0) {
    out.append(
      h(
        "div",
        { class: "panel empty pool-empty" },
        h("p", null, h("strong", null, "No accounts yet. ")),
        h("p", null, ...prose("`sessionpipe pool add --import` (or Import below) copies Claude Code's own sign-in of each config dir; `sessionpipe pool add --login` signs another account in.")),
      ),
    );
    return out;
  }
  if (!state.live) {
    out.append(h("p", { class: "muted" }, "The windows and pinned sessions show once the daemon has heard them."));
  }
  out.append(h("ul", { class: "pool-list" }, state.accounts.map((a) => renderAccount(a, ui.get(a.id) ?? {}, act))));
  return out;
}

function renderAccount(a: PoolAccount, state: AccountUi, act: AccountActions): HTMLElement {
  const headId = `pool-account-${a.id}`;
  const name = a.email ?? a.id;
  const statusWord = `${STATUS_WORDS[a.status] ?? a.status}${a.until ? ` until ${when(a.until)}` : ""}`;
  const badgeClass = !a.enabled ? "" : a.status === "allowed" ? " ok" : a.status === "unknown" ? "" : " warn";
  const pinned = a.sessions.length;
  const facts: [string, Child][] = [
    ["Id", a.email !== undefined ? h("code", null, a.id) : null],
    ["Sign-in", a.expires_at ? `${Date.parse(a.expires_at) <= Date.now() ? "expired" : "expires"} ${when(a.expires_at)}` : "none stored"],
    ["Sessions", `${pinned} session${pinned === 1 ? "" : "s"} pinned`],
  ];
  return h(
    "li",
    { class: `panel pool-account${a.enabled ? "" : " disabled"}`, "data-account": a.id, "aria-labelledby": headId },
    h(
      "div",
      { class: "sink-head" },
      h("h3", { id: headId }, name),
      h("span", { class: `badge status${badgeClass}`, "data-status": a.status }, a.enabled ? statusWord : "Disabled"),
    ),
    h(
      "dl",
      { class: "facts" },
      facts.filter(([, v]) => v !== null && v !== "").map(([k, v]) => [h("dt", null, k), h("dd", null, v)]),
    ),
    a.refresh_error ? message("error", h("p", null, `The last refresh of its sign-in failed: ${a.refresh_error}. It works until the sign-in expires.`)) : null,
    a.windows.length === 0
      ? h("p", { class: "muted windows-none" }, "No window heard yet: the daemon reads an idle account's use at most every 5 minutes.")
      : h("ul", { class: "windows", "aria-label": `${name}'s windows` }, a.windows.map((w) => renderWindow(w, name))),
    h(
      "div",
      { class: "actions" },
      h(
        "label",
        { class: "switch" },
        h("input", {
          type: "checkbox",
          role: "switch",
          checked: a.enabled,
          disabled: state.busy === true,
          "data-action": "enabled",
          "data-focus": `enabled:${a.id}`,
          onchange: (e: Event) => act.setEnabled(a, (e.target as HTMLInputElement).checked),
        }),
        h("span", { class: "switch-text" }, `Use ${name}`),
      ),
      state.confirming
        ? [
            h("span", { class: "confirm-text" }, "Remove this account and its stored sign-in? Claude Code's own stays."),
            h("button", { type: "button", class: "danger", "data-action": "confirm-remove", "data-focus": `confirm:${a.id}`, disabled: state.busy === true, onclick: () => act.remove(a) }, "Remove"),
            h("button", { type: "button", "data-action": "cancel-remove", "data-focus": `cancel:${a.id}`, onclick: () => act.cancelRemove(a) }, "Cancel"),
          ]
        : h("button", { type: "button", class: "danger-outline", "data-action": "remove", "data-focus": `remove:${a.id}`, onclick: () => act.askRemove(a) }, "Remove…"),
    ),
    state.error !== undefined ? message("error", h("p", null, state.error)) : null,
  );
}

/** One window: a meter of its use and when it resets. */
function renderWindow(w: LimitWindow, account: string): HTMLElement {
  const label = windowName(w.id);
  const used = Math.round(w.used_percent);
  const reset = w.resets_at ? `resets ${when(w.resets_at)}` : "no reset time heard";
  return h(
    "li",
    { class: "window", "data-window": w.id },
    h("span", { class: "window-name" }, label),
    h("meter", {
      min: 0,
      max: 100,
      low: 70,
      high: 90,
      optimum: 0,
      value: Math.min(100, Math.max(0, w.used_percent)),
      "aria-label": `${account}: ${label} window, ${used}% used, ${reset}`,
      "data-used": w.used_percent,
    }),
    h("span", { class: "window-used" }, `${used}%`),
    h("span", { class: "window-reset muted" }, reset),
  );
}
