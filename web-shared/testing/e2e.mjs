// What the two Playwright suites (ui/tests/, receiver/page/tests/) share: where
// the repo's built binaries are, Debian's Chromium and the flags it runs
// with, the check that what a suite needs is there before anything starts,
// polling until something holds, stopping a child process, the daemon's
// local API from Node, and recording a page's uncaught errors. It starts
// nothing itself and holds no test; each suite owns its sandbox.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root (this file is in web-shared/testing/). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The dev build's binaries: `cargo build --workspace --bins`. */
export const BIN_DIR = path.resolve(ROOT, process.env.CARGO_TARGET_DIR ?? "target", "debug");
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** What to run when a binary of the dev build is missing. */
export const CARGO_BUILD = "cargo build --workspace --bins (at the repo root)";

/**
 * Ends the run before any test when a file a suite needs is missing:
 * `needs` is `[file, how to make it]` pairs; `more` adds lines of its own.
 */
export function preflight(suite, needs, more = () => []) {
  const missing = [];
  for (const [file, fix] of needs) {
    if (!fs.existsSync(file)) missing.push(`  ${file} is missing: run ${fix}`);
  }
  if (missing.length === 0) missing.push(...more());
  if (missing.length > 0) {
    console.error(`The ${suite} cannot start:\n${missing.join("\n")}`);
    process.exit(1);
  }
}

/**
 * A `waitFor(what, check, timeout = timeout)` that polls `check` every
 * `every` ms until it returns something truthy (which it returns), and
 * fails with the last error `check` threw when the time is up.
 */
export function waiter({ timeout, every }) {
  return async function waitFor(what, check, within = timeout) {
    const deadline = Date.now() + within;
    let last;
    for (;;) {
      try {
        const v = await check();
        if (v) return v;
      } catch (e) {
        last = e;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${within} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
      }
      await new Promise((r) => setTimeout(r, every));
    }
  };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child is gone. */
export async function stop(child, graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await gone;
  clearTimeout(timer);
}

/** A call to the daemon's local API (`url` and `token` from its ui.json); an empty body reads as null. */
export async function daemonCall({ url, token }, method, where, body) {
  const r = await fetch(`${url}${where}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text === "" ? null : JSON.parse(text) };
}

/**
 * Records into `errors` what `page` throws and what it logs as an error,
 * `who: ` in front when given. A failed API call logs its status (expected
 * in some tests); a refused script, style or connection (the page's
 * Content-Security-Policy) never is.
 */
export function recordPageErrors(page, errors, who = "") {
  const prefix = who === "" ? "" : `${who}: `;
  page.on("pageerror", (e) => errors.push(`${prefix}${e}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(`${prefix}${m.text()}`);
  });
}
