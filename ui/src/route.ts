// The page's address: everything after `#`, as `key=value` pairs joined by `&`.
// `token` (only ever read, then taken out), `session=harness:id`, `view`.

export const VIEWS = ["sessions", "usage", "harnesses", "sinks", "pairing", "pool", "titles", "settings"] as const;
export type View = (typeof VIEWS)[number];

export interface Route {
  view: View;
  /** `harness:id` of the session to open, on the Sessions view. */
  session: string | null;
}

export interface ParsedHash extends Route {
  token: string | null;
}

function isView(v: string | null): v is View {
  return v !== null && (VIEWS as readonly string[]).includes(v);
}

export function parseHash(hash: string): ParsedHash {
  const params = new URLSearchParams(hash.replace(/^#\/?/, ""));
  const token = params.get("token");
  const session = params.get("session");
  const view = params.get("view");
  return {
    token: token !== null && token !== "" ? token : null,
    session: session !== null && session.includes(":") ? session : null,
    view: isView(view) ? view : "sessions",
  };
}

/** The address of a route: never holds the token. */
export function href(route: Partial<Route>): string {
  if (route.session) return `#session=${encodeURIComponent(route.session).replace(/%3A/gi, ":")}`;
  return `#view=${route.view ?? "sessions"}`;
}

/** `harness:id` → its two parts (the id may itself hold `:`). */
export function splitKey(key: string): { harness: string; id: string } {
  const at = key.indexOf(":");
  return { harness: key.slice(0, at), id: key.slice(at + 1) };
}
