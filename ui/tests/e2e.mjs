// The UI in Debian's Chromium against a real daemon: each test gets a temporary
// HOME and state dir, starts `sessionpipe daemon --ui dist`, opens the link with
// the token from ui.json, and kills the daemon afterwards (`sandbox.mjs`). Real
// hooks are run by the real `sessionpipe-hook`; the Pairing tests pair with the
// real `sessionpipe-receiver --control`; testkit's scripted `acp-test-agent`
// stands in for an installed ACP agent; the Pool's tests are `pool.mjs`'s and
// the Usage page's `usage.mjs`'s, run from here. Screenshots go to test-artifacts/ui/.
//
// Needs: `cargo build --workspace --bins` (the four binaries), then `cargo build
// -p sessionpipe-receiver --features test-doors` (the receiver with the test
// door that stands in for a phone), `npm run build` (ui/dist), and `apt-get
// install chromium`. Run: `cd ui && npm run test:e2e`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { stop } from "@sessionpipe/web-shared/e2e";
import { ACP_AGENT, BIN_DIR, HOOK, WAIT_MS, daemonApi, sandbox, waitFor } from "./sandbox.mjs";
import "./pool.mjs";
import "./usage.mjs";

test("a harness toggle writes and removes real hooks in HOME", async (t) => {
  // Claude Code is "installed" in this HOME: its config dir exists. The scripted
  // ACP agent stands in for goose (no hooks) and Gemini CLI (hooks too).
  const sb = await sandbox(t, {
    hash: "&view=harnesses",
    prepare: (home) => fs.mkdirSync(path.join(home, ".claude")),
    extraEnv: { SESSIONPIPE_ACP_GOOSE: ACP_AGENT, SESSIONPIPE_ACP_GEMINI_CLI: ACP_AGENT },
  });
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
  // ACP: Claude Code has its own driver and no mark; Gemini CLI shows both facts
  // (its hooks, not found in this HOME, and drivable over ACP with the program
  // found); goose, with no hooks, is a row of its own with no switch.
  assert.equal(await claude.getByText("Drivable over ACP").count(), 0);
  const gemini = page.locator('[data-harness="gemini-cli"]');
  await gemini.getByText("Not found", { exact: true }).waitFor();
  await gemini.getByText("Gemini CLI's settings were not found, so no hooks are written for it.").waitFor();
  await gemini.getByText("Drivable over ACP", { exact: true }).waitFor();
  await gemini.getByText(ACP_AGENT, { exact: true }).waitFor();
  const goose = page.locator('[data-harness="goose"]');
  await goose.getByRole("heading", { name: /goose \(Block\)/ }).waitFor();
  await goose.getByText("No hooks", { exact: true }).waitFor();
  await goose.getByText("Drivable over ACP", { exact: true }).waitFor();
  await goose.getByText(ACP_AGENT, { exact: true }).waitFor();
  assert.equal(await goose.getByRole("switch").count(), 0);

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

test("a backfill running shows its progress bar, and it goes when the backfill ends", async (t) => {
  // Enough past sessions (small real-shaped Claude Code transcripts) that the
  // real `sessionpipe backfill` runs for seconds, not milliseconds.
  const SESSIONS = 4000;
  const sb = await sandbox(t, {
    prepare: (home) => {
      const dir = path.join(home, ".claude", "projects", "-home-work");
      fs.mkdirSync(dir, { recursive: true });
      for (let i = 0; i < SESSIONS; i += 1) {
        const id = `${i.toString(16).padStart(8, "0")}-2222-4333-8444-555555555555`;
        const lines = [
          { type: "user", promptId: "p1", timestamp: "2026-11-20T09:00:00.000Z", cwd: path.join(home, "work"), message: { content: `ask ${i}` } },
          { type: "assistant", timestamp: "2026-11-20T09:00:09.000Z", message: { model: "claude-opus-5-5", content: [{ type: "text", text: "ok" }] } },
        ];
        fs.writeFileSync(path.join(dir, `${id}.jsonl`), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
      }
    },
  });
  const { page } = sb;
  await page.getByText("Nothing needs you right now.").waitFor();
  const bar = page.getByRole("progressbar", { name: "Backfill progress" });
  assert.equal(await bar.count(), 0, "no banner while nothing runs");

  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: sb.home, SESSIONPIPE_STATE_DIR: sb.state, LANG: "C.UTF-8", NO_COLOR: "1" };
  const backfill = spawn(path.join(BIN_DIR, "sessionpipe"), ["backfill"], { env, cwd: sb.home, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  backfill.stderr.on("data", (d) => (stderr += d));
  let ended = null;
  const exited = new Promise((r) => backfill.on("exit", (code) => r((ended = code))));
  t.after(() => backfill.kill());

  // The sending stage: a determinate bar, its max the sessions found.
  const seen = await waitFor(
    "the backfill's progress bar",
    async () => {
      if (ended !== null) throw new Error(`the backfill ended (${ended}) before its bar was seen`);
      if ((await bar.count()) === 0 || (await bar.getAttribute("value")) === null) return null;
      return { value: Number(await bar.getAttribute("value")), max: Number(await bar.getAttribute("max")), text: await page.locator(".progress-banner").innerText() };
    },
    60_000,
  );
  assert.equal(seen.max, SESSIONS);
  assert.ok(seen.value >= 0 && seen.value <= SESSIONS, JSON.stringify(seen));
  assert.match(seen.text, /^Backfilling past sessions: [\d\u00a0]+ \/ 4\u00a0000$/, JSON.stringify(seen));
  assert.equal(await bar.getAttribute("aria-describedby"), "progress-text");
  await sb.shot("backfill-progress");

  assert.equal(await exited, 0, stderr);
  assert.match(stderr, /backfill: 4000\/4000 sessions \(100%\)/, "the CLI's own plain lines, off a terminal");
  await waitFor("the banner to go", async () => (await bar.count()) === 0);
  assert.equal(await page.locator(".progress-banner").isHidden(), true);
  const events = await daemonApi(sb, "GET", "/api/progress");
  assert.deepEqual(events.body, { progress: null });
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

test("how long events are kept: a wrong number is said at once, a right one is stored", async (t) => {
  const sb = await sandbox(t, { hash: "&view=settings" });
  const { page } = sb;
  const days = page.getByLabel("Keep events for (days)");
  await days.waitFor();
  assert.equal(await days.inputValue(), "30", "the default shown");
  const puts = [];
  page.on("request", (r) => {
    if (r.method() === "PUT" && r.url().endsWith("/api/settings")) puts.push(JSON.parse(r.postData() ?? "{}"));
  });
  await days.fill("two weeks");
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.getByText(/Keep events for a whole number of days, 1 to 36500/).waitFor();
  assert.equal(await days.getAttribute("aria-invalid"), "true");
  assert.equal(puts.length, 0, "nothing sent");
  await days.fill("14");
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.getByText("Saved: days events are kept.").waitFor();
  assert.deepEqual(puts, [{ retention_days: 14 }]);
  assert.equal(JSON.parse(fs.readFileSync(path.join(sb.state, "config.json"), "utf8")).retention_days, 14);
  await page.reload();
  await days.waitFor();
  assert.equal(await days.inputValue(), "14");
  // Empty is the default again.
  await days.fill("");
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.getByText("Saved: days events are kept.").waitFor();
  assert.equal(await days.inputValue(), "30");
  assert.deepEqual(puts[1], { retention_days: 30 });
});

test("a config.json that stops reading is said on the board with why, and the warning goes once it reads again", async (t) => {
  const sb = await sandbox(t);
  const { page } = sb;
  await page.getByRole("heading", { name: "Sessions", level: 1 }).waitFor();
  assert.equal(await page.getByText("config.json does not read").count(), 0, "nothing said while it reads");
  const file = path.join(sb.state, "config.json");
  const good = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "{}";
  fs.writeFileSync(file, "{ not json");
  await page.getByText("config.json does not read").waitFor({ timeout: 20_000 });
  assert.match(await page.locator("main").innerText(), /goes on with the last settings that read/);
  fs.writeFileSync(file, good);
  await page.getByText("config.json does not read").waitFor({ state: "detached", timeout: 20_000 });
});

test("a harness found after setup is offered on the board: Watch it installs its hooks, Not now is remembered", async (t) => {
  const sb = await sandbox(t);
  const { page } = sb;
  await page.getByText(/Machine /).waitFor();
  // Codex and Gemini CLI appear after the daemon started (their folders made).
  fs.mkdirSync(path.join(sb.home, ".codex"), { recursive: true });
  fs.mkdirSync(path.join(sb.home, ".gemini"), { recursive: true });
  fs.writeFileSync(path.join(sb.home, ".gemini", "settings.json"), "{}\n");
  await page.reload();
  const codex = page.locator("[data-offer=codex]");
  await codex.getByText("Codex is on this machine, and sessionpipe does not watch it yet.").waitFor();
  await codex.getByText(/~\/\.codex\/hooks\.json/).waitFor();
  await codex.getByRole("button", { name: "Watch Codex" }).click();
  await codex.waitFor({ state: "detached" });
  assert.ok(fs.existsSync(path.join(sb.home, ".codex", "hooks.json")), "the hooks are written");
  const gemini = page.locator("[data-offer=gemini-cli]");
  await gemini.getByRole("button", { name: "Not now" }).click();
  await gemini.waitFor({ state: "detached" });
  assert.equal(fs.readFileSync(path.join(sb.home, ".gemini", "settings.json"), "utf8"), "{}\n", "nothing written");
  await page.reload();
  await page.getByText(/Machine /).waitFor();
  await page.waitForTimeout(500);
  assert.equal(await page.locator("[data-offer]").count(), 0, "neither is offered again");
});

test("transcripts: the switch says what turning it on sends, and is stored", async (t) => {
  const sb = await sandbox(t, { hash: "&view=settings" });
  const { page } = sb;
  const sw = page.getByLabel("Read what was asked and answered from the transcripts");
  await sw.waitFor();
  assert.equal(await sw.isChecked(), false, "off by default");
  await page.getByText(/a tier-2 event: only destinations at tier 2 or 3 receive it/).waitFor();
  await sw.check();
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.getByText("Saved: transcripts.").waitFor();
  assert.equal(JSON.parse(fs.readFileSync(path.join(sb.state, "config.json"), "utf8")).transcripts, true);
  await page.reload();
  await sw.waitFor();
  assert.equal(await sw.isChecked(), true);
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

test("Titles is live: its switch turns remote titles on and off, and it says what that reads and sends", async (t) => {
  const sb = await sandbox(t);
  const { page } = sb;
  await page.getByRole("navigation").getByRole("link", { name: "Titles" }).click();
  await page.getByRole("heading", { name: "Titles", level: 1 }).waitFor();
  const view = page.locator("[data-titles]");
  const toggle = view.getByRole("switch", { name: "Ask claude.ai for session names" });
  await view.locator(".titles-status strong", { hasText: "Off." }).waitFor();
  assert.equal(await toggle.isDisabled(), false, "the switch is live");
  assert.equal(await toggle.isChecked(), false, "off by default");
  const text = await view.innerText();
  for (const fact of [
    /Claude Code-credentials/,
    /\.credentials\.json/,
    /GET https:\/\/api\.anthropic\.com\/v1\/code\/sessions/,
    /never in a file, an event or a log/,
    /session\.backfill/,
    /last 30 days/,
    /Follow a redirect/,
  ]) {
    assert.match(text, fact);
  }
  assert.equal(await view.locator(".not-live").count(), 0, "nothing says it is not live");
  const config = () => JSON.parse(fs.readFileSync(path.join(sb.state, "config.json"), "utf8"));

  await toggle.click();
  await view.locator(".titles-status strong", { hasText: "On." }).waitFor();
  assert.equal(await toggle.isChecked(), true);
  assert.match(await view.locator(".titles-status").innerText(), /0 sessions with a claude\.ai link were asked about/);
  assert.equal(config().remote_titles, true, "the daemon saved it");
  await sb.shot("titles-on");

  await toggle.click();
  await view.locator(".titles-status strong", { hasText: "Off." }).waitFor();
  assert.equal(config().remote_titles, false);
});

// ---------------------------------------------------------------------------
// Pairing: the page against the real daemon's control API and, when this
// build's receiver serves the control side, the real receiver. The person's
// device is Chromium itself: a passkey in its virtual authenticator (CDP
// WebAuthn) makes the enrollment proof on the pairing's page, opened on the rp
// id's origin (localhost), and the receiver's test door carries it to the
// daemon, which verifies it before trusting the key.

const RECEIVER = path.join(BIN_DIR, "sessionpipe-receiver");

/** Why this build's receiver cannot stand in for a control receiver, or null when it can. */
function receiverWithoutControl() {
  if (!fs.existsSync(RECEIVER)) return `${RECEIVER} is missing (cargo build -p sessionpipe-receiver --features test-doors)`;
  const help = spawnSync(RECEIVER, ["--help"], { encoding: "utf8", timeout: 10_000 });
  if (help.status !== 0) return `sessionpipe-receiver --help failed: ${help.stderr}`;
  for (const flag of ["--control", "--open-pairing", "--rp-id"]) {
    if (!help.stdout.includes(flag)) return `sessionpipe-receiver has no ${flag}`;
  }
  return null;
}

/** Why this build's receiver has no test doors (the approve door stands in for a phone), or null when it has. */
function receiverWithoutDoors() {
  const without = receiverWithoutControl();
  if (without !== null) return without;
  const help = spawnSync(RECEIVER, ["--help"], { encoding: "utf8", timeout: 10_000 });
  if (!help.stdout.includes("test doors")) {
    return "sessionpipe-receiver was built without its test doors (cargo build -p sessionpipe-receiver --features test-doors)";
  }
  return null;
}

/** A port nothing listens on (bound, then let go). */
async function deadPort() {
  const server = net.createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** The real receiver with its control side (rp id localhost), stopped after the test. */
async function startReceiver(t, dir, extra = []) {
  const token = `sink-${randomUUID()}`;
  const data = fs.mkdtempSync(path.join(dir, "receiver-"));
  const child = spawn(RECEIVER, ["--token", token, "--data", data, "--quiet", "--control", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  t.after(() => stop(child));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")).trim());
    });
    child.once("exit", (code) => reject(new Error(`the receiver exited (${code}): ${stderr}`)));
  });
  const door = (method, where, body) =>
    fetch(`${url}${where}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { url, token, door };
}

/**
 * A pass-through in front of the receiver that keeps each `201` it answered to
 * `POST …/control/pair`: the machine id and code, which a person's device gets
 * from the receiver's own page, and the daemon's API rightly does not show.
 */
async function recordingProxy(t, target) {
  const started = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const up = http.request(new URL(req.url, target), { method: req.method, headers: req.headers }, (answer) => {
        const back = [];
        answer.on("data", (c) => back.push(c));
        answer.on("end", () => {
          const body = Buffer.concat(back);
          const where = new URL(req.url, target).pathname;
          if (req.method === "POST" && where.endsWith("/control/pair") && answer.statusCode === 201) started.push(JSON.parse(body.toString("utf8")));
          const headers = { ...answer.headers, "content-length": String(body.length) };
          delete headers["transfer-encoding"];
          res.writeHead(answer.statusCode ?? 502, headers);
          res.end(body);
        });
      });
      up.on("error", (e) => {
        res.writeHead(502);
        res.end(String(e));
      });
      up.end(Buffer.concat(chunks));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => {
    server.closeAllConnections();
    server.close(r);
  }));
  return { url: `http://127.0.0.1:${server.address().port}`, started };
}

/**
 * The person's device: opens the pairing's page on the rp id's origin, and with
 * a passkey in Chromium's virtual authenticator (user verification on) makes a
 * key (`navigator.credentials.create`, ES256) and its enrollment proof
 * (`navigator.credentials.get` with challenge sha256(`signed`), which a real
 * approval makes "sessionpipe.pair:" + machine + ":" + code). Everything
 * base64url, as the approve door takes it.
 */
async function passkeyApproval(context, pageUrl, signed) {
  const device = await context.newPage();
  try {
    const cdp = await context.newCDPSession(device);
    await cdp.send("WebAuthn.enable", { enableUI: false });
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    const opened = await device.goto(pageUrl);
    assert.equal(opened?.status(), 200, `the pairing's page ${pageUrl}`);
    const pageText = await device.locator("body").innerText();
    const made = await device.evaluate(
      async (signed) => {
        const b64 = (buf) =>
          btoa(String.fromCharCode(...new Uint8Array(buf)))
            .replace(/\+/g, "-")
            .replace(/\//g, "_")
            .replace(/=+$/, "");
        const cred = await navigator.credentials.create({
          publicKey: {
            rp: { id: "localhost", name: "sessionpipe receiver" },
            user: { id: crypto.getRandomValues(new Uint8Array(16)), name: "ann@example", displayName: "Ann" },
            challenge: crypto.getRandomValues(new Uint8Array(32)),
            pubKeyCredParams: [{ type: "public-key", alg: -7 }],
            authenticatorSelection: { userVerification: "required", residentKey: "preferred" },
          },
        });
        const challenge = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(signed));
        const got = await navigator.credentials.get({
          publicKey: { challenge, rpId: "localhost", allowCredentials: [{ type: "public-key", id: cred.rawId }], userVerification: "required" },
        });
        return {
          origin: location.origin,
          alg: cred.response.getPublicKeyAlgorithm(),
          key: { id: b64(cred.rawId), alg: -7, spki: b64(cred.response.getPublicKey()) },
          proof: {
            cred: b64(got.rawId),
            ad: b64(got.response.authenticatorData),
            cd: b64(got.response.clientDataJSON),
            sig: b64(got.response.signature),
          },
        };
      },
      signed,
    );
    return { pageText, ...made };
  } finally {
    await device.close();
  }
}

function config(sb) {
  const file = path.join(sb.state, "config.json");
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
}

test("pairing: a receiver that does not answer, or wants its sink token, says so in the API's words; folders, local approvals and own worktrees are stored", async (t) => {
  const sb = await sandbox(t, { hash: "&view=pairing" });
  const { page } = sb;
  await page.getByRole("heading", { name: "Pairing", level: 1 }).waitFor();
  await page.getByText("Not paired with any receiver yet.").waitFor();
  const local = page.getByRole("switch", { name: "Answer permission prompts on this machine" });
  await waitFor("the local approvals switch to be ready", () => local.isEnabled());
  assert.equal(await local.isChecked(), false, "local approvals are off by default");
  assert.match(await page.locator("main").innerText(), /only your click answers/);
  assert.match(await page.locator("main").innerText(), /commands only act in sessions inside these folders/);
  const status = page.locator(".pair-status");
  const pair = page.getByRole("button", { name: "Pair", exact: true });

  // No folder named and none allowed yet: the page asks for one, and calls nothing.
  const pairs = [];
  page.on("request", (r) => {
    if (r.url().endsWith("/api/control/pair")) pairs.push(JSON.parse(r.postData() ?? "{}"));
  });
  const dead = `http://127.0.0.1:${await deadPort()}`;
  await page.getByLabel("Receiver URL").fill(dead);
  await pair.click();
  await status.getByRole("alert").getByText(/Name at least one folder/).waitFor();
  assert.equal(pairs.length, 0);

  // A receiver that does not answer: the API's 502, word for word.
  await page.getByLabel("Folders, one per line").fill(sb.home);
  const answered = page.waitForResponse((r) => r.url().endsWith("/api/control/pair"));
  await pair.click();
  const refused = await answered;
  assert.equal(refused.status(), 502);
  const { error } = await refused.json();
  assert.ok(typeof error === "string" && error.length > 0, `the API says why: ${JSON.stringify(error)}`);
  await status.getByRole("alert").waitFor();
  assert.equal(await status.getByRole("alert").innerText(), `The pairing did not start: ${error}`);
  // The tier the page proposes, 1, unless the person chose another.
  assert.deepEqual(pairs, [{ receiver: dead, mode: "safe", tier: 1, folders: [sb.home] }]);
  assert.match(await page.getByLabel("What the phone sees").locator("option:checked").innerText(), /^1: tool names, commands and the files they change/);
  assert.match(await page.locator("main").innerText(), /The phone sees tool names, commands and the files they change, secrets removed, so it can show what you approve\./);
  assert.equal(await pair.isEnabled(), true, "Pair can be tried again");
  await sb.shot("pairing-error");

  // A receiver with control but no open pairing, and no sink for it here: the API's 400.
  const without = receiverWithoutControl();
  if (without === null) {
    const receiver = await startReceiver(t, sb.dir);
    await page.getByLabel("Receiver URL").fill(receiver.url);
    const again = page.waitForResponse((r) => r.url().endsWith("/api/control/pair"));
    await pair.click();
    const r = await again;
    assert.equal(r.status(), 400);
    const said = (await r.json()).error;
    assert.match(said, /needs a sink token to pair/);
    await status.getByRole("alert").getByText(said, { exact: false }).waitFor();
  } else {
    t.diagnostic(`the sink-token case did not run: ${without}`);
  }
  assert.deepEqual(config(sb).control_folders ?? [], [], "a pairing that did not start allows no folder");

  // Control folders: a relative one is refused in the API's words; add, then remove.
  const folderInput = page.getByLabel("Add a folder");
  await folderInput.fill("src/shop");
  await page.getByRole("button", { name: "Add folder" }).click();
  await page.locator(".folder-status").getByRole("alert").getByText(/a control folder is an absolute path/).waitFor();
  const folder = path.join(sb.home, "src");
  fs.mkdirSync(folder, { recursive: true });
  await folderInput.fill(folder);
  await page.getByRole("button", { name: "Add folder" }).click();
  await page.locator(`[data-folder="${folder}"]`).waitFor();
  assert.deepEqual(config(sb).control_folders, [folder]);
  assert.equal(await folderInput.inputValue(), "");
  await page.getByRole("button", { name: `Remove ${folder}` }).click();
  await page.getByText(/^No folders yet/).waitFor();
  assert.deepEqual(config(sb).control_folders, []);

  // Local approvals: on, kept across a reload, off again.
  await local.click();
  await page.locator(".local-status").getByText("Local approvals are on.").waitFor();
  assert.equal(config(sb).local_approvals, true);
  await page.reload();
  await waitFor("the switch on after a reload", async () => (await local.isEnabled()) && (await local.isChecked()));
  await local.click();
  await page.locator(".local-status").getByText("Local approvals are off.").waitFor();
  assert.equal(config(sb).local_approvals, false);
  assert.equal((await daemonApi(sb, "GET", "/api/control")).body.local_approvals, false);

  // Own worktrees: off by default, on, kept across a reload, off again.
  const worktrees = page.getByRole("switch", { name: "Run each started session in a git worktree of its own" });
  await waitFor("the worktrees switch to be ready", () => worktrees.isEnabled());
  assert.equal(await worktrees.isChecked(), false, "own worktrees are off by default");
  await worktrees.click();
  await page.locator(".worktrees-status").getByText("Own worktrees are on.").waitFor();
  assert.equal(config(sb).control_worktrees, true);
  assert.equal((await daemonApi(sb, "GET", "/api/control")).body.worktrees, true);
  await page.reload();
  await waitFor("the worktrees switch on after a reload", async () => (await worktrees.isEnabled()) && (await worktrees.isChecked()));
  await worktrees.click();
  await page.locator(".worktrees-status").getByText("Own worktrees are off.").waitFor();
  assert.equal(config(sb).control_worktrees, false);
});

test("pairing with the real receiver: the link and digits, a passkey's approval, paired with its key; remove the key, unpair", async (t) => {
  const without = receiverWithoutDoors();
  if (without !== null) {
    t.skip(`the receiver's control side is not in this build: ${without}`);
    return;
  }
  const sb = await sandbox(t, { hash: "&view=pairing" });
  const { page } = sb;
  const receiver = await startReceiver(t, sb.dir, ["--open-pairing"]);
  const probe = await receiver.door("POST", "/test/pair/approve", {});
  assert.equal(probe.status, 400, "the receiver has its approve door (an empty approval is malformed, not missing)");
  const proxy = await recordingProxy(t, receiver.url);
  fs.mkdirSync(path.join(sb.home, "src", "shop"), { recursive: true });
  const project = fs.realpathSync(path.join(sb.home, "src", "shop"));

  const approve = (started, device, name) =>
    receiver.door("POST", "/test/pair/approve", {
      code: started.code,
      key: { ...device.key, name },
      proof: device.proof,
      account: "ann@example",
    });
  const onRp = (url) => {
    const u = new URL(url);
    u.hostname = "localhost";
    return u.href;
  };
  const pairButton = page.getByRole("button", { name: "Pair", exact: true });
  const waiting = page.locator(".pair-waiting");

  // A passkey's proof over other bytes than this pairing's: the daemon does not
  // trust the key, and the page says why in the API's words.
  await page.getByLabel("Receiver URL").fill(proxy.url);
  await page.getByLabel("Folders, one per line").fill(project);
  await page.getByLabel("Mode", { exact: true }).selectOption("auto");
  await pairButton.click();
  await waiting.waitFor({ timeout: WAIT_MS });
  const wrong = proxy.started[0];
  const forged = await passkeyApproval(sb.context, onRp(wrong.url), `sessionpipe.pair:${wrong.machine}:not-${wrong.code}`);
  assert.equal((await approve(wrong, forged, "Wrong phone")).status, 200);
  const failed = page.locator(".pair-status").getByRole("alert");
  await failed.waitFor({ timeout: WAIT_MS });
  assert.match(await failed.innerText(), /^The pairing failed: the key the receiver handed over does not prove itself for this pairing/);
  assert.equal((await daemonApi(sb, "GET", "/api/control")).body.pairing.error, (await failed.innerText()).replace(/^The pairing failed: /, ""));
  assert.equal(await page.locator("[data-receiver]").count(), 0, "nothing is paired");
  assert.deepEqual(config(sb).control_folders ?? [], [], "nothing is kept");
  await sb.shot("pairing-refused-proof");

  // Again, and this time the real approval.
  await pairButton.click();
  await waiting.waitFor({ timeout: WAIT_MS });
  assert.equal(await failed.count(), 0, "the old failure is gone");

  // Waiting: the link (a link) and the six digits, the same the receiver handed out.
  assert.equal(proxy.started.length, 2, "a second pairing started at the receiver");
  const started = proxy.started[1];
  const link = waiting.getByRole("link");
  assert.equal(await link.getAttribute("href"), started.url);
  assert.equal(await link.innerText(), started.url);
  const check = await waiting.locator("[data-check]").innerText();
  assert.match(check, /^\d{6}$/);
  assert.equal(check, started.check);
  assert.match(await waiting.innerText(), /Open the link, check the digits match, approve with your passkey\./);
  assert.equal(await page.getByRole("button", { name: /Waiting for the approval/ }).isDisabled(), true, "no second pairing while one waits");
  await sb.shot("pairing-waiting");

  // The person opens the link on the rp id's origin, sees the same digits, and
  // approves with a passkey: a real WebAuthn key and assertion.
  const device = await passkeyApproval(sb.context, onRp(started.url), `sessionpipe.pair:${started.machine}:${started.code}`);
  assert.ok(device.pageText.includes(check), `the receiver's page shows the same digits: ${device.pageText}`);
  assert.equal(device.origin, `http://localhost:${new URL(started.url).port}`);
  assert.equal(device.alg, -7);
  const approved = await approve(started, device, "Ann's phone");
  assert.equal(approved.status, 200, await approved.clone().text());
  assert.equal((await approved.json()).machine, started.machine);

  // The daemon verified the proof and says paired; the receiver is listed with its key.
  const done = page.locator(".pair-status").getByRole("status").filter({ hasText: "Paired with" });
  await done.waitFor({ timeout: WAIT_MS });
  assert.match(await done.innerText(), new RegExp(`Paired with ${proxy.url.replace(/[.:/]/g, "\\$&")}, approved by ann@example\\.`));
  assert.match(await done.innerText(), /a sink for it was added \(tier 1, see Sinks\)/, "open pairing handed the events' token too, at the tier proposed");
  assert.match(await done.innerText(), /The phone sees tool names, commands and the files they change, secrets removed, so it can show what you approve\./);
  const item = page.locator(`[data-receiver="${proxy.url}"]`);
  await item.waitFor();
  const itemText = await item.innerText();
  assert.match(itemText, new RegExp(started.machine.replace(/[-]/g, "\\-")));
  assert.match(itemText, /ann@example/);
  assert.match(itemText, /Polling for commands/);
  assert.match(itemText, /Tier\s+1: The phone sees tool names, commands and the files they change/);
  const key = item.locator(`[data-key="${device.key.id}"]`);
  await key.waitFor();
  assert.match(await key.innerText(), /Ann's phone · ES256/);
  await page.locator(`[data-folder="${project}"]`).waitFor();
  assert.deepEqual(config(sb).control_folders, [project]);
  assert.equal(config(sb).control_mode, "auto");
  const atReceiver = await receiver.door("GET", `/test/control/messages?machine=${encodeURIComponent(started.machine)}`);
  assert.equal(atReceiver.status, 200);
  assert.ok((await atReceiver.text()).includes(device.key.id), "the receiver keeps the machine and its key");
  assert.ok(!(await page.content()).includes(device.key.spki), "no key material on the page");
  await sb.shot("pairing-paired");

  // Remove the key: asked first, then gone here.
  const deletes = [];
  page.on("request", (r) => {
    if (r.method() === "DELETE" || r.url().endsWith("/api/control/off")) deletes.push(r.url());
  });
  await key.getByRole("button", { name: "Remove…" }).click();
  assert.match(await key.innerText(), /Remove this key\?/);
  assert.deepEqual(deletes, [], "nothing is removed before the second click");
  await key.getByRole("button", { name: "Remove", exact: true }).click();
  await item.getByText(/Removed the key/).waitFor();
  assert.equal(await item.locator("[data-key]").count(), 0);
  assert.deepEqual((await daemonApi(sb, "GET", "/api/control")).body.receivers[0].keys, []);

  // Unpair: asked first; then the receiver is told and forgets the machine.
  await item.getByRole("button", { name: "Unpair…" }).click();
  assert.match(await item.innerText(), /Unpair\? This machine forgets/);
  assert.equal(deletes.length, 1);
  await item.getByRole("button", { name: "Unpair", exact: true }).click();
  await page.getByText(`Unpaired from ${proxy.url}`).waitFor();
  await page.getByText("Not paired with any receiver yet.").waitFor();
  assert.deepEqual((await daemonApi(sb, "GET", "/api/control")).body.receivers, []);
  const gone = await receiver.door("GET", `/test/control/messages?machine=${encodeURIComponent(started.machine)}`);
  assert.equal(gone.status, 404, "the receiver was told and removed the machine");
  await sb.shot("pairing-unpaired");
});
