// The Pool page and the board's account column in Debian's Chromium against
// the real daemon's pool (run from `e2e.mjs`, in its sandbox): Claude Code's
// sign-in in the sandbox's HOME, and a loopback stand-in for Anthropic's usage
// endpoint (SESSIONPIPE_ANTHROPIC_API), so nothing leaves the machine. It must
// not reach the network: every vendor endpoint the daemon calls here is the
// stand-in.

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { WAIT_MS, daemonApi, sandbox, waitFor } from "./sandbox.mjs";

const POOL_ACCESS = "sk-ant-oat01-uiPOOLaccess0123456789";
const POOL_SETTINGS = '{\n  "model": "opus"\n}\n';

/** `~/.claude` signed in as `acct-1` (one@example.com), with a settings.json of its own. */
function signedIn(home) {
  const dir = path.join(home, ".claude");
  fs.mkdirSync(dir, { recursive: true });
  const creds = { claudeAiOauth: { accessToken: POOL_ACCESS, refreshToken: "rt-ui-pool", expiresAt: Date.now() + 86_400_000 } };
  fs.writeFileSync(path.join(dir, ".credentials.json"), JSON.stringify(creds));
  fs.writeFileSync(path.join(dir, "settings.json"), POOL_SETTINGS);
  fs.writeFileSync(path.join(home, ".claude.json"), JSON.stringify({ oauthAccount: { accountUuid: "acct-1", emailAddress: "one@example.com" } }));
}

/** Anthropic's usage endpoint, played on loopback: five_hour 93 %, seven_day 12 %. */
async function usageApi(t) {
  const server = http.createServer((req, res) => {
    const body =
      req.url === "/api/oauth/usage"
        ? { five_hour: { utilization: 93, resets_at: "2100-01-01T00:00:00Z" }, seven_day: { utilization: 12, resets_at: "2100-01-05T00:00:00Z" } }
        : {};
    res.writeHead(req.url === "/api/oauth/usage" ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${server.address().port}`;
}

function poolFile(sb) {
  const file = path.join(sb.state, "pool.json");
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
}

test("Pool is live: the warning and what it does, an imported account's windows as meters, its switch, the pool on and off, remove", async (t) => {
  const api = await usageApi(t);
  const sb = await sandbox(t, { hash: "&view=pool", prepare: signedIn, extraEnv: { SESSIONPIPE_ANTHROPIC_API: api } });
  const { page } = sb;
  await page.getByRole("heading", { name: "Pool", level: 1 }).waitFor();
  const view = page.locator("[data-pool]");
  const warning = view.locator("[data-pool-warning]");
  assert.ok(await warning.isVisible(), "the terms warning is in plain sight");
  assert.match(await warning.innerText(), /proxy may be against the vendor's terms \(Anthropic's/);
  const text = await view.innerText();
  for (const fact of [/ANTHROPIC_BASE_URL/, /ANTHROPIC_AUTH_TOKEN/, /_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL/, /anthropic-ratelimit-unified/, /Claude Code-credentials/, /api\.anthropic\.com\/api\/oauth\/usage/]) {
    assert.match(text, fact);
  }
  assert.doesNotMatch(text, /Not live/, "nothing says it is not live");

  // No account: the empty state says how to add one, and the switch cannot turn it on.
  const empty = view.locator(".pool-empty");
  await empty.waitFor();
  assert.match(await empty.innerText(), /sessionpipe pool add --import/);
  assert.match(await empty.innerText(), /sessionpipe pool add --login/);
  const toggle = view.getByRole("switch", { name: "Pool my Claude accounts" });
  await view.locator(".pool-status strong", { hasText: "Off." }).waitFor();
  assert.equal(await toggle.isChecked(), false);
  assert.equal(await toggle.isDisabled(), true, "nothing to route to yet");

  await view.getByRole("button", { name: "Import Claude Code's sign-in" }).click();
  await view.locator(".notice-area .message.ok").getByText("Imported: added one@example.com from ~/.claude.").waitFor();
  const card = view.locator('[data-account="acct-1"]');
  await card.getByRole("heading", { name: "one@example.com" }).waitFor();
  assert.match(await card.innerText(), /0 sessions pinned/);
  assert.match(await card.innerText(), /Sign-in\s+expires/);

  // The daemon reads the idle account's use: each window a meter with its reset.
  const five = card.locator('[data-window="five_hour"]');
  await five.locator("meter").waitFor({ timeout: WAIT_MS });
  assert.equal(await card.locator("meter").count(), 2);
  assert.equal(await five.locator("meter").getAttribute("value"), "93");
  assert.match(await five.innerText(), /5h\s+93%\s+resets /);
  assert.match(await five.locator("meter").getAttribute("aria-label"), /one@example\.com: 5h window, 93% used, resets /);
  assert.equal(await card.locator('[data-window="seven_day"] meter').getAttribute("value"), "12");
  assert.ok(!(await page.content()).includes(POOL_ACCESS), "the sign-in is never shown");
  await sb.shot("pool");

  // Only the person's click turns it on; it writes the three keys, and off gives the bytes back.
  const settings = path.join(sb.home, ".claude", "settings.json");
  await waitFor("the switch to be usable", () => toggle.isEnabled());
  await toggle.click();
  await view.locator(".pool-status strong", { hasText: "On." }).waitFor();
  assert.equal(await toggle.isChecked(), true);
  const written = JSON.parse(fs.readFileSync(settings, "utf8"));
  assert.match(written.env.ANTHROPIC_BASE_URL, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(await view.locator(".pool-status").innerText(), /~\/\.claude\/settings\.json: on/);
  assert.equal(poolFile(sb).on, true);
  await sb.shot("pool-on");
  await toggle.click();
  await view.locator(".pool-status strong", { hasText: "Off." }).waitFor();
  assert.equal(fs.readFileSync(settings, "utf8"), POOL_SETTINGS, "Claude Code's settings, byte for byte");

  // An account's own switch: disabled, it takes no request (and the pool has none to turn on with).
  const use = card.getByRole("switch", { name: "Use one@example.com" });
  await use.click();
  await card.locator(".badge.status", { hasText: "Disabled" }).waitFor();
  assert.equal(poolFile(sb).accounts[0].enabled, false);
  assert.equal(await use.isChecked(), false);
  await waitFor("the pool's switch to be refused", () => toggle.isDisabled());
  await use.click();
  await waitFor("the account enabled again", async () => poolFile(sb).accounts[0].enabled === true && (await use.isChecked()));

  // Remove asks first; then the account and its sign-in go.
  await card.getByRole("button", { name: "Remove…" }).click();
  await card.getByText("Remove this account and its stored sign-in?").waitFor();
  await card.getByRole("button", { name: "Remove", exact: true }).click();
  await view.locator(".notice-area .message.ok").getByText(/Removed one@example\.com/).waitFor();
  await empty.waitFor();
  assert.deepEqual(poolFile(sb).accounts, []);
});

test("the board shows a session's account and the window it burns most", async (t) => {
  const api = await usageApi(t);
  const sb = await sandbox(t, { prepare: signedIn, extraEnv: { SESSIONPIPE_ANTHROPIC_API: api } });
  const { page } = sb;
  await page.getByText("Nothing needs you right now.").waitFor();
  // The pool knows the account: the board names it by its email.
  const imported = await daemonApi(sb, "POST", "/api/pool/import", {});
  assert.equal(imported.status, 200, JSON.stringify(imported.body));

  const sessionId = randomUUID();
  const key = `claude-code:${sessionId}`;
  const transcript = path.join(sb.home, ".claude", "projects", "-src-shop", `${sessionId}.jsonl`);
  const base = { session_id: sessionId, transcript_path: transcript, cwd: path.join(sb.home, "src", "shop") };
  sb.hook("claude-code", "SessionStart", { ...base, hook_event_name: "SessionStart", source: "startup" });
  // Claude Code's status line: its limits, for the config dir's account (a limits.observed).
  const resets = Math.floor(Date.now() / 1000) + 3600;
  const out = sb.hook("claude-code", "StatusLine", {
    ...base,
    rate_limits: { five_hour: { used_percentage: 93, resets_at: resets }, seven_day: { used_percentage: 41, resets_at: resets + 86_400 } },
  });
  assert.equal(String(out.stdout), "5h 93% · week 41%\n");

  const account = page.locator(`[data-session="${key}"] .account`);
  await account.waitFor({ timeout: WAIT_MS });
  assert.equal(await account.innerText(), "one@example.com · 5h 93%");
  assert.equal(await account.getAttribute("data-account"), "acct-1");
  assert.match(await account.getAttribute("class"), /\bnear\b/, "a window past 90% stands out");
  await page.locator(`[data-session="${key}"]`).getByRole("link").click();
  await page.locator(`[data-detail="${key}"] dd`, { hasText: "one@example.com · 5h 93%" }).waitFor();
  await sb.shot("sessions-account");
});
