// What every screen shares once signed in: the receiver's config, the account
// (`me`), who signs on this device, and the last board (for machine names).

import type { Board, Config, Credential, Machine, Me } from "./types";
import type { Route } from "./route";
import type { Signer } from "./sign";

const CREDENTIAL_KEY = "sessionpipe.credential";

export interface App {
  config: Config;
  me: Me;
  /** The last board seen (machines and sessions), or null before the first. */
  board: Board | null;
  /** Reads `me` again (new devices, machines). */
  refreshMe: () => Promise<Me>;
  signOut: () => Promise<void>;
}

/** A mounted screen: how to take it down, and how to follow a new route without a remount. */
export interface Mounted {
  unmount?: () => void;
  update?: (route: Route) => boolean;
}

export type Mount<R extends Route = Route> = (root: HTMLElement, app: App, route: R) => Mounted;

/** Remembers which credential this device signed in with (a fallback for `me.credential`). */
export function rememberCredential(id: string): void {
  try {
    localStorage.setItem(CREDENTIAL_KEY, id);
  } catch {
    // private mode: me.credential still says
  }
}

function remembered(): string | null {
  try {
    return localStorage.getItem(CREDENTIAL_KEY);
  } catch {
    return null;
  }
}

/**
 * This device's credential: the one this session signed in with
 * (`me.credential`), else the one this browser last signed in with, else the
 * account's only one.
 */
export function thisCredential(me: Me): Credential | null {
  const id = me.credential ?? remembered();
  const found = me.credentials.find((c) => c.id === id);
  if (found !== undefined) return found;
  return me.credentials.length === 1 ? (me.credentials[0] ?? null) : null;
}

/** Who signs here, or why nobody can. */
export function signerOf(app: App): Signer | string {
  if (app.config.rp_id === null) return "This receiver doesn't carry commands (its control is off), so nothing can be sent from here.";
  const cred = thisCredential(app.me);
  if (cred === null) return "The receiver didn't say which passkey this device signed in with. Sign out and sign in again.";
  return { credential: cred.id, rpId: app.config.rp_id };
}

/** A machine by id, from the freshest list there is. */
export function machineById(app: App, id: string | null): Machine | undefined {
  if (id === null) return undefined;
  return app.board?.machines.find((m) => m.id === id) ?? app.me.machines.find((m) => m.id === id);
}

/** Whether machine `m` lists key `id` among its enrolled keys. */
export function trusts(m: Machine, id: string): boolean {
  return m.keys.includes(id) || (m.hello?.keys ?? []).includes(id);
}
