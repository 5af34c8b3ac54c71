// The receiver's page: one document for `/` and `/pair/<code>`, routed by its
// path and fragment (route.ts), talking only to the receiver's /app/api/
// (api.ts) with the session cookie; every command signed on this device (sign.ts).

import "@sessionpipe/web-shared/base.css";
import "@sessionpipe/web-shared/changes.css";
import "./style.css";
import { ApiError, api, describeError, whenSignedOut } from "./api";
import type { App, Mounted } from "./app";
import { mountBoard } from "./board";
import { mountDevices } from "./devices";
import { h, message } from "@sessionpipe/web-shared/dom";
import { mountPair } from "./pair";
import { inviteCode, parseLocation, type Route, type ViewName } from "./route";
import { mountSession } from "./session";
import { mountSettings, pushSupported, registerWorker } from "./settings";
import { forgetDayKey, loadDayKey } from "./sign";
import { mountSignIn } from "./signin";
import { mountStart } from "./start";
import type { Config, Me } from "./types";

const root = document.getElementById("app");
if (root === null) throw new Error("sessionpipe: #app is missing from index.html");

const TABS: { view: ViewName; href: string; words: string }[] = [
  { view: "board", href: "/#", words: "Sessions" },
  { view: "devices", href: "/#view=devices", words: "Devices" },
  { view: "settings", href: "/#view=settings", words: "Notifications" },
];

const nav = h("nav", { class: "tabs", "aria-label": "Sections" });
const banner = h("div", { class: "banner" });
const content = h("main", { id: "content", class: "content", tabindex: "-1" });
root.replaceChildren(
  h(
    "header",
    { class: "topbar" },
    h("a", { class: "skip", href: "#content", onclick: (e: Event) => { e.preventDefault(); content.focus(); } }, "Skip to content"),
    h("a", { class: "brand", href: "/#", "aria-label": "sessionpipe: your sessions" }, h("span", { class: "mark", "aria-hidden": "true" }, "s"), h("span", null, "sessionpipe")),
    nav,
  ),
  banner,
  content,
);

let app: App | null = null;
let mounted: Mounted | null = null;
let mountedView: ViewName | null = null;

function unmount(): void {
  mounted?.unmount?.();
  mounted = null;
  mountedView = null;
}

function renderNav(route: Route): void {
  const current: ViewName = route.view === "session" || route.view === "start" ? "board" : route.view;
  nav.hidden = app === null;
  nav.replaceChildren(
    h(
      "ul",
      null,
      TABS.map((t) => h("li", null, h("a", { href: t.href, "aria-current": current === t.view ? "page" : null }, t.words))),
    ),
  );
}

const TITLES: Record<ViewName, string> = {
  board: "sessionpipe",
  session: "Session · sessionpipe",
  start: "Start a session · sessionpipe",
  pair: "Approve a machine · sessionpipe",
  devices: "Devices · sessionpipe",
  settings: "Notifications · sessionpipe",
};

function show(focus: boolean): void {
  if (app === null) return;
  const route = parseLocation();
  renderNav(route);
  banner.replaceChildren();
  if (inviteCode() !== null) {
    banner.append(message("info", h("p", null, `You're signed in as ${app.me.account.name}. The invite link is for another device or person: open it there.`)));
  }
  if (mountedView === route.view && mounted?.update?.(route) === true) return;
  unmount();
  content.replaceChildren();
  document.title = TITLES[route.view];
  mountedView = route.view;
  switch (route.view) {
    case "board":
      mounted = mountBoard(content, app);
      break;
    case "session":
      mounted = mountSession(content, app, route);
      break;
    case "start":
      mounted = mountStart(content, app, route);
      break;
    case "pair":
      mounted = mountPair(content, app, route);
      break;
    case "devices":
      mounted = mountDevices(content, app);
      break;
    case "settings":
      mounted = mountSettings(content, app);
      break;
  }
  if (focus) content.querySelector<HTMLElement>("h1")?.focus();
  else if (route.view !== "board") window.scrollTo(0, 0);
}

function signedOut(config: Config): void {
  app = null;
  unmount();
  nav.hidden = true;
  banner.replaceChildren();
  document.title = "Sign in · sessionpipe";
  mountSignIn(content, config, inviteCode(), () => void signedIn(config));
  const route = parseLocation();
  if (route.view === "pair" || (route.view === "session" && route.answer !== null)) {
    banner.append(message("info", h("p", null, route.view === "pair" ? "Sign in to approve the machine that is waiting for you." : "Sign in to answer the agent.")));
  }
}

async function signedIn(config: Config, known?: Me): Promise<void> {
  let me: Me;
  try {
    me = known ?? (await api.me());
  } catch (e) {
    if (!(e instanceof ApiError && e.signedOut)) fatal(e);
    return;
  }
  app = {
    config,
    me,
    board: null,
    refreshMe: async () => {
      const next = await api.me();
      if (app !== null) app.me = next;
      return next;
    },
    signOut: async () => {
      try {
        await api.signout();
      } catch {
        // signed out here whatever the receiver said
      }
      await forgetDayKey();
      signedOut(config);
    },
  };
  show(false);
}

function fatal(e: unknown): void {
  nav.hidden = true;
  content.replaceChildren(
    h(
      "section",
      { class: "card auth" },
      h("h1", { tabindex: "-1" }, "sessionpipe"),
      message("error", h("p", null, `Can't reach the receiver: ${describeError(e)}`)),
      h("button", { type: "button", class: "big primary", onclick: () => location.reload() }, "Try again"),
    ),
  );
}

async function boot(): Promise<void> {
  void loadDayKey();
  let config: Config;
  try {
    config = await api.config();
  } catch (e) {
    fatal(e);
    return;
  }
  if (pushSupported(config)) void registerWorker().catch(() => {});
  whenSignedOut(() => {
    if (app !== null) signedOut(config);
  });
  let me: Me;
  try {
    me = await api.me();
  } catch (e) {
    if (e instanceof ApiError && e.signedOut) signedOut(config);
    else fatal(e);
    return;
  }
  await signedIn(config, me);
}

/** A tapped notification, with this page already open: go to its session. */
function listenToWorker(): void {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.onmessage = (event: MessageEvent<unknown>) => {
    const data = event.data as { type?: unknown; url?: unknown } | null;
    if (data?.type !== "sessionpipe.open" || typeof data.url !== "string") return;
    const url = new URL(data.url, location.origin);
    if (url.origin !== location.origin || url.pathname !== "/") return;
    if (location.pathname === "/" && location.hash === url.hash) show(true);
    else if (location.pathname === "/") location.hash = url.hash;
    else location.assign(url.href);
  };
}

listenToWorker();
window.addEventListener("hashchange", () => show(true));
window.addEventListener("popstate", () => show(true));

void boot();
