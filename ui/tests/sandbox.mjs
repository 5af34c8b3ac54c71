// The UI tests' sandbox (shared by `e2e.mjs` and `pool.mjs`): the paths of the
// built binaries, ui/dist and Debian's Chromium (checked before anything runs),
// `waitFor`, `sandbox` (a temporary HOME and state dir, the real daemon serving
// ui/dist, Chromium on the page with the token) and `daemonApi`. It owns
// starting and stopping those; it must not hold a test of its own. What the
// receiver page's suite does the same way is web-shared's (`@sessionpipe/web-shared/e2e`).

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { BIN_DIR, CARGO_BUILD, CHROMIUM, CHROMIUM_ARGS, ROOT, daemonCall, preflight, recordPageErrors, stop, waiter } from "@sessionpipe/web-shared/e2e";

export { BIN_DIR, ROOT };
export const UI_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const DAEMON = path.join(BIN_DIR, "sessionpipe");
export const HOOK = path.join(BIN_DIR, "sessionpipe-hook");
/** The scripted ACP agent: any executable file stands in for an installed agent. */
export const ACP_AGENT = path.join(BIN_DIR, "acp-test-agent");
export const DIST = path.join(UI_DIR, "dist");
export const SHOTS = path.join(ROOT, "test-artifacts", "ui");
/** The tray app's window. */
export const VIEWPORT = { width: 900, height: 640 };
/** Long enough for the board's 2 s refresh plus the daemon's ingest, with room. */
export const WAIT_MS = 10_000;

preflight("UI tests", [
  [DAEMON, CARGO_BUILD],
  [HOOK, CARGO_BUILD],
  [ACP_AGENT, CARGO_BUILD],
  [path.join(DIST, "index.html"), "npm ci && npm run build (at the repo root)"],
  [CHROMIUM, "apt-get install -y --no-install-recommends chromium"],
]);
fs.mkdirSync(SHOTS, { recursive: true });

export const waitFor = waiter({ timeout: WAIT_MS, every: 25 });

/**
 * A sandbox: temporary HOME and state dir, the real daemon serving ui/dist, and
 * Chromium with a fresh profile on the page `#token=…` (plus `hash`), in
 * `timezoneId` when given (else the machine's).
 */
export async function sandbox(t, { hash = "", prepare = () => {}, extraEnv = {}, timezoneId = undefined } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sessionpipe-ui-"));
  const home = path.join(dir, "home");
  const state = path.join(dir, "state");
  fs.mkdirSync(home, { recursive: true });
  prepare(home);
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    SESSIONPIPE_STATE_DIR: state,
    SESSIONPIPE_SECRETS: "file",
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    ...extraEnv,
  };
  const stderrFile = path.join(dir, "daemon.stderr");
  const stderr = fs.openSync(stderrFile, "w");
  const daemon = spawn(DAEMON, ["daemon", "--ui", DIST], { env, cwd: home, stdio: ["ignore", "ignore", stderr] });
  fs.closeSync(stderr);
  let exited = null;
  daemon.on("exit", (code, signal) => (exited = { code, signal }));
  const pageErrors = [];
  let context = null;

  t.after(async () => {
    await context?.close().catch(() => {});
    if (exited === null) await stop(daemon, 3000);
    if (process.env.KEEP_SANDBOX !== "1") fs.rmSync(dir, { recursive: true, force: true });
  });

  const doc = await waitFor("the daemon's ui.json and wake.sock", () => {
    if (exited !== null) {
      throw new Error(`the daemon exited (${JSON.stringify(exited)}): ${fs.readFileSync(stderrFile, "utf8")}`);
    }
    if (!fs.existsSync(path.join(state, "wake.sock"))) return null;
    const text = fs.readFileSync(path.join(state, "ui.json"), "utf8");
    return JSON.parse(text);
  });
  assert.match(doc.url, /^http:\/\/127\.0\.0\.1:\d+$/);

  const profile = path.join(dir, "chromium");
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: VIEWPORT,
    ...(timezoneId !== undefined ? { timezoneId } : {}),
    env: { ...process.env, HOME: path.join(dir, "browser-home") },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  recordPageErrors(page, pageErrors);
  t.after(() => assert.deepEqual(pageErrors, [], "no uncaught errors or CSP refusals in the page"));
  await page.goto(`${doc.url}/#token=${doc.token}${hash}`);

  return {
    dir,
    home,
    state,
    url: doc.url,
    token: doc.token,
    page,
    context,
    /** Runs the real hook binary as the harness would, payload on stdin. */
    hook(harness, event, payload) {
      const out = spawnSync(HOOK, [harness, event], { env, cwd: home, input: JSON.stringify(payload), timeout: 10_000 });
      assert.equal(out.status, 0, `sessionpipe-hook ${harness} ${event}: ${out.stderr}`);
      return out;
    },
    async shot(name) {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
    },
  };
}

/** The daemon's API, from the test (the token from ui.json). */
export function daemonApi(sb, method, where, body) {
  return daemonCall(sb, method, where, body);
}
