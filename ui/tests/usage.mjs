// The Usage page in Debian's Chromium against the real daemon (run from
// `e2e.mjs`, in its sandbox): Claude Code transcripts whose assistant records
// carry `message.usage`, read by the daemon through the real hook's calls, two
// accounts (three config dirs), a model the price table lacks, a past Codex
// thread whose rollout `sessionpipe backfill` reads, and status lines' limits
// whose pace runs a window out before it resets. The page runs in India's time
// zone (UTC+5:30, no daylight saving), so a response at 00:30 there is on
// another day than in UTC. The expected costs are computed here from
// core/prices.json. It must not reach the network.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { DAEMON, ROOT, WAIT_MS, daemonApi, sandbox, waitFor } from "./sandbox.mjs";

const TZ = "Asia/Kolkata";
const TZ_MIN = 330;
const DAY_MS = 86_400_000;
const PRICES = JSON.parse(fs.readFileSync(path.join(ROOT, "core", "prices.json"), "utf8")).models;
const MODEL = "claude-sonnet-4-5";
const CODEX_MODEL = "gpt-5";
/** A model no price table has: its tokens count, its cost is "no price". */
const HOUSE = "house-model-1";

/** `1320000` → `1 320 000`, as the page groups (no-break spaces). */
const grouped = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u00a0");
const total = (u) => u.input + u.output + u.cache_read + u.cache_write;
/** At the shipped table's price per million tokens (a kind with no tokens needs no price). */
function cost(model, u) {
  const p = PRICES[model];
  const at = (n, price) => (n === 0 ? 0 : n * price);
  return (at(u.input, p.input) + at(u.output, p.output) + at(u.cache_read, p.cache_read) + at(u.cache_write, p.cache_write)) / 1e6;
}
/** `YYYY-MM-DD` of an instant in India. */
const dayIn = (ms) => new Date(ms + TZ_MIN * 60_000).toISOString().slice(0, 10);

/** Claude Code signed in as acct-1 in `~/.claude` and `~/.claude-alt`, as acct-2 in `~/.claude-work`. */
function twoAccounts(home) {
  fs.mkdirSync(path.join(home, ".claude"), { recursive: true });
  fs.writeFileSync(path.join(home, ".claude.json"), JSON.stringify({ oauthAccount: { accountUuid: "acct-1", emailAddress: "one@example.com" } }));
  fs.mkdirSync(path.join(home, ".claude-work"), { recursive: true });
  fs.writeFileSync(path.join(home, ".claude-work", ".claude.json"), JSON.stringify({ oauthAccount: { accountUuid: "acct-2", emailAddress: "two@example.com" } }));
  fs.mkdirSync(path.join(home, ".claude-alt"), { recursive: true });
  fs.writeFileSync(path.join(home, ".claude-alt", ".claude.json"), JSON.stringify({ oauthAccount: { accountUuid: "acct-1", emailAddress: "one@example.com" } }));
}

/** A Claude Code session's transcript: the prompt, then one assistant record per response. */
function transcript(home, configDir, id, prompt, responses) {
  const file = path.join(home, configDir, "projects", "-src-shop", `${id}.jsonl`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const first = new Date(responses[0].at - 1000).toISOString();
  const lines = [{ type: "user", timestamp: first, promptId: "p1", sessionId: id, message: { role: "user", content: prompt } }];
  for (const [i, r] of responses.entries()) {
    lines.push({
      type: "assistant",
      timestamp: new Date(r.at).toISOString(),
      promptId: "p1",
      sessionId: id,
      message: {
        id: `msg_${id.slice(0, 8)}_${i}`,
        model: r.model,
        role: "assistant",
        content: [{ type: "text", text: "Done." }],
        usage: { input_tokens: r.u.input, output_tokens: r.u.output, cache_read_input_tokens: r.u.cache_read, cache_creation_input_tokens: r.u.cache_write },
      },
    });
  }
  fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  return file;
}

/** A past Codex thread's rollout, as `sessionpipe backfill` finds it: one turn of `model`, one response of `u` (Codex counts the cached part inside its input). */
function rollout(home, id, prompt, at, model, u) {
  const d = new Date(at).toISOString();
  const dir = path.join(home, ".codex", "sessions", d.slice(0, 4), d.slice(5, 7), d.slice(8, 10));
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `rollout-${d.slice(0, 19).replace(/:/g, "-")}-${id}.jsonl`);
  const time = (ms) => new Date(at + ms).toISOString();
  const counted = { input_tokens: u.input + u.cache_read, cached_input_tokens: u.cache_read, cache_write_input_tokens: 0, output_tokens: u.output, reasoning_output_tokens: 0 };
  const totalTokens = counted.input_tokens + counted.output_tokens;
  const lines = [
    { timestamp: time(0), type: "session_meta", payload: { id, session_id: id, timestamp: time(0), cwd: path.join(home, "src", "shop"), cli_version: "0.171.0", originator: "codex_exec", source: "exec" } },
    { timestamp: time(10), type: "event_msg", payload: { type: "task_started", turn_id: "t1" } },
    { timestamp: time(20), type: "turn_context", payload: { turn_id: "t1", cwd: path.join(home, "src", "shop"), model } },
    { timestamp: time(30), type: "response_item", payload: { type: "message", role: "user", content: [{ type: "input_text", text: prompt }] } },
    { timestamp: time(900), type: "event_msg", payload: { type: "token_count", info: { total_token_usage: { ...counted, total_tokens: totalTokens }, last_token_usage: { ...counted, total_tokens: totalTokens } } } },
    { timestamp: time(910), type: "response_item", payload: { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] } },
    { timestamp: time(920), type: "event_msg", payload: { type: "task_complete", turn_id: "t1" } },
  ];
  fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
}

test("Usage: the days' chart by harness and account in the page's time zone, the top sessions, the limit windows' meters and pace", async (t) => {
  const sb = await sandbox(t, { hash: "&view=usage", prepare: twoAccounts, timezoneId: TZ });
  const { page } = sb;
  await page.getByRole("heading", { name: "Usage", level: 1 }).waitFor();
  const view = page.locator("[data-usage]");
  await view.locator(".usage-total", { hasText: "no tokens counted" }).waitFor();
  await view.getByText("No limit window heard yet.").waitFor();

  // Yesterday and three days ago, in India: the first response at 00:30 there
  // is the day before in UTC.
  const now = Date.now();
  const todayMidnight = Date.parse(`${dayIn(now)}T00:00:00Z`) - TZ_MIN * 60_000;
  const yesterday = todayMidnight - DAY_MS;
  const threeAgo = todayMidnight - 3 * DAY_MS;
  const [day1, day2, day3] = [dayIn(yesterday), dayIn(yesterday - DAY_MS), dayIn(threeAgo)];
  assert.notEqual(new Date(yesterday + 30 * 60_000).toISOString().slice(0, 10), day1, "00:30 in India is the day before in UTC");

  const a1 = { input: 100_000, output: 20_000, cache_read: 1_000_000, cache_write: 200_000 };
  const a2 = { input: 10_000, output: 2_000, cache_read: 0, cache_write: 0 };
  const b1 = { input: 200_000, output: 40_000, cache_read: 0, cache_write: 0 };
  const c1 = { input: 5_000, output: 1_000, cache_read: 0, cache_write: 0 };
  const sessions = [
    { id: randomUUID(), dir: ".claude", prompt: "fix the checkout", responses: [{ at: yesterday + 30 * 60_000, model: MODEL, u: a1 }, { at: yesterday + 12 * 3600_000, model: MODEL, u: a2 }] },
    { id: randomUUID(), dir: ".claude-work", prompt: "write the release notes", responses: [{ at: threeAgo + 10 * 3600_000, model: MODEL, u: b1 }] },
    { id: randomUUID(), dir: ".claude", prompt: "ask the house model", responses: [{ at: yesterday + 15 * 3600_000, model: HOUSE, u: c1 }] },
  ];
  const [A, B, C] = sessions;
  for (const s of sessions) {
    const file = transcript(sb.home, s.dir, s.id, s.prompt, s.responses);
    const base = { session_id: s.id, transcript_path: file, cwd: path.join(sb.home, "src", "shop") };
    sb.hook("claude-code", "SessionStart", { ...base, hook_event_name: "SessionStart", source: "startup" });
    sb.hook("claude-code", "UserPromptSubmit", { ...base, hook_event_name: "UserPromptSubmit", prompt: s.prompt, prompt_id: "p1" });
    sb.hook("claude-code", "Stop", { ...base, hook_event_name: "Stop", last_assistant_message: "Done." });
  }
  // Claude Code's status line (each a limits.observed): acct-1 at 62 % in
  // ~/.claude-alt, then 1.2 s later at 63 % in ~/.claude (the hook sends at
  // most one a minute per config dir, so two dirs of the one account make
  // the pace: 1 % in 1.2 s runs the rest out in about 44 s, before the reset).
  const resets = Math.floor(now / 1000) + 2 * 3600;
  const alt = { session_id: randomUUID(), transcript_path: path.join(sb.home, ".claude-alt", "projects", "-src-shop", "alt.jsonl"), cwd: path.join(sb.home, "src", "shop") };
  const aBase = { session_id: A.id, transcript_path: path.join(sb.home, ".claude", "projects", "-src-shop", `${A.id}.jsonl`), cwd: alt.cwd };
  for (const [base, used] of [[alt, 62], [aBase, 63]]) {
    if (used === 63) await new Promise((r) => setTimeout(r, 1200));
    const out = sb.hook("claude-code", "StatusLine", {
      ...base,
      rate_limits: { five_hour: { used_percentage: used, resets_at: resets }, seven_day: { used_percentage: 20, resets_at: resets + 86_400 } },
    });
    assert.equal(String(out.stdout), `5h ${used}% · week 20%\n`);
  }
  // A past Codex thread three days ago, its usage filled by the real backfill
  // (Codex names no account here: it is the unknown one).
  const d1 = { input: 100_000, output: 10_000, cache_read: 200_000, cache_write: 0 };
  const D = { id: randomUUID() };
  rollout(sb.home, D.id, "tidy the readme", threeAgo + 14 * 3600_000, CODEX_MODEL, d1);
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: sb.home, SESSIONPIPE_STATE_DIR: sb.state, SESSIONPIPE_SECRETS: "file", LANG: "C.UTF-8", NO_COLOR: "1" };
  const backfill = spawnSync(DAEMON, ["backfill", "--harness", "codex"], { env, cwd: sb.home, timeout: 60_000 });
  assert.equal(backfill.status, 0, String(backfill.stderr));
  await waitFor("the five responses counted", async () => {
    const r = await daemonApi(sb, "GET", "/api/usage?since=30d&by=session");
    return r.status === 200 && r.body.total.tokens.responses === 5 ? r.body : null;
  });
  // Every window the status lines reported (the board has only the fullest), with the pace.
  const standing = await waitFor("acct-1's windows standing, the 5-hour one projected", async () => {
    const r = await daemonApi(sb, "GET", "/api/usage/limits");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const mine = r.body.windows.filter((w) => w.account === "acct-1");
    const five = mine.find((w) => w.window === "five_hour" && w.used_percent === 63 && w.runs_out_at);
    return five && mine.some((w) => w.window === "seven_day") ? five : null;
  });
  await page.reload();

  // The chart: 30 days up to today in India, each bar labelled with its exact total.
  const usd = (n) => `$${n.toFixed(2)}`;
  const costA = cost(MODEL, a1) + cost(MODEL, a2);
  const costB = cost(MODEL, b1);
  const costD = cost(CODEX_MODEL, d1);
  assert.deepEqual([usd(costA), usd(costD)], ["$1.71", "$0.25"], "the list prices of sonnet 4.5 and gpt-5");
  const bars = view.locator("svg.usage-chart .bar");
  await bars.first().waitFor();
  assert.equal(await bars.count(), 30);
  assert.equal(await bars.last().getAttribute("data-day"), dayIn(now), "the last bar is today, in India");
  const day1Label = `${day1}: ${grouped(total(a1) + total(a2) + total(c1))} tokens, ${usd(costA)} + no price for ${HOUSE}`;
  const day3Label = `${day3}: ${grouped(total(b1) + total(d1))} tokens, ${usd(costB + costD)}`;
  const bar1 = view.locator(`svg .bar[data-day="${day1}"]`);
  const bar3 = view.locator(`svg .bar[data-day="${day3}"]`);
  assert.equal(await bar1.getAttribute("aria-label"), day1Label);
  assert.equal(await bar1.locator("> title").textContent(), day1Label);
  assert.equal(await bar1.getAttribute("role"), "img");
  assert.equal(await bar3.getAttribute("aria-label"), day3Label);
  assert.equal(await view.locator(`svg .bar[data-day="${day2}"]`).getAttribute("aria-label"), `${day2}: no tokens`, "nothing moved to the UTC day");
  const claude = total(a1) + total(a2) + total(b1) + total(c1);
  assert.equal(
    await view.locator(".usage-total").innerText(),
    `In the last 30 days: ${grouped(claude + total(d1))} tokens, ${usd(costA + costB + costD)} + no price for ${HOUSE} (API-equivalent).`,
  );
  assert.match(await view.locator(".usage-note").innerText(), /^Costs are API-equivalent: .*not what was paid\..*“no price”\. Prices: .*, \d{4}-\d\d-\d\d\.$/);

  // Stacked by harness: the legend sums each; three days ago is both.
  const legend = view.locator(".usage-legend li");
  assert.deepEqual(await legend.allInnerTexts(), [
    `Claude Code ${grouped(claude)} tokens, ${usd(costA + costB)} + no price for ${HOUSE}`,
    `Codex ${grouped(total(d1))} tokens, ${usd(costD)}`,
  ]);
  assert.equal(await bar1.locator("rect.series").count(), 1);
  assert.deepEqual(await bar3.locator("rect.series title").allTextContents(), [
    `${day3} · Claude Code: ${grouped(total(b1))} tokens, ${usd(costB)}`,
    `${day3} · Codex: ${grouped(total(d1))} tokens, ${usd(costD)}`,
  ]);

  // By account: acct-1, the Codex thread's unknown one, acct-2, each its own colour.
  await view.getByRole("radio", { name: "Account" }).check();
  await view.locator('svg.usage-chart[data-stack="account"]').waitFor();
  assert.deepEqual(await legend.allInnerTexts(), [
    `acct-1 ${grouped(total(a1) + total(a2) + total(c1))} tokens, ${usd(costA)} + no price for ${HOUSE}`,
    `Unknown account ${grouped(total(d1))} tokens, ${usd(costD)}`,
    `acct-2 ${grouped(total(b1))} tokens, ${usd(costB)}`,
  ]);
  assert.equal(await bar1.locator("rect.series-0").count(), 1);
  assert.deepEqual(await bar3.locator("rect.series").evaluateAll((rs) => rs.map((r) => r.getAttribute("class"))), ["series series-1", "series series-2"]);
  assert.equal(await bar3.locator("rect.series-2 title").textContent(), `${day3} · acct-2: ${grouped(total(b1))} tokens, ${usd(costB)}`);

  // The same days as a table, for reading without the chart.
  await view.locator(".usage-days-table summary").click();
  assert.deepEqual(await view.locator(".usage-days-table tbody tr").evaluateAll((trs) => trs.map((tr) => [tr.getAttribute("data-day"), tr.cells[1].innerText, tr.cells[2].innerText])), [
    [day1, grouped(total(a1) + total(a2) + total(c1)), `${usd(costA)} + no price for ${HOUSE}`],
    [day3, grouped(total(b1) + total(d1)), usd(costB + costD)],
  ]);

  // The top sessions: most costly first, the unpriced one last, each a link to its session.
  const rows = view.locator("table.usage-top tbody tr");
  assert.deepEqual(
    await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-session"))),
    [`claude-code:${A.id}`, `claude-code:${B.id}`, `codex:${D.id}`, `claude-code:${C.id}`],
  );
  const cells = async (i) => rows.nth(i).locator("th, td").allInnerTexts();
  assert.deepEqual(await cells(0), [`fix the checkout\nacct-1`, "Claude Code", grouped(total(a1) + total(a2)), usd(costA)]);
  assert.deepEqual(await cells(1), [`write the release notes\nacct-2`, "Claude Code", grouped(total(b1)), usd(costB)]);
  // A backfilled Codex thread has no title: its id's first 8 characters stand in.
  assert.deepEqual(await cells(2), [D.id.slice(0, 8), "Codex", grouped(total(d1)), usd(costD)]);
  assert.deepEqual(await cells(3), [`ask the house model\nacct-1`, "Claude Code", grouped(total(c1)), "no price"]);
  assert.equal(await rows.first().getByRole("link").getAttribute("href"), `#session=claude-code:${A.id}`);

  // The limit windows as meters, their resets and the projection in local time.
  const clockIn = (ms) => new Date(ms + TZ_MIN * 60_000).toISOString().slice(11, 16);
  const resetClock = clockIn(resets * 1000);
  const outClock = clockIn(Date.parse(standing.runs_out_at));
  const five = view.locator('[data-account="acct-1"] [data-window="five_hour"]');
  const meter = five.locator("meter");
  assert.equal(await meter.getAttribute("value"), "63");
  assert.match(
    await meter.getAttribute("aria-label"),
    new RegExp(`^acct-1: 5h window, 63% used, resets (.+, )?${resetClock}, will run out around (.+, )?${outClock} at the last hour's pace$`),
  );
  assert.match(await five.innerText(), new RegExp(`5h\\s+63%\\s+resets (.+, )?${resetClock}`));
  assert.match(await five.locator(".window-pace").innerText(), new RegExp(`^will run out around (.+, )?${outClock} at the last hour's pace$`));
  const week = view.locator('[data-account="acct-1"] [data-window="seven_day"]');
  assert.equal(await week.locator("meter").getAttribute("value"), "20");
  assert.equal(await week.locator(".window-pace").count(), 0, "a window with no pace says none");
  await sb.shot("usage");

  // Seven days: seven bars, three days ago still in them.
  await view.getByRole("radio", { name: "7 days" }).check();
  await waitFor("seven bars", async () => (await bars.count()) === 7);
  assert.equal(await bar3.getAttribute("aria-label"), day3Label);
  assert.match(await view.locator(".usage-total").innerText(), /^In the last 7 days: /);

  // A top session opens on the board.
  await rows.first().getByRole("link").click();
  await page.locator(`[data-detail="claude-code:${A.id}"]`).waitFor({ timeout: WAIT_MS });
});
