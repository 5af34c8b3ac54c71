// Start a session on a machine: a folder the machine allows, a harness it can
// run, a level and model it offers, the first message and files. The files go
// up first (POST /app/api/files); the signed `start` lists each one's hash as
// the receiver answered it, after checking it against the hash made here.

import { api, describeError } from "./api";
import { sameBytes, fromB64url, sha256 } from "./bytes";
import { machineById, signerOf, trusts, thisCredential, type App, type Mounted } from "./app";
import { field, fill, h, message, type Child } from "@sessionpipe/web-shared/dom";
import { LEVEL_NAMES, LEVEL_WORDS, ago, harnessName } from "./format";
import { sessionHref, type Route } from "./route";
import { send, sendError } from "./send";
import { ensureGrant, needsGrant } from "./sign";
import type { FileEntry, Machine, StartOffer } from "./types";

type StartRoute = Extract<Route, { view: "start" }>;

const MAX_TEXT = 20_000;
const MAX_FILES = 10;
const MAX_FILE = 26_214_400;
const MAX_ALL = 52_428_800;
const TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;
const MODEL = /^[A-Za-z0-9._:/@[\]-]{1,100}$/;
/** The option value for "no level: the machine's own settings decide". */
const NO_LEVEL = "";

export function mountStart(root: HTMLElement, app: App, route: StartRoute): Mounted {
  const watches: { stop: () => void }[] = [];
  let m = machineById(app, route.machine);

  function show(): void {
    if (m === undefined) {
      root.replaceChildren(
        h("p", { class: "back" }, h("a", { href: "/#" }, "← All sessions")),
        h("h1", { tabindex: "-1" }, "Start a session"),
        message("error", h("p", null, "That machine is not on your account (or not any more).")),
      );
      return;
    }
    fill(root, form(app, m, watches));
  }

  if (m === undefined) {
    // Opened straight from a link: the board is not loaded yet.
    root.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    api.board().then(
      (b) => {
        app.board = b;
        m = machineById(app, route.machine);
        show();
      },
      (e: unknown) => root.replaceChildren(message("error", h("p", null, `Can't load your machines: ${describeError(e)}`))),
    );
  } else {
    show();
  }

  return {
    unmount() {
      for (const w of watches) w.stop();
    },
  };
}

function form(app: App, m: Machine, watches: { stop: () => void }[]): Child[] {
  const hello = m.hello;
  const starts: Record<string, StartOffer> = hello?.starts ?? {};
  const harnesses = Object.keys(starts);
  const folders = hello?.folders ?? [];
  const takesFiles = hello?.files === true;
  const me = thisCredential(app.me);
  const head: Child[] = [
    h("p", { class: "back" }, h("a", { href: "/#" }, "← All sessions")),
    h("h1", { tabindex: "-1" }, `Start a session on ${m.name}`),
    h("p", { class: "muted" }, m.online ? "Online now." : `Offline${m.last_poll_at ? `, last seen ${ago(m.last_poll_at)}` : ""}: it starts when the machine is back (within a day).`),
    me !== null && !trusts(m, me.id) ? message("warn", h("p", null, `${m.name} doesn't trust this device yet, so it would refuse the start. Add this device from one it trusts (Devices).`)) : null,
  ];
  if (hello === null) return [...head, message("info", h("p", null, `${m.name} hasn't said what it can run yet. Try again once it has been online.`))];
  if (harnesses.length === 0) {
    return [...head, message("info", h("p", null, `${m.name} can't start sessions: none of its harnesses can run without a terminal there.`))];
  }
  if (folders.length === 0) {
    return [
      ...head,
      message(
        "info",
        h("p", null, `${m.name} allows no folders for control, so nothing can be started there.`),
        h("p", { class: "hint" }, "On that machine, run ", h("code", null, "sessionpipe control folders add <folder>"), " to allow one."),
      ),
    ];
  }

  const folder = h("select", { required: true }, folders.map((f) => h("option", { value: f }, f)));
  const harness = h("select", { required: true }, harnesses.map((name) => h("option", { value: name }, harnessName(name))));
  const level = h("select", null);
  const modelPick = h("select", null);
  const modelFree = h("input", { type: "text", autocomplete: "off", autocapitalize: "off", spellcheck: "false", maxlength: "100", placeholder: "e.g. a model id" });
  const modelPickField = field("Model", modelPick);
  const modelFreeField = field("Or another model", modelFree, "Any model id the harness takes; leave empty to use the one picked above.");
  const levelField = field("Level", level, " ");
  const levelHint = levelField.querySelector(".hint") ?? h("p");
  const text = h("textarea", { rows: "5", maxlength: String(MAX_TEXT), required: true, placeholder: "What should the agent do?" });
  const files = h("input", { type: "file", multiple: true });
  const fileList = h("ul", { class: "file-list" });
  const button = h("button", { type: "submit", class: "big primary" }, "Start");
  const out = h("div", { class: "form-out" });
  const sent = h("div", { class: "sent-list" });

  function offer(): StartOffer | undefined {
    return starts[harness.value];
  }

  function fillHarness(): void {
    const o = offer();
    const levels = o?.levels ?? [];
    const options: HTMLOptionElement[] = [];
    if (o?.default === null || o?.default === undefined || !levels.includes(o.default)) {
      options.push(h("option", { value: NO_LEVEL, selected: true }, "As set on the machine"));
    }
    for (const l of levels) options.push(h("option", { value: l, selected: l === o?.default }, LEVEL_NAMES[l] ?? l));
    level.replaceChildren(...options);
    levelField.hidden = levels.length === 0;
    describeLevel();

    const listed = hello?.models?.[harness.value] ?? [];
    modelPick.replaceChildren(h("option", { value: "", selected: true }, "The harness's default"), ...listed.map((id) => h("option", { value: id }, id)));
    modelPickField.hidden = listed.length === 0;
    modelFreeField.hidden = o?.any_model !== true;
    const freeLabel = modelFreeField.querySelector("label");
    if (freeLabel !== null) freeLabel.textContent = listed.length > 0 ? "Or another model" : "Model";
    const freeHint = modelFreeField.querySelector(".hint");
    if (freeHint !== null) freeHint.textContent = listed.length > 0 ? "Any model id the harness takes; it wins over the one picked above." : "Any model id the harness takes; leave it empty for the harness's default.";
    modelFree.value = "";
  }

  function describeLevel(): void {
    levelHint.textContent = level.value === NO_LEVEL ? "No level is sent: the harness's own settings on the machine decide." : (LEVEL_WORDS[level.value] ?? "");
  }
  level.addEventListener("change", describeLevel);
  harness.addEventListener("change", fillHarness);
  fillHarness();

  files.addEventListener("change", () => {
    const list = Array.from(files.files ?? []);
    fileList.replaceChildren(...list.map((f) => h("li", null, `${f.name} (${size(f.size)})`)));
  });

  async function submit(): Promise<void> {
    out.replaceChildren();
    const problems = check();
    if (problems.length > 0) {
      out.replaceChildren(message("error", problems.length === 1 ? h("p", null, problems[0]) : h("ul", null, problems.map((p) => h("li", null, p)))));
      return;
    }
    const signer = signerOf(app);
    if (typeof signer === "string") {
      out.replaceChildren(message("error", h("p", null, signer)));
      return;
    }
    const chosen = offer();
    const name = harness.value;
    const model = modelFree.value.trim() !== "" ? modelFree.value.trim() : modelPick.value;
    const picked = Array.from(files.files ?? []);
    const status = h("p", { class: "hint", role: "status" });
    out.replaceChildren(status);
    button.disabled = true;
    try {
      // The passkey prompt first, while the tap is fresh; uploads can take a while.
      if (needsGrant(signer)) {
        status.textContent = "Waiting for your passkey…";
        await ensureGrant(signer);
      }
      const entries: FileEntry[] = [];
      for (const [i, f] of picked.entries()) {
        status.textContent = `Sending file ${i + 1} of ${picked.length}: ${f.name}…`;
        entries.push(await upload(f));
      }
      status.textContent = "Signing and sending…";
      const session = `${name}:${crypto.randomUUID()}`;
      const body = {
        kind: "start" as const,
        text: text.value,
        cwd: folder.value,
        ...(level.value !== NO_LEVEL && chosen?.levels.includes(level.value) ? { level: level.value } : {}),
        ...(model !== "" ? { model } : {}),
        ...(entries.length > 0 ? { files: entries } : {}),
      };
      const result = await send(app, m, session, body, {
        what: `Start ${harnessName(name)} in ${folder.value}`,
        after: (s) => {
          const final = s.acks.final;
          const key = final?.session ?? session;
          return final?.outcome === "delivered"
            ? h("p", null, h("a", { class: "button primary", href: sessionHref(key) }, "Open the new session"))
            : null;
        },
      });
      watches.push(result.watch);
      sent.prepend(
        h("div", null, result.watch.node, h("p", { class: "hint" }, "The session appears on the board once it has started. ", h("a", { href: sessionHref(session) }, "Its page"), " fills in as it runs.")),
      );
      out.replaceChildren();
      text.value = "";
      files.value = "";
      fileList.replaceChildren();
    } catch (e) {
      out.replaceChildren(message("error", h("p", null, sendError(e))));
    } finally {
      button.disabled = false;
    }
  }

  /** What is wrong with the form, in words (the protocol's limits). */
  function check(): string[] {
    const problems: string[] = [];
    if (text.value.trim() === "") problems.push("Write the first message: what the agent should do.");
    const model = modelFree.value.trim();
    if (model !== "" && (!MODEL.test(model) || model.startsWith("-"))) problems.push("That model id has characters a model id can't have.");
    const picked = Array.from(files.files ?? []);
    if (picked.length > 0 && !takesFiles) problems.push(`${m.name} doesn't take files.`);
    if (picked.length > MAX_FILES) problems.push(`At most ${MAX_FILES} files.`);
    const names = new Set<string>();
    let total = 0;
    for (const f of picked) {
      const n = f.name.normalize("NFC");
      // eslint-disable-next-line no-control-regex
      if (n.length === 0 || n.length > 200 || /[/\\\u0000-\u001f\u007f]/.test(n) || n.startsWith(".")) problems.push(`“${f.name}” can't be sent under that name: rename it (no leading dot, at most 200 characters).`);
      if (names.has(n.toLowerCase())) problems.push(`Two files are called “${f.name}”.`);
      names.add(n.toLowerCase());
      if (f.size === 0) problems.push(`“${f.name}” is empty.`);
      if (f.size > MAX_FILE) problems.push(`“${f.name}” is ${size(f.size)}; at most ${size(MAX_FILE)} a file.`);
      total += f.size;
    }
    if (total > MAX_ALL) problems.push(`The files come to ${size(total)}; at most ${size(MAX_ALL)} together.`);
    return problems;
  }

  const formNode = h(
    "form",
    {
      class: "card start-form",
      onsubmit: (e: Event) => {
        e.preventDefault();
        void submit();
      },
    },
    field("Folder", folder, "Only the folders the machine allows for control."),
    field("Harness", harness),
    levelField,
    modelPickField,
    modelFreeField,
    field("First message", text),
    takesFiles ? [field("Files", files, "Optional: up to 10, each at most 25 MB. They are saved in the folder, under .sessionpipe/files/."), fileList] : h("p", { class: "hint" }, `${m.name} doesn't take files.`),
    h("p", { class: "hint" }, `Start runs the agent on ${m.name} in that folder, signed on this device.`),
    h("div", { class: "actions" }, button),
    out,
  );
  return [...head, formNode, sent];
}

/** Uploads a file and checks the receiver's hash against this device's own. */
async function upload(f: File): Promise<FileEntry> {
  const type = f.type !== "" && TYPE.test(f.type) && f.type.length <= 100 ? f.type : "application/octet-stream";
  const bytes = await f.arrayBuffer();
  const local = await sha256(bytes);
  const answer = await api.upload(new Blob([bytes], { type }), f.name.normalize("NFC"), type);
  let theirs: ArrayBuffer;
  try {
    theirs = fromB64url(answer.sha256).buffer;
  } catch {
    throw new Error(`The receiver answered “${f.name}” with a hash that is not base64url. Nothing was signed.`);
  }
  if (answer.sha256.length !== 43 || !sameBytes(local, theirs) || answer.size !== f.size) {
    throw new Error(`The receiver's hash of “${f.name}” is not the one this device made, so nothing was signed or started.`);
  }
  // The hash signed is the receiver's answer, now known to be this device's own.
  return { name: f.name.normalize("NFC"), type, size: f.size, sha256: answer.sha256 };
}

function size(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(n < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}
