// Notifications: Web Push to this device (the service worker /sw.js, a
// subscription with the receiver's VAPID key, POST/DELETE /app/api/push), and
// a plain webhook / ntfy URL (POST/DELETE /app/api/notify-url).

import { api, describeError } from "./api";
import { fromB64url } from "./bytes";
import type { App, Mounted } from "./app";
import { field, h, message, uid, type Child } from "@sessionpipe/web-shared/dom";
import type { Config, Tier } from "./types";

const TIER_KEY = "sessionpipe.push.tier";
const URL_KEY = "sessionpipe.notify.url";
const URL_TIER_KEY = "sessionpipe.notify.tier";

const TIERS: { tier: Tier; words: string }[] = [
  { tier: 0, words: "Only that an agent needs you" },
  { tier: 1, words: "Which tool or question it is" },
  { tier: 2, words: "The words too (the question or message)" },
];

function stored(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function store(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // private mode: not remembered
  }
}

function tierOf(text: string | null, fallback: Tier): Tier {
  return text === "0" ? 0 : text === "1" ? 1 : text === "2" ? 2 : fallback;
}

function tierSelect(value: Tier): HTMLSelectElement {
  return h("select", null, TIERS.map((t) => h("option", { value: String(t.tier), selected: t.tier === value }, `${t.tier}: ${t.words}`)));
}

export function pushSupported(config: Config): boolean {
  return config.vapid_public_key !== null && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/** Registers the service worker (also done at start-up, so a notification's tap always has it). */
export async function registerWorker(): Promise<ServiceWorkerRegistration> {
  await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  return navigator.serviceWorker.ready;
}

export function mountSettings(root: HTMLElement, app: App): Mounted {
  root.replaceChildren(h("h1", { tabindex: "-1" }, "Notifications"), pushCard(app), urlCard());
  return {};
}

function pushCard(app: App): HTMLElement {
  const card = h("section", { class: "card", "aria-labelledby": "push-h" }, h("h2", { id: "push-h" }, "On this device"));
  const vapid = app.config.vapid_public_key;
  if (!pushSupported(app.config) || vapid === null) {
    const ios = /iPhone|iPad/.test(navigator.userAgent) && !matchMedia("(display-mode: standalone)").matches;
    card.append(
      h(
        "p",
        { class: "hint" },
        vapid === null
          ? "This receiver doesn't send push notifications (it has no push key). A webhook or ntfy link below still works."
          : ios
            ? "On an iPhone or iPad, add this page to the Home Screen first (Share, then Add to Home Screen) and open it from there: then it can notify you."
            : "This browser can't take push notifications. A webhook or ntfy link below still works.",
      ),
    );
    return card;
  }
  const key = fromB64url(vapid);
  let on = false;
  let working = false;
  const labelId = uid("push-label");
  const toggle = h("button", { type: "button", role: "switch", class: "switch", "aria-checked": "false", "aria-labelledby": labelId }, h("span", { class: "knob", "aria-hidden": "true" }));
  const tier = tierSelect(tierOf(stored(TIER_KEY), 1));
  const out = h("div", { class: "form-out" });
  const state = h("p", { class: "hint", role: "status" });

  function show(): void {
    toggle.setAttribute("aria-checked", on ? "true" : "false");
    toggle.disabled = working;
    state.textContent = working ? "One moment…" : on ? "On: this device is told when an agent needs you." : "Off.";
  }

  function say(kind: "error" | "ok", words: string): void {
    out.replaceChildren(message(kind, h("p", null, words)));
  }

  async function current(): Promise<PushSubscription | null> {
    const reg = await navigator.serviceWorker.getRegistration("/");
    return (await reg?.pushManager.getSubscription()) ?? null;
  }

  async function subscribe(): Promise<PushSubscription> {
    const reg = await registerWorker();
    try {
      return await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    } catch (e) {
      // A subscription made with another key: drop it and make a new one.
      if (e instanceof DOMException && e.name === "InvalidStateError") {
        await (await reg.pushManager.getSubscription())?.unsubscribe();
        return reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      }
      throw e;
    }
  }

  async function turnOn(): Promise<void> {
    const permission = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
    if (permission !== "granted") {
      say("error", "Notifications are blocked for this site. Allow them in the browser's site settings, then try again.");
      return;
    }
    const sub = await subscribe();
    await api.pushOn(sub.toJSON(), tierOf(tier.value, 1));
    store(TIER_KEY, tier.value);
    on = true;
    say("ok", "Done. You'll be notified here when an agent needs you.");
  }

  async function turnOff(): Promise<void> {
    const sub = await current();
    if (sub !== null) {
      try {
        await api.pushOff(sub.endpoint);
      } finally {
        await sub.unsubscribe();
      }
    }
    on = false;
    say("ok", "Off. This device won't be notified.");
  }

  async function flip(): Promise<void> {
    if (working) return;
    working = true;
    out.replaceChildren();
    show();
    try {
      if (on) await turnOff();
      else await turnOn();
    } catch (e) {
      say("error", pushError(e));
    }
    working = false;
    show();
  }

  toggle.addEventListener("click", () => void flip());
  tier.addEventListener("change", () => {
    store(TIER_KEY, tier.value);
    if (!on) return;
    void (async () => {
      try {
        const sub = await current();
        if (sub !== null) await api.pushOn(sub.toJSON(), tierOf(tier.value, 1));
        say("ok", "Saved.");
      } catch (e) {
        say("error", `Can't save it: ${describeError(e)}`);
      }
    })();
  });

  working = true;
  show();
  current().then(
    (sub) => {
      on = sub !== null && Notification.permission === "granted";
      working = false;
      show();
    },
    () => {
      working = false;
      show();
    },
  );

  card.append(
    h("div", { class: "switch-row" }, h("span", { id: labelId, class: "switch-label" }, "Notify this device when an agent needs me"), toggle),
    state,
    field("What a notification says", tier, tierHint()),
    out,
  );
  return card;
}

function pushError(e: unknown): string {
  if (e instanceof DOMException && e.name === "NotAllowedError") return "Notifications are blocked for this site. Allow them in the browser's site settings, then try again.";
  if (e instanceof DOMException && e.name === "AbortError") {
    return `The browser's push service said no (${e.message || "no reason given"}). A private window can't take push notifications; in a normal one, try again.`;
  }
  return `That didn't work: ${describeError(e)}`;
}

function tierHint(): Child {
  return [
    "0: just “an agent needs you” and which session. 1: also which tool or question, e.g. “Bash: npm test”. 2: also the words of the question or message. ",
    "A permission request comes with Allow and Deny buttons; tapping one opens this page to confirm it.",
  ];
}

function urlCard(): HTMLElement {
  const saved = stored(URL_KEY);
  const url = h("input", { type: "url", inputmode: "url", autocomplete: "off", autocapitalize: "off", spellcheck: "false", placeholder: "https://ntfy.sh/your-topic", value: saved ?? "" });
  const tier = tierSelect(tierOf(stored(URL_TIER_KEY), 0));
  const save = h("button", { type: "submit", class: "primary" }, "Save");
  const remove = h("button", { type: "button", class: "secondary", hidden: saved === null }, "Remove");
  const out = h("div", { class: "form-out" });

  // The receiver judges the rest (public addresses only, unless its operator
  // allows private ones, and http:// then) and says why it refuses one.
  function valid(text: string): boolean {
    try {
      const u = new URL(text);
      return u.protocol === "https:" || u.protocol === "http:";
    } catch {
      return false;
    }
  }

  async function submit(): Promise<void> {
    const text = url.value.trim();
    if (!valid(text)) {
      out.replaceChildren(message("error", h("p", null, "Give a whole https:// address.")));
      return;
    }
    save.disabled = true;
    try {
      await api.notifyUrlOn(text, tierOf(tier.value, 0));
      store(URL_KEY, text);
      store(URL_TIER_KEY, tier.value);
      remove.hidden = false;
      out.replaceChildren(message("ok", h("p", null, "Saved. That address gets a POST with the same words on every attention.")));
    } catch (e) {
      out.replaceChildren(message("error", h("p", null, `Can't save it: ${describeError(e)}`)));
    } finally {
      save.disabled = false;
    }
  }

  remove.addEventListener("click", () => {
    const text = url.value.trim() || saved || "";
    if (text === "") return;
    remove.disabled = true;
    api.notifyUrlOff(text).then(
      () => {
        store(URL_KEY, null);
        url.value = "";
        remove.hidden = true;
        out.replaceChildren(message("ok", h("p", null, "Removed.")));
      },
      (e: unknown) => out.replaceChildren(message("error", h("p", null, `Can't remove it: ${describeError(e)}`))),
    ).finally(() => {
      remove.disabled = false;
    });
  });

  return h(
    "form",
    {
      class: "card",
      "aria-labelledby": "url-h",
      onsubmit: (e: Event) => {
        e.preventDefault();
        void submit();
      },
    },
    h("h2", { id: "url-h" }, "A webhook or ntfy link"),
    h("p", { class: "hint" }, "Any address that takes a POST: an ntfy topic, a chat webhook, your own server. It is told each time an agent needs you."),
    field("Address", url),
    field("What it is told", tier),
    h("div", { class: "actions" }, save, remove),
    out,
  );
}
