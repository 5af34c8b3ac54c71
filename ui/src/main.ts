// The sessionpipe UI: one page, routed by its fragment, talking to the daemon's
// local API with the token the fragment brought (`sessionpipe ui` prints the link).

import "@sessionpipe/web-shared/base.css";
import "@sessionpipe/web-shared/changes.css";
import "./style.css";
import { Api, ApiError } from "./api";
import { h, prose } from "@sessionpipe/web-shared/dom";
import { href, parseHash, type Route, type View } from "./route";
import type { Mounted, ViewContext } from "./view";
import { mountSessions } from "./views/sessions";
import { mountHarnesses } from "./views/harnesses";
import { mountSinks } from "./views/sinks";
import { mountPairing } from "./views/pairing";
import { mountPool } from "./views/pool";
import { mountSettings } from "./views/settings";
import { mountTitles } from "./views/titles";
import { mountUsage } from "./views/usage";
import { mountProgress } from "./progress";

const TOKEN_KEY = "sessionpipe.token";

const VIEW_NAMES: Record<View, string> = {
  sessions: "Sessions",
  usage: "Usage",
  harnesses: "Harnesses",
  sinks: "Sinks",
  pairing: "Pairing",
  pool: "Pool",
  titles: "Titles",
  settings: "Settings",
};

const MOUNTS: Record<View, (root: HTMLElement, ctx: ViewContext) => Mounted> = {
  sessions: mountSessions,
  usage: mountUsage,
  harnesses: mountHarnesses,
  sinks: mountSinks,
  pairing: mountPairing,
  pool: mountPool,
  titles: mountTitles,
  settings: mountSettings,
};

interface AppState {
  token: string | null;
  api: Api | null;
  route: Route;
  mounted: Mounted | null;
  mountedView: View | null;
  locked: boolean;
}

const app = document.getElementById("app");
if (app === null) throw new Error("sessionpipe: #app is missing from index.html");

const nav = h("nav", { class: "tabs", "aria-label": "Sections" });
const content = h("main", { id: "content", class: "content", tabindex: "-1" });
// A long work's banner (a backfill...), on every screen while it runs.
const banner = h("div", { class: "progress-banner", hidden: true });
app.replaceChildren(
  h(
    "header",
    { class: "topbar" },
    h("a", { class: "skip", href: "#content", onclick: skipToContent }, "Skip to content"),
    h("span", { class: "brand" }, h("span", { class: "mark", "aria-hidden": "true" }, "s"), "sessionpipe"),
    nav,
  ),
  banner,
  content,
);

const state: AppState = { token: null, api: null, route: { view: "sessions", session: null }, mounted: null, mountedView: null, locked: false };

function skipToContent(e: Event): void {
  e.preventDefault();
  content.focus();
}

function readToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function keepToken(token: string): void {
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // private mode: the token stays in memory only
  }
}

/** Reads the fragment; a token in it is taken into memory and out of the address bar. */
function takeHash(): void {
  const parsed = parseHash(location.hash);
  state.route = { view: parsed.session !== null ? "sessions" : parsed.view, session: parsed.session };
  if (parsed.token !== null) {
    keepToken(parsed.token);
    history.replaceState(null, "", `${location.pathname}${location.search}${href(state.route)}`);
  }
  const token = parsed.token ?? state.token ?? readToken();
  if (token !== state.token) {
    state.token = token;
    state.api = token === null ? null : new Api(token, onUnauthorized);
    state.locked = false;
  }
}

function renderNav(): void {
  nav.replaceChildren(
    h(
      "ul",
      null,
      (Object.keys(VIEW_NAMES) as View[]).map((view) =>
        h(
          "li",
          null,
          h(
            "a",
            { href: href({ view }), "aria-current": state.route.view === view ? "page" : null, "data-view": view },
            VIEW_NAMES[view],
          ),
        ),
      ),
    ),
  );
}

function unmount(): void {
  state.mounted?.unmount?.();
  state.mounted = null;
  state.mountedView = null;
}

function show(focus: boolean): void {
  document.title = `${VIEW_NAMES[state.route.view]} · sessionpipe`;
  if (state.api === null) {
    lock(null);
    return;
  }
  if (state.locked) return;
  nav.hidden = false;
  renderNav();
  const api = state.api;
  if (state.mountedView === state.route.view && state.mounted?.update) {
    state.mounted.update(state.route);
  } else {
    unmount();
    content.replaceChildren();
    state.mountedView = state.route.view;
    state.mounted = MOUNTS[state.route.view](content, { api, route: state.route });
  }
  if (focus) content.querySelector<HTMLElement>("h1")?.focus();
}

/** The token is missing or wrong: nothing else can work, so say how to get one. */
function lock(error: ApiError | null): void {
  state.locked = true;
  unmount();
  nav.hidden = true;
  document.title = "Token needed · sessionpipe";
  const heading = error === null ? "This page needs its token" : "The token is missing or wrong";
  content.replaceChildren(
    h(
      "section",
      { class: "card auth", "aria-labelledby": "auth-h" },
      h("h1", { id: "auth-h", tabindex: "-1" }, heading),
      h(
        "div",
        { class: "message error", role: "alert" },
        h(
          "p",
          null,
          error === null
            ? "This page was opened without the token it needs to talk to the sessionpipe daemon."
            : `The daemon refused this page's token (401: ${error.message}). The daemon keeps its token across restarts, so this link was made before someone ran \`sessionpipe ui --new-token\`, or for another state dir.`,
        ),
      ),
      h("p", null, ...prose("To get a fresh link, run `sessionpipe ui` in a terminal on this machine and open the link it prints, or open this window again from the sessionpipe tray icon.")),
      h("p", { class: "muted" }, "The link carries the token after # so it is never sent over the network; keep it to yourself."),
    ),
  );
}

function onUnauthorized(error: ApiError): void {
  if (!state.locked) lock(error);
}

window.addEventListener("hashchange", () => {
  const before = state.route.view;
  takeHash();
  show(state.route.view !== before);
});

takeHash();
show(false);
mountProgress(banner, () => (state.locked ? null : state.api));
