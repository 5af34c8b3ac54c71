// The UI in Debian's Chromium against a real daemon: each test gets a temporary
// HOME and state dir, starts `sessionpipe daemon --ui dist`, opens the link with
// the token from ui.json, and kills the daemon afterwards. Real hooks are run by
// the real `sessionpipe-hook`. Screenshots go to test-artifacts/ui/.
//
// Needs: `cargo build --workspace --bins` (the two binaries), `npm run build`
// (ui/dist), and `apt-get install chromium`. Run: `cd ui && npm run test:e2e`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const UI_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = path.resolve(UI_DIR, "..");
const BIN_DIR = path.resolve(ROOT, process.env.CARGO_TARGET_DIR ?? "target", "debug");
const DAEMON = path.join(BIN_DIR, "sessionpipe");
const HOOK = path.join(BIN_DIR, "sessionpipe-hook");
const DIST = path.join(UI_DIR, "dist");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SHOTS = path.join(ROOT, "test-artifacts", "ui");
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** The tray app's window. */
const VIEWPORT = { width: 900, height: 640 };
/** Long enough for the board's 2 s refresh plus the daemon's ingest, with room. */
const WAIT_MS = 10_000;

function preflight() {
  const missing = [];
  for (const [file, fix] of [
    [DAEMON, "cargo build --workspace --bins (at the repo root)"],
    [HOOK, "cargo build --workspace --bins (at the repo root)"],
    [path.join(DIST, "index.html"), "npm run build (in ui/)"],
    [CHROMIUM, "apt-get install -y --no-install-recommends chromium"],
  ]) {
    if (!fs.existsSync(file)) missing.push(`  ${file} is missing: run ${fix}`);
  }
  if (missing.length > 0) {
    console.error(`The UI tests cannot start:\n${missing.join("\n")}`);
    process.exit(1);
  }
}
preflight();
fs.mkdirSync(SHOTS, { recursive: true });

async function waitFor(what, check, timeout = WAIT_MS) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A sandbox: temporary HOME and state dir, the real daemon serving ui/dist, and
 * Chromium with a fresh profile on the page `#token=…` (plus `hash`).
 */
async function sandbox(t, { hash = "", prepare = () => {} } = {}) {
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
    if (exited === null) {
      const gone = new Promise((r) => daemon.once("exit", r));
      daemon.kill("SIGTERM");
      const timer = setTimeout(() => daemon.kill("SIGKILL"), 3000);
      await gone;
      clearTimeout(timer);
    }
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
    env: { ...process.env, HOME: path.join(dir, "browser-home") },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  // A failed API call logs its status (expected in some tests); a refused script,
  // style or connection (the page's Content-Security-Policy) never is.
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) pageErrors.push(m.text());
  });
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

test("a harness toggle writes and removes real hooks in HOME", async (t) => {
  // Claude Code is "installed" in this HOME: its config dir exists.
  const sb = await sandbox(t, { hash: "&view=harnesses", prepare: (home) => fs.mkdirSync(path.join(home, ".claude")) });
  const { page } = sb;
  assert.ok(!page.url().includes("token"), `the token leaves the address bar: ${page.url()}`);
  const toggle = page.getByRole("switch", { name: "Claude Code hooks" });
  await toggle.waitFor();
  assert.equal(await toggle.isChecked(), false);
  const claude = page.locator('[data-harness="claude-code"]');
  await claude.getByText("not installed").waitFor();
  // A harness this HOME does not have: shown as not found, with no switch.
  const codex = page.locator('[data-harness="codex"]');
  await codex.getByText("Not found", { exact: true }).waitFor();
  assert.equal(await codex.getByRole("switch").count(), 0);

  const settings = path.join(sb.home, ".claude", "settings.json");
  await toggle.click();
  const written = await waitFor("our hooks in ~/.claude/settings.json", () => {
    const text = fs.existsSync(settings) ? fs.readFileSync(settings, "utf8") : "";
    return text.includes("sessionpipe-hook") && text.includes("claude-code Stop") ? text : null;
  });
  assert.ok(written.includes(HOOK), "the entries run the real hook binary");
  await claude.getByText("installed, up to date").waitFor();
  await claude.locator(".message.ok").waitFor();
  assert.equal(await toggle.isChecked(), true);
  await sb.shot("harnesses");

  await toggle.click();
  await waitFor("our hooks gone from ~/.claude/settings.json", () => {
    return !fs.existsSync(settings) || !fs.readFileSync(settings, "utf8").includes("sessionpipe-hook");
  });
  await claude.getByText("not installed").waitFor();
  assert.equal(await toggle.isChecked(), false);
  assert.ok(!fs.existsSync(settings), "the file sessionpipe created is removed again");

  // A settings.json that is not plain JSON is skipped, and the page says why.
  const commented = '{\n  // mine\n  "model": "opus"\n}\n';
  fs.writeFileSync(settings, commented);
  await page.reload();
  await claude.getByText(/not plain JSON/).waitFor();
  await claude.locator(".badge.summary-skipped").waitFor();
  await toggle.click();
  await claude.locator(".message.error").getByText(/skipped/).waitFor();
  assert.equal(await toggle.isChecked(), false);
  assert.equal(fs.readFileSync(settings, "utf8"), commented, "the person's file is left as it was");
});

test("an attention from a real hook shows on the board and in approvals, then Stop moves it to done", async (t) => {
  const sb = await sandbox(t);
  const { page } = sb;
  await page.getByText("Nothing needs you right now.").waitFor();
  await sb.shot("sessions-empty");

  const sessionId = randomUUID();
  const key = `claude-code:${sessionId}`;
  const project = path.join(sb.home, "src", "shop");
  fs.mkdirSync(project, { recursive: true });
  const transcript = path.join(sb.home, ".claude", "projects", "-src-shop", `${sessionId}.jsonl`);
  fs.mkdirSync(path.dirname(transcript), { recursive: true });
  fs.writeFileSync(transcript, "");
  const base = { session_id: sessionId, transcript_path: transcript, cwd: project, prompt_id: "p-1" };
  sb.hook("claude-code", "UserPromptSubmit", { ...base, hook_event_name: "UserPromptSubmit", prompt: "clean the build" });
  sb.hook("claude-code", "PermissionRequest", {
    ...base,
    hook_event_name: "PermissionRequest",
    permission_mode: "default",
    tool_name: "Bash",
    tool_input: { command: "rm -rf build", description: "Remove the build folder" },
  });

  const needsYou = page.locator(`[data-group="needs_you"] [data-session="${key}"]`);
  await needsYou.waitFor({ timeout: WAIT_MS });
  assert.match(await needsYou.innerText(), /~\/src\/shop/);
  assert.match(await needsYou.innerText(), /Claude Code/);
  const approval = page.locator(".approvals li.approval");
  await approval.first().waitFor();
  assert.equal(await approval.count(), 1);
  const text = await approval.innerText();
  assert.match(text, /Permission/);
  assert.match(text, /Bash/);
  assert.match(text, /rm -rf build/);
  await sb.shot("sessions-needs-you");

  // The session opens its recent events.
  await needsYou.getByRole("link").click();
  const detail = page.locator(`[data-detail="${key}"]`);
  await detail.locator('.event[data-type="attention.needed"]').waitFor();
  const kinds = await detail.locator(".event .type").allInnerTexts();
  assert.deepEqual(kinds, ["attention.needed", "turn.started", "session.started"], "newest first");
  assert.match(await detail.locator('.event[data-type="attention.needed"]').innerText(), /Bash/);
  assert.ok(page.url().includes(`#session=${key}`) && !page.url().includes("token"), page.url());
  await sb.shot("session-events");

  sb.hook("claude-code", "Stop", { ...base, hook_event_name: "Stop", stop_hook_active: false });
  await page.locator(`[data-group="done"] [data-session="${key}"]`).waitFor({ timeout: WAIT_MS });
  await page.getByText("Nothing is waiting for your answer.").waitFor();
  assert.equal(await page.locator(`[data-group="needs_you"] [data-session="${key}"]`).count(), 0);
  await detail.locator('.event[data-type="turn.ended"]').waitFor();
  await sb.shot("sessions-done");

  // The tray's link: `#session=` opens that session directly.
  await page.goto(`${sb.url}/#view=sinks`);
  await page.getByRole("heading", { name: "Sinks", level: 1 }).waitFor();
  await page.goto(`${sb.url}/#session=${key}`);
  await page.locator(`[data-detail="${key}"] .event`).first().waitFor();

  await page.emulateMedia({ colorScheme: "dark" });
  await sb.shot("session-events-dark");
  await page.setViewportSize({ width: 420, height: 640 });
  await sb.shot("session-events-narrow");
});

test("sinks: add a file sink, see its tier, test it, remove it", async (t) => {
  const sb = await sandbox(t, { hash: "&view=sinks" });
  const { page } = sb;
  await page.getByText("No sinks yet").waitFor();
  const out = path.join(sb.dir, "out.jsonl");

  // An API error is shown in words.
  await page.getByLabel("Destination").fill("http://example.org/x");
  await page.getByRole("button", { name: "Add sink" }).click();
  await page.locator(".notice-area .message.error").getByText(/HTTPS/).waitFor();

  await page.getByLabel("Destination").fill(`file:${out}`);
  await page.getByRole("radio", { name: /^1 · actions/ }).check();
  const token = page.getByLabel("Bearer token (optional)");
  assert.equal(await token.getAttribute("type"), "password");
  await token.fill("s3cret-sink-token");
  await page.getByRole("button", { name: "Add sink" }).click();
  const sink = page.locator("li.sink");
  await sink.waitFor();
  assert.match(await sink.innerText(), new RegExp(`file:${out.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
  assert.match(await sink.locator(".badge").first().innerText(), /tier 1/);
  assert.match(await sink.innerText(), /up to date/);
  assert.equal(await token.inputValue(), "", "the token field is emptied once sent");
  assert.ok(!(await page.content()).includes("s3cret-sink-token"), "the token is never shown");
  const secrets = fs.readdirSync(sb.state).filter((f) => f.includes("secret"));
  assert.ok(secrets.length > 0, `the token went to the file store: ${fs.readdirSync(sb.state)}`);

  await sink.getByRole("button", { name: "Test" }).click();
  const lines = sink.locator("pre.lines");
  await lines.waitFor();
  assert.match(await lines.innerText(), /tier 1/);
  assert.match(await sink.locator(".message.ok").innerText(), /Test passed/);
  await sb.shot("sinks");

  await sink.getByRole("button", { name: "Remove…" }).click();
  await sink.getByRole("button", { name: "Remove", exact: true }).click();
  await page.getByText("No sinks yet").waitFor();
  await page.locator(".notice-area .message.ok").getByText(/Removed/).waitFor();
  const stored = JSON.parse(fs.readFileSync(path.join(sb.state, "sinks.json"), "utf8"));
  assert.deepEqual(stored.sinks, []);
});

test("settings change, are stored, and hold across a reload", async (t) => {
  const sb = await sandbox(t, { hash: "&view=settings" });
  const { page } = sb;
  const machine = page.getByLabel("Machine name");
  await machine.waitFor();
  assert.equal(await machine.getAttribute("placeholder"), os.hostname(), "the hostname is the default shown");
  assert.equal(await page.getByRole("radio", { name: /^1 · / }).isChecked(), true, "tier 1 by default");

  const puts = [];
  page.on("request", (r) => {
    if (r.method() === "PUT" && r.url().endsWith("/api/settings")) puts.push(JSON.parse(r.postData() ?? "{}"));
  });
  await machine.fill("ann-laptop");
  await page.getByRole("radio", { name: /^0 · / }).check();
  await page.getByLabel("Also notify when a turn ends while you are away").check();
  await page.getByRole("checkbox", { name: "Codex" }).check();
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.getByText(/^Saved: /).waitFor();
  assert.deepEqual(puts, [{ machine: "ann-laptop", notify_tier: 0, notify_turn_end: true, muted: ["codex"] }], "only the changed keys");
  const config = JSON.parse(fs.readFileSync(path.join(sb.state, "config.json"), "utf8"));
  assert.equal(config.machine, "ann-laptop");
  assert.equal(config.notify_tier, 0);
  assert.deepEqual(config.muted, ["codex"]);

  await page.reload();
  await machine.waitFor();
  assert.equal(await machine.inputValue(), "ann-laptop");
  assert.equal(await page.getByRole("radio", { name: /^0 · / }).isChecked(), true);
  assert.equal(await page.getByLabel("Also notify when a turn ends while you are away").isChecked(), true);
  assert.equal(await page.getByRole("checkbox", { name: "Codex" }).isChecked(), true);
  assert.equal(await page.getByLabel("Open at login").isChecked(), false);
  await sb.shot("settings");

  // Nothing changed: nothing is sent.
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.getByText("Nothing changed.").waitFor();
  assert.equal(puts.length, 1);

  // The board carries the new machine name.
  await page.getByRole("link", { name: "Sessions" }).click();
  await page.getByText("Machine ann-laptop").waitFor();
});

test("a wrong token, or none, says so and how to get a fresh link", async (t) => {
  const sb = await sandbox(t);
  const { page, context } = sb;
  await page.getByText(/Machine /).waitFor();
  await page.goto(`${sb.url}/#token=not-the-token`);
  await page.reload();
  await page.getByRole("heading", { name: "The token is missing or wrong" }).waitFor();
  const alert = await page.getByRole("alert").innerText();
  assert.match(alert, /401/);
  assert.match(alert, /missing or wrong/);
  assert.match(await page.locator(".auth").innerText(), /sessionpipe ui/);
  assert.equal(await page.getByRole("navigation").isVisible(), false);
  await sb.shot("wrong-token");

  const fresh = await context.newPage();
  await fresh.goto(`${sb.url}/`);
  await fresh.getByRole("heading", { name: "This page needs its token" }).waitFor();
  assert.match(await fresh.locator(".auth").innerText(), /sessionpipe ui/);
  await fresh.close();
});

test("Pairing, Pool and Titles say what they would do and that they are not live", async (t) => {
  const sb = await sandbox(t);
  const { page } = sb;
  const cases = [
    ["Pairing", "pairing", [/A bearer token never authorises a command/, /passkey/, /verifies every signature/]],
    ["Pool", "pool", [/ANTHROPIC_BASE_URL/, /ANTHROPIC_AUTH_TOKEN/, /_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL/, /anthropic-ratelimit-unified/]],
    ["Titles", "titles", [/never in a file, an event or a log/, /claude\.ai/, /Claude Code-credentials/]],
  ];
  for (const [name, shot, facts] of cases) {
    await page.getByRole("navigation").getByRole("link", { name }).click();
    await page.getByRole("heading", { name, level: 1 }).waitFor();
    const view = page.locator(`[data-consent="${shot}"]`);
    const toggle = view.getByRole("switch");
    assert.equal(await toggle.count(), 1);
    assert.equal(await toggle.isDisabled(), true, `${name}: the switch is disabled`);
    assert.equal(await toggle.isChecked(), false);
    assert.match(await view.locator(".not-live").innerText(), /Not live in this version/);
    const text = await view.innerText();
    for (const fact of facts) assert.match(text, fact, `${name} says ${fact}`);
    await sb.shot(shot);
  }
});
