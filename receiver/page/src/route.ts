// The page's address: `/pair/<code>` (the link a machine's terminal shows), or
// the fragment as `key=value` pairs joined by `&`:
//   #session=<harness>:<id>[&answer=allow|deny&attention=<id>]   a session
//   #start=<machine id>                                            start a session
//   #pair=<code>                                                   approve a pairing
//   #invite=<code>                                                 create an account / add a device
//   #view=devices | #view=settings                                 the other screens

export type Route =
  | { view: "board" }
  | { view: "session"; key: string; answer: "allow" | "deny" | null; attention: string | null }
  | { view: "start"; machine: string }
  | { view: "pair"; code: string }
  | { view: "devices" }
  | { view: "settings" };

export type ViewName = Route["view"];

const SESSION_KEY = /^[a-z][a-z0-9-]{0,39}:[A-Za-z0-9._:-]{1,128}$/;
const CODE = /^[A-Za-z0-9_-]{1,200}$/;

/** The pairing code of `/pair/<code>`, if that is the path. */
function pathPair(pathname: string): string | null {
  const m = /^\/pair\/([^/]+)\/?$/.exec(pathname);
  if (m === null || m[1] === undefined) return null;
  const code = decodeURIComponent(m[1]);
  return CODE.test(code) ? code : null;
}

export function parseLocation(loc: Location = location): Route {
  const params = new URLSearchParams(loc.hash.replace(/^#\/?/, ""));
  const fromPath = pathPair(loc.pathname);
  const pair = params.get("pair");
  if (pair !== null && CODE.test(pair)) return { view: "pair", code: pair };
  const session = params.get("session");
  if (session !== null && SESSION_KEY.test(session)) {
    const answer = params.get("answer");
    return {
      view: "session",
      key: session,
      answer: answer === "allow" || answer === "deny" ? answer : null,
      attention: params.get("attention"),
    };
  }
  const start = params.get("start");
  if (start !== null && start !== "") return { view: "start", machine: start };
  const view = params.get("view");
  if (view === "devices" || view === "settings") return { view };
  if (fromPath !== null) return { view: "pair", code: fromPath };
  return { view: "board" };
}

/** The invite code of `#invite=<code>`, or null. */
export function inviteCode(loc: Location = location): string | null {
  const code = new URLSearchParams(loc.hash.replace(/^#\/?/, "")).get("invite");
  return code !== null && CODE.test(code) ? code : null;
}

/** The address of a route (always under `/`, so `/pair/<code>` is left behind). */
export function href(route: Route): string {
  switch (route.view) {
    case "board":
      return "/#";
    case "session":
      return `/#session=${encodeURIComponent(route.key).replace(/%3A/gi, ":")}`;
    case "start":
      return `/#start=${encodeURIComponent(route.machine)}`;
    case "pair":
      return `/#pair=${encodeURIComponent(route.code)}`;
    case "devices":
    case "settings":
      return `/#view=${route.view}`;
  }
}

export function sessionHref(key: string): string {
  return href({ view: "session", key, answer: null, attention: null });
}

/** Goes to a route without a reload. */
export function go(route: Route): void {
  const target = href(route);
  const hash = target.slice(1);
  if (location.pathname !== "/") {
    history.pushState(null, "", target);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else if (location.hash === hash || (hash === "#" && location.hash === "")) {
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else {
    location.hash = hash;
  }
}
