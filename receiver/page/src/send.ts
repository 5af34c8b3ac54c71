// Sending a command from a screen: sign it (the day key, or a fresh passkey
// confirm), post it, and watch its acks; and the words when any of that fails.

import { ApiError, api, describeError } from "./api";
import { signerOf, type App } from "./app";
import { watchCommand, type Watch, type WatchOptions } from "./acks";
import { refusalWords } from "./format";
import { passkeyError } from "./passkey";
import { confirmCommand, signCommand, type CommandBody } from "./sign";
import type { Machine } from "./types";

export interface Sent {
  id: string;
  session: string;
  watch: Watch;
}

/** Why sending did not work, in words. */
export function sendError(e: unknown): string {
  if (e instanceof DOMException) return passkeyError(e);
  if (e instanceof ApiError && e.status >= 400 && e.status < 500 && !e.signedOut && e.reason !== "") {
    // The receiver ran the machine's own checks early: say which one failed.
    return `Not sent. The receiver refused it: ${refusalWords(e.reason, e.detail !== "" ? e.detail : undefined)}.`;
  }
  return describeError(e);
}

/**
 * Signs `body` for `machine` and session `session` and sends it. `confirm`:
 * a fresh passkey assertion over the command (key.add) instead of the day key.
 * Throws (see `sendError`) when it could not be sent.
 */
export async function send(
  app: App,
  machine: Machine,
  session: string,
  body: CommandBody,
  opts: WatchOptions & { confirm?: boolean },
): Promise<Sent> {
  const signer = signerOf(app);
  if (typeof signer === "string") throw new Error(signer);
  const post = opts.confirm === true ? await confirmCommand(signer, machine.id, session, body) : await signCommand(signer, machine.id, session, body);
  const { id } = await api.command(post);
  const watch = watchCommand(id, machine.name, { ...opts, offline: !machine.online });
  return { id, session, watch };
}
