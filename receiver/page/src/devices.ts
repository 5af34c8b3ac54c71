// Devices: the account's passkeys, which machines trust each, a link to add
// another device (POST /app/api/invites {device: true}), and, once the new
// device has registered, "Trust it on your machines": a `key.add` per machine,
// confirmed with a fresh passkey assertion on this device.

import { api, describeError } from "./api";
import { thisCredential, trusts, type App, type Mounted } from "./app";
import { h, message, patch, type Child } from "@sessionpipe/web-shared/dom";
import { ago, clock } from "./format";
import { poll } from "./poll";
import { send, sendError } from "./send";
import type { Credential, Invite, Machine, Me } from "./types";

const REFRESH_MS = 3000;

interface Trusting {
  state: "signing" | "sent" | "failed";
  error?: string;
}

export function mountDevices(root: HTMLElement, app: App): Mounted {
  let invite: { link: Invite; device: boolean; known: Set<string> } | null = null;
  let inviteError: string | null = null;
  let error: string | null = null;
  let copied = false;
  /** `key.add`s sent from here, by `<credential>|<machine>`. */
  const trusting = new Map<string, Trusting>();
  const watches: { stop: () => void }[] = [];

  const top = h("div", null);
  const acks = h("div", { class: "sent-list" });
  const live = h("div", null);
  root.replaceChildren(h("h1", { tabindex: "-1" }, "Devices"), top, acks, live);

  const poller = poll(async () => {
    try {
      await app.refreshMe();
      error = null;
    } catch (e) {
      error = describeError(e);
    }
    draw();
  }, REFRESH_MS);

  function draw(): void {
    patch(top, h("div", null, renderAdd(app.me)));
    patch(live, h("div", null, renderDevices(app.me)));
  }

  function renderAdd(me: Me): Child[] {
    const fresh = invite === null ? [] : me.credentials.filter((c) => !invite?.known.has(c.id));
    return [
      error !== null ? message("error", h("p", null, `Can't refresh right now: ${error}`)) : null,
      h(
        "section",
        { class: "card", "aria-labelledby": "add-h" },
        h("h2", { id: "add-h" }, "Add a device"),
        h("p", null, "Make a one-time link, open it on the other device (a phone, a laptop) and create a passkey there. It joins this account."),
        invite === null
          ? h(
              "div",
              { class: "actions" },
              h("button", { type: "button", class: "big primary", onclick: () => void makeInvite(true), "data-focus": "invite" }, "Add a device"),
              h("button", { type: "button", class: "secondary", onclick: () => void makeInvite(false), "data-focus": "invite-person" }, "Invite someone else"),
            )
          : inviteBox(invite.link, invite.device),
        inviteError !== null ? message("error", h("p", null, inviteError)) : null,
        fresh.length > 0
          ? message("ok", h("p", null, fresh.length === 1 ? `${fresh[0]?.name ?? "A new device"} has joined. Trust it on your machines below.` : `${fresh.length} new devices have joined. Trust them on your machines below.`))
          : invite?.device
            ? h("p", { class: "hint", role: "status" }, "Waiting for the other device to create its passkey…")
            : null,
      ),
    ];
  }

  function renderDevices(me: Me): Child[] {
    const mine = thisCredential(me);
    return [
      h(
        "section",
        { "aria-labelledby": "devices-h" },
        h("h2", { id: "devices-h" }, "Your devices"),
        h("ul", { class: "device-list" }, me.credentials.map((c) => h("li", { class: "card device" }, deviceEntry(c, mine, me.machines)))),
      ),
      h("section", { class: "card", "aria-labelledby": "out-h" }, h("h2", { id: "out-h" }, "This device"), h("p", null, `Signed in as ${me.account.name}${mine !== null ? `, with the passkey “${mine.name}”` : ""}.`), h("button", { type: "button", class: "secondary", onclick: () => void app.signOut() }, "Sign out")),
    ];
  }

  function inviteBox(link: Invite, device: boolean): Child {
    const expires = Date.parse(link.expires_at);
    return h(
      "div",
      { class: "invite" },
      h("label", { for: "invite-url" }, device ? "Open this link on the other device:" : "Send this link to the person you invite:"),
      h("input", { id: "invite-url", type: "text", readonly: true, value: link.url, class: "mono", onfocus: (e: Event) => (e.target as HTMLInputElement).select() }),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "primary", onclick: () => void copy(link.url), "data-focus": "copy" }, copied ? "Copied" : "Copy the link"),
        typeof navigator.share === "function" ? h("button", { type: "button", class: "secondary", onclick: () => void navigator.share({ title: "sessionpipe", url: link.url }).catch(() => {}) }, "Share…") : null,
        h("button", { type: "button", class: "link", onclick: () => { invite = null; copied = false; draw(); } }, "Done"),
      ),
      h("p", { class: "hint" }, `It works once${Number.isFinite(expires) ? `, until ${clock(link.expires_at)}` : ""}. Anyone with it can ${device ? "add a device to your account" : "make an account here"}, so send it only to ${device ? "yourself" : "them"}.`),
    );
  }

  function deviceEntry(c: Credential, mine: Credential | null, machines: Machine[]): Child[] {
    const isMine = mine !== null && c.id === mine.id;
    return [
      h("span", { class: "title-row" }, h("strong", null, c.name), isMine ? h("span", { class: "badge" }, "This device") : null),
      h("span", { class: "meta" }, `Added ${clock(c.added_at)}${c.used_at ? ` · last used ${ago(c.used_at)}` : ""}`),
      machines.length === 0
        ? null
        : h(
            "ul",
            { class: "trust-list", "aria-label": `Machines that trust ${c.name}` },
            machines.map((m) => h("li", null, trustRow(c, m, mine, isMine))),
          ),
    ];
  }

  function trustRow(c: Credential, m: Machine, mine: Credential | null, isMine: boolean): Child[] {
    if (trusts(m, c.id)) return [h("span", { class: "trusted" }, "✓ "), `${m.name} trusts it`];
    const key = `${c.id}|${m.id}`;
    const t = trusting.get(key);
    const canAdd = !isMine && mine !== null && trusts(m, mine.id);
    return [
      h("span", { class: "untrusted" }, "• "),
      `${m.name} doesn't trust it yet. `,
      isMine
        ? h("span", { class: "hint" }, `Approve a pairing from ${m.name}, or add this device from one it trusts.`)
        : !canAdd
          ? h("span", { class: "hint" }, `Only a device ${m.name} trusts can add it.`)
          : t?.state === "sent"
            ? h("span", { class: "hint" }, "Sent: see below.")
            : h(
                "button",
                { type: "button", class: "primary", disabled: t?.state === "signing", onclick: () => void trust(c, m), "data-focus": `trust:${key}` },
                t?.state === "signing" ? "Waiting for your passkey…" : `Trust it on ${m.name}`,
              ),
      t?.state === "failed" ? message("error", h("p", null, t.error ?? "Not sent.")) : null,
    ];
  }

  async function makeInvite(device: boolean): Promise<void> {
    inviteError = null;
    try {
      const link = await api.invite(device);
      invite = { link, device, known: new Set(app.me.credentials.map((c) => c.id)) };
      copied = false;
    } catch (e) {
      inviteError = `Can't make a link: ${describeError(e)}`;
    }
    draw();
    top.querySelector<HTMLInputElement>("#invite-url")?.focus();
  }

  async function copy(url: string): Promise<void> {
    try {
      await navigator.clipboard.writeText(url);
      copied = true;
    } catch {
      top.querySelector<HTMLInputElement>("#invite-url")?.select();
      inviteError = "This browser wouldn't copy it: the link is selected, copy it from there.";
    }
    draw();
  }

  async function trust(c: Credential, m: Machine): Promise<void> {
    const key = `${c.id}|${m.id}`;
    if (trusting.get(key)?.state === "signing") return;
    trusting.set(key, { state: "signing" });
    draw();
    try {
      const sent = await send(app, m, "sessionpipe:keys", { kind: "key.add", key: { id: c.id, alg: c.alg, spki: c.spki }, name: c.name }, {
        what: `Trust “${c.name}” on ${m.name}`,
        confirm: true,
        onFinal: () => poller.now(),
      });
      trusting.set(key, { state: "sent" });
      watches.push(sent.watch);
      acks.prepend(sent.watch.node);
      sent.watch.node.scrollIntoView({ block: "nearest", behavior: "smooth" });
    } catch (e) {
      trusting.set(key, { state: "failed", error: sendError(e) });
    }
    draw();
  }

  return {
    unmount() {
      poller.stop();
      for (const w of watches) w.stop();
    },
  };
}
