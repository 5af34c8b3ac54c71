// Pairing: pair this machine with a receiver (the link and six digits while the
// daemon waits for the person's passkey, asked every 2 s until it ends), the
// receivers paired with their machine id, account, polling state and keys
// (remove a key, unpair: each confirmed first), the folders commands may act in,
// local approvals, and whether a started session runs in its own git worktree; the tier the receiver's sink gets (1 proposed, and
// what each tier lets the phone see, in the protocol's sentences). It owns
// this screen's state and calls only the control API and `PUT /api/settings`. It must not show a token or key material (the
// API sends none), start a second pairing while one waits, or link to anything
// but an http(s) pairing URL.

import { ApiError, describeError } from "../api";
import { h, message, patch, uid, type Child } from "@sessionpipe/web-shared/dom";
import type { ControlMode, ControlReceiver, ControlView, PairingState, PairRequest } from "../types";
import type { Mounted, ViewContext } from "../view";
import { consentParts } from "./consent";
import { HIDDEN_SENTENCE, PAIRING_TIER, TIER_1_SENTENCE } from "@sessionpipe/web-shared/tier-words";

/** How often the page asks while a pairing waits (the daemon asks the receiver as often). */
const WAITING_MS = 2000;
/** How often it refreshes otherwise (a receiver may stop being polled). */
const IDLE_MS = 10_000;

const MODES: readonly { value: ControlMode; text: string }[] = [
  { value: "safe", text: "safe: nothing that needs approval runs unattended" },
  { value: "auto", text: "auto: the harness's own auto mode" },
  { value: "inherit", text: "inherit: each harness's own settings decide" },
];

/** The tiers pairing offers: what the phone then sees of an attention. */
const TIERS: readonly { value: number; text: string }[] = [
  { value: PAIRING_TIER, text: `${PAIRING_TIER}: tool names, commands and the files they change, secrets removed (proposed)` },
  { value: 0, text: "0: only that an agent needs you; approve on the machine" },
];

type Notice = { kind: "ok" | "error" | "info"; text: string } | null;

/** The on/off control settings the page shows as switches, each with the `GET /api/control` member it reads back. */
const SWITCHES = {
  local_approvals: { shown: "local_approvals", name: "Local approvals" },
  control_worktrees: { shown: "worktrees", name: "Own worktrees" },
} as const;
type SwitchKey = keyof typeof SWITCHES;

/** One switch: its input, where its notice goes, and whether a save is under way. */
interface Switch {
  key: SwitchKey;
  input: HTMLInputElement;
  status: HTMLElement;
  busy: boolean;
  notice: Notice;
}


export function mountPairing(root: HTMLElement, ctx: ViewContext): Mounted {
  const { api } = ctx;
  let stopped = false;
  let view: ControlView | null = null;
  let loadError: string | null = null;
  /** The pairing this page follows: waiting, or the end it saw. */
  let pairing: PairingState | null = null;
  let following = false;
  let starting = false;
  let pairNotice: Notice = null;
  /** What waits for its second click: `key:<id>` or `unpair:<origin>`. */
  let confirming: string | null = null;
  let busy = false;
  /** Per receiver: what the last action on it said. */
  const receiverNotice = new Map<string, Notice>();
  let listNotice: Notice = null;
  let folderNotice: Notice = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let loads = 0;

  const ids = {
    receiver: uid("pair-receiver"),
    receiverHelp: uid("pair-receiver-help"),
    folders: uid("pair-folders"),
    foldersHelp: uid("pair-folders-help"),
    mode: uid("pair-mode"),
    tier: uid("pair-tier"),
    tierHelp: uid("pair-tier-help"),
    addFolder: uid("add-folder"),
    local: uid("local-approvals"),
    localHelp: uid("local-approvals-help"),
    worktrees: uid("own-worktrees"),
    worktreesHelp: uid("own-worktrees-help"),
  };

  // The pairing form: drawn once, so nothing the person types is redrawn away.
  const receiverInput = h("input", {
    id: ids.receiver,
    name: "receiver",
    type: "text",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "https://receiver.example",
    "aria-describedby": ids.receiverHelp,
  });
  const foldersInput = h("textarea", { id: ids.folders, name: "folders", rows: 3, cols: 60, spellcheck: "false", "aria-describedby": ids.foldersHelp });
  const modeSelect = h(
    "select",
    { id: ids.mode, name: "mode" },
    MODES.map((m) => h("option", { value: m.value }, m.text)),
  );
  const tierSelect = h(
    "select",
    { id: ids.tier, name: "tier", "aria-describedby": ids.tierHelp },
    TIERS.map((t) => h("option", { value: String(t.value), selected: t.value === PAIRING_TIER }, t.text)),
  );
  let modeTouched = false;
  modeSelect.addEventListener("change", () => (modeTouched = true));
  const pairButton = h("button", { type: "submit", class: "primary" }, "Pair");
  const pairStatus = h("div", { class: "pair-status" });
  const pairForm = h(
    "form",
    { class: "panel pair-form", "aria-labelledby": "pair-form-h", novalidate: true },
    h("h2", { id: "pair-form-h" }, "Pair with a receiver"),
    h("div", { class: "field" }, h("label", { for: ids.receiver }, "Receiver URL"), receiverInput),
    h(
      "p",
      { id: ids.receiverHelp, class: "help muted" },
      "The receiver's address (plain http only on this machine). It needs this machine's sink for it, with its token, unless it offers open pairing.",
    ),
    h("div", { class: "field" }, h("label", { for: ids.folders }, "Folders, one per line"), foldersInput),
    h(
      "p",
      { id: ids.foldersHelp, class: "help muted" },
      "This machine's folder you name; commands only act in sessions inside these folders. They are added to the control folders below; leave this empty to keep those.",
    ),
    h("div", { class: "field" }, h("label", { for: ids.mode }, "Mode"), modeSelect),
    h("div", { class: "field" }, h("label", { for: ids.tier }, "What the phone sees"), tierSelect),
    h(
      "p",
      { id: ids.tierHelp, class: "help muted" },
      "The tier of the sink an open pairing hands over (a sink this machine has already keeps its own). ",
      TIER_1_SENTENCE,
    ),
    h("div", { class: "actions" }, pairButton),
    pairStatus,
  );
  pairForm.addEventListener("submit", (e) => {
    e.preventDefault();
    void submitPair();
  });

  const receiversArea = h("div", { class: "receivers" }, h("p", { class: "muted" }, "Loading…"));
  const foldersArea = h("div", { class: "folder-list" });
  const addFolderInput = h("input", { id: ids.addFolder, name: "folder", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "/absolute/path" });
  const addFolderForm = h(
    "form",
    { class: "add-folder", novalidate: true },
    h("div", { class: "field" }, h("label", { for: ids.addFolder }, "Add a folder"), addFolderInput),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add folder")),
  );
  addFolderForm.addEventListener("submit", (e) => {
    e.preventDefault();
    void addFolder();
  });
  const folderStatus = h("div", { class: "folder-status" });
  /** A switch for `key`, saved when it changes; its notice goes in an element of `statusClass`. */
  function makeSwitch(key: SwitchKey, id: string, helpId: string, statusClass: string): Switch {
    const input = h("input", { id, type: "checkbox", role: "switch", disabled: true, "aria-describedby": helpId });
    const sw: Switch = { key, input, status: h("div", { class: statusClass }), busy: false, notice: null };
    input.addEventListener("change", () => void setSwitch(sw, input.checked));
    return sw;
  }
  const local = makeSwitch("local_approvals", ids.local, ids.localHelp, "local-status");
  const worktrees = makeSwitch("control_worktrees", ids.worktrees, ids.worktreesHelp, "worktrees-status");
  const switches = [local, worktrees];

  root.replaceChildren(
    h(
      "section",
      { class: "view", "aria-labelledby": "pairing-h" },
      h("h1", { id: "pairing-h", tabindex: "-1" }, "Pairing"),
      h(
        "p",
        { class: "lead" },
        "Pair this machine with a receiver to control its agents from your devices. Every command is signed by a passkey you approve; this daemon checks each signature itself, and a bearer token never authorises one.",
      ),
      pairForm,
      h("section", { class: "paired", "aria-labelledby": "paired-h" }, h("h2", { id: "paired-h", tabindex: "-1" }, "Paired receivers"), receiversArea),
      h(
        "section",
        { class: "panel", "aria-labelledby": "folders-h" },
        h("h2", { id: "folders-h", tabindex: "-1" }, "Control folders"),
        h("p", { class: "help muted" }, "Commands only act in sessions inside these folders (absolute paths on this machine)."),
        foldersArea,
        addFolderForm,
        folderStatus,
      ),
      h(
        "section",
        { class: "panel", "aria-labelledby": "local-h" },
        h("h2", { id: "local-h" }, "Local approvals"),
        h("label", { class: "switch", for: ids.local }, local.input, h("span", null, "Answer permission prompts on this machine")),
        h(
          "p",
          { id: ids.localHelp, class: "help muted" },
          "Answer permission prompts from the tray and its notifications; only your click answers. Off by default.",
        ),
        local.status,
      ),
      h(
        "section",
        { class: "panel", "aria-labelledby": "worktrees-h" },
        h("h2", { id: "worktrees-h" }, "Own worktrees"),
        h("label", { class: "switch", for: ids.worktrees }, worktrees.input, h("span", null, "Run each started session in a git worktree of its own")),
        h(
          "p",
          { id: ids.worktreesHelp, class: "help muted" },
          "A session started from your devices in a folder of a git repository gets a new worktree on a branch sessionpipe/<its short id>, where the control folders still allow it; its edits never touch your checkout. `sessionpipe worktrees prune` removes those whose session ended with nothing uncommitted or unpushed. Off by default.",
        ),
        worktrees.status,
      ),
      h("h2", { class: "consent-lead" }, "What pairing does, exactly"),
      consentParts("pairing"),
    ),
  );

  function unauthorized(e: unknown): boolean {
    return e instanceof ApiError && e.unauthorized;
  }

  async function load(): Promise<void> {
    clearTimeout(timer);
    const mine = ++loads;
    try {
      const next = await api.control();
      if (stopped || mine !== loads) return;
      view = next;
      loadError = null;
      follow(next.pairing);
    } catch (e) {
      if (unauthorized(e)) return;
      if (stopped || mine !== loads) return;
      loadError = describeError(e);
    }
    draw();
    timer = setTimeout(() => void load(), following ? WAITING_MS : IDLE_MS);
  }

  /** Takes the daemon's pairing state: a waiting one is followed until it ends. */
  function follow(p: PairingState | null): void {
    if (p?.state === "waiting") {
      pairing = p;
      following = true;
    } else if (following) {
      following = false;
      pairing = p;
      if (p === null) pairNotice = { kind: "error", text: "The pairing is no longer running (the daemon restarted): pair again." };
    }
  }

  async function submitPair(): Promise<void> {
    const receiver = receiverInput.value.trim();
    const folders = foldersInput.value
      .split("\n")
      .map((f) => f.trim())
      .filter((f) => f !== "");
    receiverInput.removeAttribute("aria-invalid");
    foldersInput.removeAttribute("aria-invalid");
    if (receiver === "") {
      receiverInput.setAttribute("aria-invalid", "true");
      pairNotice = { kind: "error", text: "Name the receiver's URL." };
      drawPair();
      receiverInput.focus();
      return;
    }
    if (folders.length === 0 && (view?.folders.length ?? 0) === 0) {
      foldersInput.setAttribute("aria-invalid", "true");
      pairNotice = { kind: "error", text: "Name at least one folder: commands only act in sessions inside the folders you name." };
      drawPair();
      foldersInput.focus();
      return;
    }
    const request: PairRequest = { receiver, mode: modeSelect.value as ControlMode, tier: Number(tierSelect.value) };
    if (folders.length > 0) request.folders = folders;
    starting = true;
    pairing = null;
    pairNotice = null;
    drawPair();
    try {
      pairing = await api.pair(request);
      following = true;
    } catch (e) {
      if (unauthorized(e)) return;
      pairNotice = { kind: "error", text: `The pairing did not start: ${describeError(e)}` };
    } finally {
      starting = false;
    }
    if (stopped) return;
    drawPair();
    pairStatus.querySelector<HTMLElement>("[data-focus=pair-status]")?.focus();
    await load();
  }

  async function act(work: () => Promise<void>): Promise<void> {
    busy = true;
    draw();
    try {
      await work();
    } finally {
      busy = false;
    }
    if (!stopped) await load();
  }

  function removeKey(receiver: string, id: string): Promise<void> {
    return act(async () => {
      try {
        await api.removeKey(id);
        receiverNotice.set(receiver, { kind: "ok", text: "Removed the key: commands it signs are refused from now on." });
      } catch (e) {
        if (unauthorized(e)) return;
        receiverNotice.set(receiver, { kind: "error", text: `The key was not removed: ${describeError(e)}` });
      }
      confirming = null;
      focusLater(`receiver:${receiver}`);
    });
  }

  function unpair(receiver: string): Promise<void> {
    return act(async () => {
      try {
        const r = await api.unpair(receiver);
        receiverNotice.delete(receiver);
        listNotice = { kind: "ok", text: `Unpaired from ${r.unpaired}: its keys and this machine's token for it are gone.` };
        focusLater("paired-h");
      } catch (e) {
        if (unauthorized(e)) return;
        receiverNotice.set(receiver, { kind: "error", text: `Not unpaired: ${describeError(e)}` });
        focusLater(`unpair:${receiver}`);
      }
      confirming = null;
    });
  }

  async function putFolders(next: string[], done: string): Promise<void> {
    try {
      const saved = await api.putControlSettings({ control_folders: next });
      if (view !== null) view.folders = saved.control_folders;
      folderNotice = { kind: "ok", text: done };
      return;
    } catch (e) {
      if (unauthorized(e)) return;
      folderNotice = { kind: "error", text: `The folders were not changed: ${describeError(e)}` };
    } finally {
      drawFolders();
    }
  }

  async function addFolder(): Promise<void> {
    const folder = addFolderInput.value.trim();
    if (folder === "" || view === null) {
      addFolderInput.focus();
      return;
    }
    if (view.folders.includes(folder)) {
      folderNotice = { kind: "info", text: `${folder} is in the list already.` };
      drawFolders();
      return;
    }
    await putFolders([...view.folders, folder], `Added ${folder}.`);
    if (folderNotice?.kind === "ok") addFolderInput.value = "";
  }

  async function removeFolder(folder: string): Promise<void> {
    if (view === null) return;
    await putFolders(
      view.folders.filter((f) => f !== folder),
      `Removed ${folder}.`,
    );
    document.getElementById("folders-h")?.focus();
  }

  /** Whether the view says `sw`'s setting is on. */
  function switchOn(sw: Switch): boolean {
    return view?.[SWITCHES[sw.key].shown] ?? false;
  }

  async function setSwitch(sw: Switch, on: boolean): Promise<void> {
    const { shown, name } = SWITCHES[sw.key];
    sw.busy = true;
    sw.input.disabled = true;
    try {
      const saved = await api.putControlSettings({ [sw.key]: on });
      if (view !== null) view[shown] = saved[sw.key];
      sw.notice = { kind: "ok", text: `${name} ${saved[sw.key] ? "are on." : "are off."}` };
    } catch (e) {
      sw.busy = false;
      sw.input.disabled = false;
      // The page asks for a fresh link; the switch is not left stuck.
      if (unauthorized(e)) return;
      sw.notice = { kind: "error", text: `${name} were not changed: ${describeError(e)}` };
    }
    sw.busy = false;
    sw.input.checked = switchOn(sw);
    sw.input.disabled = false;
    sw.status.replaceChildren(h("div", null, notice(sw.notice)));
    sw.input.focus();
  }

  let focusKey: string | null = null;
  /** Focus to move after the next draw (the thing just acted on may be gone). */
  function focusLater(key: string): void {
    focusKey = key;
  }

  function draw(): void {
    drawPair();
    drawReceivers();
    drawFolders();
    if (view !== null) {
      if (!modeTouched && view.mode !== null) modeSelect.value = view.mode;
      for (const sw of switches) {
        if (sw.busy) continue;
        sw.input.disabled = false;
        sw.input.checked = switchOn(sw);
      }
    }
    if (focusKey !== null) {
      const key = focusKey;
      focusKey = null;
      const el = key === "paired-h" ? document.getElementById(key) : root.querySelector<HTMLElement>(`[data-focus="${CSS.escape(key)}"]`);
      el?.focus();
    }
  }

  function drawPair(): void {
    const waiting = pairing?.state === "waiting";
    pairButton.disabled = starting || waiting;
    pairButton.textContent = starting ? "Asking the receiver…" : waiting ? "Waiting for the approval…" : "Pair";
    const next = h("div", null, notice(pairNotice), renderPairing(pairing, starting));
    patch(pairStatus, next);
  }

  function drawReceivers(): void {
    let body: Child;
    if (view === null) {
      body = loadError !== null ? message("error", h("p", null, `What is paired could not be read: ${loadError}`)) : h("p", { class: "muted" }, "Loading…");
    } else {
      body = [
        loadError !== null ? message("error", h("p", null, `What is paired could not be refreshed: ${loadError}`)) : null,
        notice(listNotice),
        view.receivers.length === 0
          ? h("p", { class: "muted empty" }, "Not paired with any receiver yet.")
          : h(
              "ul",
              { class: "sinks" },
              view.receivers.map((r) => renderReceiver(r)),
            ),
      ];
    }
    patch(receiversArea, h("div", null, body));
  }

  function renderReceiver(r: ControlReceiver): HTMLElement {
    const headId = `receiver-${r.machine}`;
    const facts: [string, Child][] = [
      ["Machine id", h("code", null, r.machine)],
      ["Approved by", r.account],
      ["State", r.stopped !== null ? `Stopped polling: ${r.stopped}` : "Polling for commands"],
      ["Tier", r.tier !== null ? `${r.tier}: ${tierSentence(r.tier)}` : null],
    ];
    const keys = r.keys.map((k) => {
      const name = k.name ?? "Passkey";
      return h(
        "li",
        { class: "key", "data-key": k.id },
        h("span", null, h("strong", null, name), ` · ${k.alg} · `, h("code", { title: k.id }, shortId(k.id))),
        confirming === `key:${k.id}`
          ? [
              h("span", { class: "confirm-text" }, ` Remove this key? Commands it signs are refused from then on.`),
              h("button", { type: "button", class: "danger small-button", "data-focus": `key-yes:${k.id}`, disabled: busy, onclick: () => void removeKey(r.receiver, k.id) }, "Remove"),
              h("button", { type: "button", class: "small-button", onclick: () => ask(null, `key:${k.id}`) }, "Cancel"),
            ]
          : h(
              "button",
              { type: "button", class: "danger-outline small-button", "data-focus": `key:${k.id}`, onclick: () => ask(`key:${k.id}`, `key-yes:${k.id}`) },
              "Remove…",
            ),
      );
    });
    return h(
      "li",
      { class: `panel receiver${r.stopped !== null ? " paused" : ""}`, "data-receiver": r.receiver, "aria-labelledby": headId },
      h(
        "div",
        { class: "sink-head" },
        h("h3", { id: headId, tabindex: "-1", "data-focus": `receiver:${r.receiver}` }, h("code", null, r.receiver)),
        r.stopped !== null ? h("span", { class: "badge warn" }, "stopped") : h("span", { class: "badge" }, "polling"),
      ),
      h(
        "dl",
        { class: "facts" },
        facts.filter(([, v]) => v !== null && v !== "").map(([k, v]) => [h("dt", null, k), h("dd", null, v)]),
      ),
      h("h4", null, "Keys"),
      keys.length === 0 ? h("p", { class: "muted" }, "No keys: no command from this receiver can be verified until you pair again.") : h("ul", { class: "files keys" }, keys),
      h(
        "div",
        { class: "actions" },
        confirming === `unpair:${r.receiver}`
          ? [
              h("span", { class: "confirm-text" }, "Unpair? This machine forgets its keys and token for this receiver and tells it."),
              h("button", { type: "button", class: "danger", "data-focus": `unpair-yes:${r.receiver}`, disabled: busy, onclick: () => void unpair(r.receiver) }, "Unpair"),
              h("button", { type: "button", onclick: () => ask(null, `unpair:${r.receiver}`) }, "Cancel"),
            ]
          : h("button", { type: "button", class: "danger-outline", "data-focus": `unpair:${r.receiver}`, onclick: () => ask(`unpair:${r.receiver}`, `unpair-yes:${r.receiver}`) }, "Unpair…"),
      ),
      notice(receiverNotice.get(r.receiver) ?? null),
    );
  }

  function ask(what: string | null, then: string): void {
    confirming = what;
    focusLater(then);
    draw();
  }

  function drawFolders(): void {
    const folders = view?.folders ?? [];
    patch(
      foldersArea,
      h(
        "div",
        null,
        view === null
          ? null
          : folders.length === 0
            ? h("p", { class: "muted empty" }, "No folders yet: commands act in no session until you add one (or name one when you pair).")
            : h(
                "ul",
                { class: "files folders" },
                folders.map((f) =>
                  h(
                    "li",
                    { "data-folder": f },
                    h("code", null, f),
                    h("button", { type: "button", class: "small-button", "aria-label": `Remove ${f}`, onclick: () => void removeFolder(f) }, "Remove"),
                  ),
                ),
              ),
      ),
    );
    folderStatus.replaceChildren(h("div", null, notice(folderNotice)));
  }

  void load();
  return {
    unmount() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

function notice(n: Notice): Child {
  return n === null ? null : message(n.kind, h("p", null, n.text));
}

/** What a receiver at `tier` sees of an attention: the protocol's sentences, as the CLI says them. */
function tierSentence(tier: number): string {
  return tier === 0 ? HIDDEN_SENTENCE : TIER_1_SENTENCE;
}

/** A long credential id, shortened for reading (the whole one is its title). */
function shortId(id: string): string {
  return id.length > 16 ? `${id.slice(0, 8)}…${id.slice(-6)}` : id;
}

/** The pairing's link, only when it is an http(s) URL. */
function safeLink(url: string): HTMLElement {
  try {
    const u = new URL(url);
    if (u.protocol === "https:" || u.protocol === "http:") {
      return h("a", { href: u.href, target: "_blank", rel: "noopener noreferrer", class: "pair-link" }, url);
    }
  } catch {
    // not a URL: shown as text
  }
  return h("code", null, url);
}

function renderPairing(p: PairingState | null, starting: boolean): Child {
  if (starting) return h("p", { class: "muted", role: "status" }, "Asking the receiver for a pairing…");
  if (p === null) return null;
  if (p.state === "failed") {
    return h("div", { tabindex: "-1", "data-focus": "pair-status" }, message("error", h("p", null, `The pairing failed: ${p.error}`)));
  }
  if (p.state === "paired") {
    return h(
      "div",
      { tabindex: "-1", "data-focus": "pair-status" },
      message(
        "ok",
        h("p", null, `Paired with ${p.receiver}${p.account !== null ? `, approved by ${p.account}` : ""}.`),
        p.sink_added ? h("p", null, `The receiver also handed this machine a token for its events: a sink for it was added (tier ${p.tier ?? "?"}, see Sinks).`) : null,
        p.tier !== null ? h("p", null, tierSentence(p.tier)) : null,
      ),
    );
  }
  const digits = h("strong", { class: "check-digits", "data-check": "" }, p.check);
  return h(
    "section",
    { class: "panel pair-waiting", "aria-labelledby": "pair-waiting-h", tabindex: "-1", "data-focus": "pair-status" },
    h("h3", { id: "pair-waiting-h" }, "Waiting for your approval"),
    h("p", null, "Open the link, check the digits match, approve with your passkey."),
    h("p", null, safeLink(p.url)),
    h("p", null, h("span", { class: "muted" }, "Check: "), digits),
    h("p", { class: "muted", role: "status" }, "This page asks every 2 seconds and says when the pairing ends."),
  );
}
