// The receiver's phone page in Debian's Chromium, with a real passkey, against
// real parts: the real `sessionpipe-receiver --page`, the real daemon
// (`sessionpipe daemon`) paired with it, its real hook, and the real Claude Code
// CLI driven offline by a scripted Messages API (src-tauri/tests/desktop.py
// messages-api). The person's phone is a Chromium tab at 390×844 with the
// DevTools protocol's virtual authenticator (ctap2, internal, resident keys,
// user verification): every passkey ceremony and every signature the page makes
// is the real WebAuthn one.
//
// The tests are one story, in order: an account with a passkey; the daemon
// paired from the page (`connect` with no --tier: tier 1); a real permission
// prompt answered from the phone, its card saying the tool and the command,
// with a message queued into the running turn; a session started from the
// page with a file; what a stranger, a second account and the machine's own
// tokens cannot do; then a second machine connected with `--tier 0`, whose
// real prompt's card says the machine hides what runs. Screenshots go to test-artifacts/receiver-page/.
//
// Needs: `cargo build --workspace --bins` (after `npm run build` here, so the
// receiver carries this page), `npm ci` in e2e/ (the real Claude Code), and
// `apt-get install chromium`. Run: `cd receiver/page && npm run test:e2e`.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { BIN_DIR, CARGO_BUILD, CHROMIUM, CHROMIUM_ARGS, ROOT, daemonCall, preflight, recordPageErrors, stop, waiter } from "@sessionpipe/web-shared/e2e";

const PAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DAEMON = path.join(BIN_DIR, "sessionpipe");
const HOOK = path.join(BIN_DIR, "sessionpipe-hook");
const RECEIVER = path.join(BIN_DIR, "sessionpipe-receiver");
const CLAUDE = path.join(ROOT, "e2e", "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude");
/** The real OpenCode, which the daemon drives over ACP (`opencode acp`). */
const OPENCODE_BIN = path.join(ROOT, "e2e", "node_modules", "opencode-linux-x64", "bin");
const DESKTOP_PY = path.join(ROOT, "src-tauri", "tests", "desktop.py");
const PYTHON = process.env.PYTHON ?? "/usr/bin/python3";
const SHOTS = path.join(ROOT, "test-artifacts", "receiver-page");
/** A phone. */
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
/** The board and a session refresh every 3 s; a command's acks every 1 s. */
const WAIT_MS = 20_000;
/** A real Claude Code run, a pairing, a machine coming online: slower. */
const SLOW_MS = 60_000;
const MACHINE_NAME = "ann-laptop";
/** A start whose first words carry this gets a slow answer from the scripted model (a turn to stop). */
const SLOW_ASK = "Take your time";
/** The second machine, connected with `--tier 0`. */
const HIDING_NAME = "ann-desktop";
/** The protocol's sentences (protocol/src/asked.rs), as generated for the pages. */
const TIER_WORDS = fs.readFileSync(path.join(ROOT, "web-shared", "src", "generated", "tier-words.ts"), "utf8");
const sentence = (name) => JSON.parse(new RegExp(`export const ${name} = (".*");`).exec(TIER_WORDS)[1]);
const TIER_1_SENTENCE = sentence("TIER_1_SENTENCE");
const HIDDEN_SENTENCE = sentence("HIDDEN_SENTENCE");
/** What the scripted model says to the message the phone put into the turn. */
const REPLY = "The folder is ~/work/phone.";

function newestIn(dir) {
  let newest = { file: null, mtime: 0 };
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    const found = entry.isDirectory() ? newestIn(p) : { file: p, mtime: fs.statSync(p).mtimeMs };
    if (found.mtime > newest.mtime) newest = found;
  }
  return newest;
}

preflight(
  "receiver page's tests",
  [
    [RECEIVER, CARGO_BUILD],
    [DAEMON, CARGO_BUILD],
    [HOOK, CARGO_BUILD],
    [CLAUDE, "npm ci (in e2e/)"],
    [DESKTOP_PY, "git checkout src-tauri/tests/desktop.py"],
    [PYTHON, "apt-get install -y python3"],
    [CHROMIUM, "apt-get install -y --no-install-recommends chromium"],
  ],
  () => {
    // The receiver carries the page it was built with: older than its sources
    // or the page's build, it would test something else.
    const stale = [];
    const built = fs.statSync(RECEIVER).mtimeMs;
    for (const dir of [path.join(ROOT, "receiver", "src"), path.join(PAGE_DIR, "dist")]) {
      if (!fs.existsSync(dir)) continue;
      const newest = newestIn(dir);
      if (newest.mtime > built) stale.push(`  ${RECEIVER} is older than ${newest.file}: run ${CARGO_BUILD}`);
    }
    return stale;
  },
);
fs.mkdirSync(SHOTS, { recursive: true });

const waitFor = waiter({ timeout: WAIT_MS, every: 100 });

// ---------------------------------------------------------------------------
// What every test shares: one temporary folder, the processes started, the
// browser, and what the earlier steps learnt.

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), "sessionpipe-page-"));
const HOME = path.join(DIR, "home");
const STATE = path.join(DIR, "state");
fs.mkdirSync(HOME, { recursive: true });
/** The folder the daemon allows for control (resolved, as its allowlist keeps it). */
const WORK = path.join(HOME, "work");
fs.mkdirSync(WORK, { recursive: true });
const WORK_REAL = fs.realpathSync(WORK);
const TOKEN = `rx-${randomBytes(18).toString("base64url")}`;

/** Every child process started, stopped after the last test. */
const children = [];
const world = {
  /** http://127.0.0.1:PORT, as the receiver prints it. */
  receiver: null,
  /** http://localhost:PORT: where the page is opened (the rp id is localhost). */
  origin: null,
  browser: null,
  ann: null,
  bob: null,
  daemon: null,
  account: null,
  credential: null,
  machine: null,
  /** The Claude Code session the phone answered. */
  session: null,
  started: null,
  /** Ids of commands Ann's page sent (POST /app/api/commands' answers). */
  commands: [],
  pageErrors: [],
  done: new Set(),
};

after(async () => {
  for (const who of [world.ann, world.bob]) await who?.context.close().catch(() => {});
  await world.browser?.close().catch(() => {});
  for (const child of children.reverse()) await stop(child);
  if (process.env.KEEP_SANDBOX === "1") console.error(`kept ${DIR}`);
  else fs.rmSync(DIR, { recursive: true, force: true });
});

/** Starts a program; its stdout/stderr go to files under DIR (or stdout piped). */
function start(name, program, args, opts = {}) {
  const out = path.join(DIR, `${name}.out`);
  const err = path.join(DIR, `${name}.err`);
  const outFd = opts.pipeStdout ? "pipe" : fs.openSync(out, "w");
  const errFd = fs.openSync(err, "w");
  const child = spawn(program, args, { ...opts, stdio: ["ignore", outFd, errFd] });
  if (typeof outFd === "number") fs.closeSync(outFd);
  fs.closeSync(errFd);
  child.exited = null;
  child.on("exit", (code, signal) => (child.exited = { code, signal }));
  child.outFile = out;
  child.errFile = err;
  child.stderr_ = () => fs.readFileSync(err, "utf8");
  children.push(child);
  return child;
}

/** Fails this test at once when an earlier step it builds on did not pass. */
function needs(...steps) {
  for (const s of steps) {
    if (!world.done.has(s)) throw new Error(`the earlier step "${s}" did not pass, so this one cannot run`);
  }
}

/** The scripted Messages API (desktop.py): its URL and what it was sent. */
async function messagesApi(name, command, { toMessage = "", slow = "", tools = [] } = {}) {
  const portFile = path.join(DIR, `${name}.port`);
  const env = { ...process.env, MESSAGES_API_REPLY_TO_MESSAGE: toMessage, MESSAGES_API_SLOW: slow, MESSAGES_API_TOOLS: JSON.stringify(tools) };
  const child = start(name, PYTHON, [DESKTOP_PY, "messages-api", portFile, command], { env });
  const port = await waitFor(`the scripted Messages API ${name}`, () => {
    if (child.exited !== null) throw new Error(`it exited: ${child.stderr_()}`);
    return fs.existsSync(portFile) && fs.readFileSync(portFile, "utf8").trim();
  });
  return {
    url: `http://127.0.0.1:${port}`,
    /** Lines it printed: `user: <text>`, `tool_result: <text>`. */
    lines: () => child.stderr_().split("\n").filter((l) => l !== ""),
  };
}

/** The scripted chat-completions API (desktop.py chat-api), for OpenCode. */
async function chatApi(name, command) {
  const portFile = path.join(DIR, `${name}.port`);
  const child = start(name, PYTHON, [DESKTOP_PY, "chat-api", portFile, command]);
  const port = await waitFor(`the scripted chat API ${name}`, () => {
    if (child.exited !== null) throw new Error(`it exited: ${child.stderr_()}`);
    return fs.existsSync(portFile) && fs.readFileSync(portFile, "utf8").trim();
  });
  return { url: `http://127.0.0.1:${port}/v1`, lines: () => child.stderr_().split("\n").filter((l) => l !== "") };
}

/** The board's "Start a session" on Ann's laptop, and its form open. */
async function openStartForm(page) {
  await page.goto(`${world.origin}/`);
  const card = page.getByRole("region", { name: "Machines" }).getByRole("listitem").filter({ hasText: MACHINE_NAME });
  await card.getByRole("link", { name: "Start a session" }).click();
  await page.getByRole("heading", { name: `Start a session on ${MACHINE_NAME}`, level: 1 }).waitFor();
}

/**
 * A start on Ann's laptop from the board's form, in the allowed folder, with
 * `harness`, `words` and (when given) `level`; the signed start's id.
 */
async function startFromPhone(page, harness, words, level = null) {
  await openStartForm(page);
  await page.getByLabel("Folder").selectOption(WORK_REAL);
  await page.getByLabel("Harness").selectOption(harness);
  if (level !== null) await page.getByLabel("Level").selectOption(level);
  await page.getByLabel("First message").fill(words);
  const before = world.commands.length;
  await page.getByRole("button", { name: "Start", exact: true }).click();
  await waitFor("the start's id", () => world.commands.length === before + 1);
  return world.commands[before];
}

/** The environment of the person's programs in the sandbox HOME. */
function personEnv(extra = {}) {
  return {
    HOME,
    SESSIONPIPE_STATE_DIR: STATE,
    SESSIONPIPE_SECRETS: "file",
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    SHELL: "/bin/bash",
    PATH: `${path.dirname(CLAUDE)}:/usr/bin:/bin`,
    ANTHROPIC_API_KEY: "sk-test-not-a-key",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    ...(process.env.SESSIONPIPE_LOG ? { SESSIONPIPE_LOG: process.env.SESSIONPIPE_LOG } : {}),
    ...extra,
  };
}

/** The daemon's local API (the token from ui.json). */
function daemonApi(method, where, body) {
  return daemonCall(world.daemon, method, where, body);
}

/** The daemon's secrets file (SESSIONPIPE_SECRETS=file): the tokens pairing handed it. */
function secrets() {
  return JSON.parse(fs.readFileSync(path.join(STATE, "secrets.json"), "utf8"));
}

/**
 * A phone: a browser context at 390×844 whose tab has its own virtual
 * authenticator (so each person has their own passkeys), page errors recorded.
 */
async function phone(name) {
  const context = await world.browser.newContext(PHONE);
  const page = await context.newPage();
  recordPageErrors(page, world.pageErrors, name);
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  const credentials = async () => (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
  return {
    name,
    context,
    page,
    credentials,
    /** A fetch made by the page itself (its cookie, its origin). */
    fetch: (where, init = {}) =>
      page.evaluate(
        async ([where, init]) => {
          const r = await fetch(where, init);
          const text = await r.text();
          let body = null;
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
          return { status: r.status, body, text };
        },
        [where, init],
      ),
    /** A screenshot at the phone's width: the viewport, or the whole page. */
    async shot(file, { fullPage = false } = {}) {
      if (fullPage) await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: path.join(SHOTS, file), fullPage });
    },
  };
}

/** A plain HTTP call from Node, with no cookie. */
async function bare(method, where, { headers = {}, body } = {}) {
  const r = await fetch(`${world.receiver}${where}`, {
    method,
    headers: { ...headers, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, text };
}

/**
 * A step of the story: on a failure, what each phone showed (its text and a
 * screenshot, failed-<step>-<who>.png) is added to the error.
 */
function step(name, slug, timeout, fn) {
  test(name, { timeout }, async (t) => {
    try {
      await fn(t);
    } catch (e) {
      const seen = [];
      for (const who of [world.ann, world.bob]) {
        if (who === null) continue;
        try {
          await who.page.screenshot({ path: path.join(SHOTS, `failed-${slug}-${who.name}.png`), fullPage: true });
          seen.push(`${who.name}'s page (${who.page.url()}):\n${(await who.page.locator("body").innerText({ timeout: 2000 })).slice(0, 3000)}`);
        } catch {
          // the page is gone
        }
      }
      if (seen.length > 0 && e instanceof Error) {
        const extra = `\n--- what the phones showed ---\n${seen.join("\n---\n")}`;
        e.message += extra;
        e.stack = `${e.stack}${extra}`;
      }
      throw e;
    }
  });
}

function regex(text) {
  return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
}

// ---------------------------------------------------------------------------

step("an account made with a passkey on the phone: the empty board; signed out, and in again with the same passkey", "account", 120_000, async () => {
  const data = path.join(DIR, "receiver");
  fs.mkdirSync(data);
  const rx = start("receiver", RECEIVER, ["--page", "--open-pairing", "--token", TOKEN, "--data", data, "--listen", "127.0.0.1:0"], { pipeStdout: true });
  world.receiver = await new Promise((resolve, reject) => {
    let out = "";
    rx.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")).trim());
    });
    rx.once("exit", (code) => reject(new Error(`the receiver exited (${code}): ${rx.stderr_()}`)));
  });
  assert.match(world.receiver, /^http:\/\/127\.0\.0\.1:\d+$/);
  world.origin = `http://localhost:${new URL(world.receiver).port}`;
  const config = await (await fetch(`${world.receiver}/app/api/config`)).json();
  assert.equal(config.rp_id, "localhost");
  assert.equal(config.registration, "open", "the first account may be made by anyone who reaches the page");
  assert.equal(config.accounts, false);

  world.browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, env: { ...process.env, HOME: path.join(DIR, "browser-home") } });
  const ann = (world.ann = await phone("ann"));
  const { page } = ann;
  page.on("response", async (r) => {
    if (r.request().method() === "POST" && new URL(r.url()).pathname === "/app/api/commands" && r.status() === 201) {
      world.commands.push((await r.json()).id);
    }
  });
  const opened = await page.goto(`${world.origin}/`);
  assert.equal(opened?.status(), 200);
  assert.match(opened.headers()["content-security-policy"] ?? "", /default-src 'self'/);

  await page.getByRole("heading", { name: "New here?" }).waitFor();
  await page.getByLabel("Your name").fill("Ann");
  await page.getByLabel("This device").fill("Ann's phone");
  await page.getByRole("button", { name: "Create an account with a passkey" }).click();

  // The empty board: every group empty, no machines yet, and how to add one.
  await page.getByText("Nothing needs you right now.").waitFor({ timeout: WAIT_MS });
  await page.getByText("No agent is working right now.").waitFor();
  await page.getByText("No finished sessions yet.").waitFor();
  const machines = page.getByRole("region", { name: "Machines" });
  await machines.getByText("No machines yet.").waitFor();
  assert.match(await machines.innerText(), regex(`sessionpipe control pair ${world.origin}`));
  assert.equal(await page.getByRole("navigation", { name: "Sections" }).isVisible(), true);

  const made = await ann.credentials();
  assert.equal(made.length, 1, "one passkey in the phone's authenticator");
  assert.equal(made[0].isResidentCredential, true, "a discoverable passkey");
  assert.equal(made[0].rpId, "localhost");
  const me = await ann.fetch("/app/api/me");
  assert.equal(me.status, 200);
  assert.equal(me.body.account.name, "Ann");
  assert.equal(me.body.credentials.length, 1);
  assert.equal(me.body.credentials[0].name, "Ann's phone");
  assert.equal(me.body.credentials[0].alg, -7);
  assert.equal(Buffer.from(me.body.credentials[0].id, "base64url").toString("base64"), made[0].credentialId, "the account's passkey is the phone's");
  assert.equal(me.body.credential, me.body.credentials[0].id, "signed in with it");
  world.account = me.body.account;
  world.credential = me.body.credentials[0];
  const cookies = await ann.context.cookies(world.origin);
  const session = cookies.find((c) => c.name === "sp_session");
  assert.ok(session, `the session cookie is set: ${JSON.stringify(cookies)}`);
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  assert.equal(await page.evaluate(() => document.cookie), "", "the page's script cannot read it");
  await ann.shot("board-empty.png");

  // Sign out (Devices), then in again with the same passkey, picked by the authenticator.
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Devices" }).click();
  await page.getByRole("heading", { name: "Devices", level: 1 }).waitFor();
  await page.getByRole("button", { name: "Sign out" }).click();
  const signIn = page.getByRole("button", { name: "Sign in with a passkey" });
  await signIn.waitFor();
  assert.equal((await ann.fetch("/app/api/me")).status, 401, "signed out at the receiver too");
  assert.equal((await ann.context.cookies(world.origin)).some((c) => c.name === "sp_session"), false, "the cookie is gone");
  assert.equal(await page.getByRole("navigation", { name: "Sections" }).isVisible(), false);
  const started = page.waitForResponse((r) => new URL(r.url()).pathname === "/app/api/signin/start");
  await signIn.click();
  const options = (await (await started).json()).publicKey;
  assert.equal((options.allowCredentials ?? []).length, 0, "a discoverable sign-in: no credential named");
  // Back where the person was (Devices), signed in as Ann with the same passkey.
  await page.getByText("Signed in as Ann, with the passkey “Ann's phone”.").waitFor({ timeout: WAIT_MS });
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Sessions" }).click();
  await page.getByText("Nothing needs you right now.").waitFor({ timeout: WAIT_MS });
  const again = await ann.fetch("/app/api/me");
  assert.equal(again.status, 200);
  assert.equal(again.body.account.id, world.account.id, "the same account");
  assert.equal(again.body.credential, world.credential.id, "with the same passkey");
  assert.equal((await ann.credentials()).length, 1, "no second passkey was made");
  assert.equal((await ann.credentials())[0].signCount >= 2, true, "the passkey signed the sign-in");
  world.done.add("account");
});

step("a notification URL on the receiver's own machine or network is refused, and the page says why", "notify-url", 60_000, async () => {
  needs("account");
  const { page } = world.ann;
  await page.goto(`${world.origin}/#view=settings`);
  await page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor();
  const address = page.getByLabel("Address");
  const save = page.getByRole("button", { name: "Save" });
  for (const [url, why] of [
    ["https://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"],
    [`http://localhost:${new URL(world.receiver).port}/app/api/me`, "only https:// addresses are taken"],
    ["https://localhost/hook", /Can't save it: url: localhost \((127\.0\.0\.1|::1)\) is a loopback address/],
    ["https://[fd00::1]/hook", "fd00::1 is a unique-local address"],
  ]) {
    await address.fill(url);
    await save.click();
    await page.getByText(typeof why === "string" ? `Can't save it: url: ${why}` : why).waitFor({ timeout: WAIT_MS });
  }
  const said = page.getByText("its operator can allow private ones with --allow-private-notify");
  await said.waitFor();
  await said.scrollIntoViewIfNeeded();
  await world.ann.shot("notify-url-refused.png");
  assert.equal((await world.ann.fetch("/app/api/me")).status, 200, "still signed in");
});

step("`sessionpipe connect` in one step: the same six digits on the phone, Approve with the passkey, the sink and hooks added, the machine online on the board", "pair", 150_000, async () => {
  needs("account");
  const { page } = world.ann;

  // The daemon's own runs (a start) go to a scripted Messages API that makes
  // no tool call: every turn says "Done.".
  world.startApi = await messagesApi("api-start", "", { slow: SLOW_ASK });
  // The machine's name, set before the daemon starts (the receiver ties a
  // session to a machine by the name its events carry).
  fs.mkdirSync(STATE, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(STATE, "config.json"), `${JSON.stringify({ machine: MACHINE_NAME }, null, 2)}\n`);
  // It serves the desktop window's UI too (its Changes are checked against the page's).
  // OpenCode on its PATH: the daemon finds it as an ACP agent it can start.
  const daemonEnv = personEnv({
    ANTHROPIC_BASE_URL: world.startApi.url,
    SESSIONPIPE_UI_DIR: path.join(ROOT, "ui", "dist"),
    PATH: `${OPENCODE_BIN}:${path.dirname(CLAUDE)}:/usr/bin:/bin`,
    OPENCODE_DISABLE_MODELS_FETCH: "true",
    OPENCODE_DISABLE_AUTOUPDATE: "true",
    OPENCODE_DISABLE_DEFAULT_PLUGINS: "true",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "true",
    OPENCODE_DISABLE_SHARE: "true",
  });
  const daemon = start("daemon", DAEMON, ["daemon"], { env: daemonEnv, cwd: HOME });
  const doc = await waitFor("the daemon's ui.json and wake.sock", () => {
    if (daemon.exited !== null) throw new Error(`the daemon exited (${JSON.stringify(daemon.exited)}): ${daemon.stderr_()}`);
    if (!fs.existsSync(path.join(STATE, "wake.sock"))) return null;
    return JSON.parse(fs.readFileSync(path.join(STATE, "ui.json"), "utf8"));
  });
  world.daemon = { url: doc.url, token: doc.token, child: daemon };
  assert.equal((await daemonApi("GET", "/api/settings")).body.machine, MACHINE_NAME);

  // The person connects the machine in one step, as the book says:
  // `sessionpipe connect <receiver>` pairs (open pairing: no token to copy),
  // adds the sink the receiver hands over (at tier 1: no --tier) and installs
  // the hooks. It prints the link and six digits and waits for the approval
  // on the phone.
  const connect = start("connect", DAEMON, ["connect", world.receiver, "--folder", WORK, "--mode", "safe"], { env: personEnv(), cwd: HOME, pipeStdout: true });
  let said = "";
  connect.stdout.on("data", (d) => (said += d));
  const shownByMachine = await waitFor("`sessionpipe connect` to print the link and digits", () => {
    if (connect.exited !== null) throw new Error(`connect exited (${JSON.stringify(connect.exited)}): ${said}${connect.stderr_()}`);
    const m = /Open (\S+) and check that it shows (\d{6})/.exec(said);
    return m ? { url: m[1], check: m[2] } : null;
  });
  const pairing = { body: { url: shownByMachine.url, check: shownByMachine.check } };
  const link = new URL(pairing.body.url);
  // The link is on the page's origin (where a passkey can sign), whatever
  // address the daemon called the receiver on.
  assert.equal(`${link.protocol}//${link.host}`, world.origin, "the link opens the page on its own origin");
  const code = /^\/pair\/([A-Za-z0-9_-]+)$/.exec(link.pathname)?.[1];
  assert.ok(code, `a /pair/<code> link: ${pairing.body.url}`);

  // The person opens the link as the machine showed it: the page, not the receiver's plain text.
  const opened = await page.goto(pairing.body.url);
  assert.equal(opened?.status(), 200);
  await page.getByRole("heading", { name: "Approve a machine", level: 1 }).waitFor();
  await page.getByText(MACHINE_NAME, { exact: true }).waitFor({ timeout: WAIT_MS });
  assert.match(await page.locator("main").innerText(), /A machine asks to join your account/);
  const shown = (await page.locator(".digits [aria-hidden='true']").innerText()).replace(/\s/g, "");
  assert.equal(shown, pairing.body.check, "the phone shows the daemon's six digits");
  assert.equal((await page.getByLabel("Its digits:").innerText()).replace(/\D/g, "").slice(-6), pairing.body.check, "and reads them out one by one");
  await world.ann.shot("pair-approve.png");
  const before = (await world.ann.credentials())[0].signCount;
  await page.getByRole("button", { name: "Approve", exact: true }).click();
  await page.getByText(`${MACHINE_NAME} now trusts this device.`).waitFor({ timeout: WAIT_MS });
  assert.ok((await world.ann.credentials())[0].signCount > before, "the passkey signed the proof");

  // connect verified the proof, added the sink and installed the hooks; the
  // daemon polls the receiver with this phone's key and the folder allowed.
  await waitFor("`sessionpipe connect` to finish", () => {
    if (connect.exited === null) return null;
    assert.equal(connect.exited.code, 0, `connect: ${said}${connect.stderr_()}`);
    return true;
  }, SLOW_MS);
  assert.match(said, /^paired with http:\/\/\S+ as m_/m, said);
  assert.match(said, /approved by /, said);
  assert.match(said, /added a sink for .* \(tier 1\)/, said);
  assert.ok(said.includes(TIER_1_SENTENCE), `connect says why tier 1, in one line: ${said}`);
  assert.match(said, /claude-code/, `connect installed the hooks: ${said}`);
  const paired = await waitFor("the daemon to poll the new receiver", async () => {
    const c = await daemonApi("GET", "/api/control");
    return c.body.receivers?.length === 1 ? c.body : null;
  }, SLOW_MS);
  assert.equal(paired.receivers[0].account, world.account.id, "approved by Ann's account");
  assert.equal(paired.receivers.length, 1);
  assert.deepEqual(paired.receivers[0].keys.map((k) => [k.id, k.alg]), [[world.credential.id, "ES256"]], "the machine trusts the phone's passkey");
  assert.deepEqual(paired.folders, [WORK_REAL]);
  world.machine = paired.receivers[0].machine;
  assert.match(world.machine, /^m_[A-Za-z0-9_-]{16,40}$/);
  const sinks = await daemonApi("GET", "/api/sinks");
  assert.equal(sinks.body.length, 1, JSON.stringify(sinks.body));
  assert.equal(new URL(sinks.body[0].url).origin, world.receiver, JSON.stringify(sinks.body[0]));
  // Open pairing adds the sink at the tier connect proposes, 1: the board
  // shows the tool and the command a prompt asks to run, secrets removed.
  assert.equal(sinks.body[0].tier, 1);
  const kept = secrets();
  assert.ok(kept[`control:${world.receiver}`]?.startsWith(`${world.machine}.`), "the machine's token is kept");
  const sinkToken = Object.entries(kept).find(([k]) => /^sink:.*:token$/.test(k))?.[1];
  assert.match(sinkToken ?? "", /^spk_/, "the sink token is one minted for the account");
  world.tokens = { machine: kept[`control:${world.receiver}`], sink: sinkToken };

  // The board: the machine, online, trusting this phone, able to start sessions.
  await page.getByRole("link", { name: "Go to your sessions" }).click();
  const card = page.getByRole("region", { name: "Machines" }).getByRole("listitem").filter({ hasText: MACHINE_NAME });
  await card.getByText("Online", { exact: true }).waitFor({ timeout: SLOW_MS });
  await card.getByRole("link", { name: "Start a session" }).waitFor({ timeout: SLOW_MS });
  assert.doesNotMatch(await card.innerText(), /doesn't trust this device/);
  const board = await world.ann.fetch("/app/api/board");
  assert.equal(board.body.machines.length, 1);
  const m = board.body.machines[0];
  assert.equal(m.id, world.machine);
  assert.equal(m.online, true);
  assert.deepEqual(m.keys, [world.credential.id]);
  assert.deepEqual(m.hello.folders, [WORK_REAL], "the hello lists the allowed folder");
  assert.ok(m.hello.starts["claude-code"], `the machine can start Claude Code: ${JSON.stringify(m.hello.starts)}`);
  await world.ann.shot("board-machine.png");
  world.done.add("paired");
});

step("a limit window running out at the last hour's pace: the machine's card on the phone says when, and the warning comes once as a question", "limits", 90_000, async () => {
  needs("paired");
  const { page } = world.ann;
  const session = randomUUID();
  const base = { session_id: session, transcript_path: path.join(HOME, ".claude", "projects", "limits.jsonl"), cwd: WORK_REAL };
  const hook = (event, payload) => {
    const out = spawnSync(HOOK, ["claude-code", event], { env: personEnv(), cwd: WORK_REAL, input: JSON.stringify({ ...base, hook_event_name: event, ...payload }), timeout: 10_000 });
    assert.equal(out.status, 0, `sessionpipe-hook claude-code ${event}: ${out.stderr}`);
  };
  // Claude Code's status line: the 5-hour window climbs 6 points in 1.2 s
  // (the hook sends one line a minute per config dir: the second is let
  // through as if the minute had passed).
  const resets = Math.floor(Date.now() / 1000) + 5 * 3600;
  const line = (used) => ({ model: { id: "claude-opus-5-5", display_name: "Opus 5.5" }, rate_limits: { five_hour: { used_percentage: used, resets_at: resets } } });
  hook("SessionStart", { source: "startup" });
  hook("StatusLine", line(40));
  await new Promise((r) => setTimeout(r, 1200));
  const memory = path.join(STATE, "status-line");
  for (const f of fs.readdirSync(memory)) {
    const [at, digest] = fs.readFileSync(path.join(memory, f), "utf8").trim().split(" ");
    fs.writeFileSync(path.join(memory, f), `${Number(at) - 61} ${digest}\n`);
  }
  hook("StatusLine", line(46));

  // The daemon's projection, and the hello's (to the minute).
  const limits = await waitFor("the daemon's pace", async () => {
    const l = await daemonApi("GET", "/api/usage/limits");
    return l.body.windows?.find((w) => w.window === "five_hour" && w.runs_out_at) ?? null;
  }, WAIT_MS);
  const card = page.getByRole("region", { name: "Machines" }).getByRole("listitem").filter({ hasText: MACHINE_NAME });
  const shown = card.locator('.limit[data-window="five_hour"]');
  await shown.getByText(/runs out around \d\d:\d\d at this pace/).waitFor({ timeout: SLOW_MS });
  assert.match(await shown.innerText(), /Claude Code.*5h 46% · resets .* · runs out around \d\d:\d\d at this pace/s);
  const board = await world.ann.fetch("/app/api/board");
  const said = board.body.machines[0].hello.limits.find((w) => w.window === "five_hour");
  const minute = new Date(Math.floor(Date.parse(limits.runs_out_at) / 60_000) * 60_000).toISOString();
  assert.equal(said.runs_out_at, minute, "the hello says the daemon's projection to the minute");
  assert.equal(said.used_percent, 46);
  // The warning: one question on the session, as any attention is shown.
  await page.getByText(/will hit its 5-hour limit around \d\d:\d\d, resets \d\d:\d\d \(46% used now\)/).first().waitFor({ timeout: SLOW_MS });
  await world.ann.shot("board-limits.png");
  hook("SessionEnd", { reason: "other" });
  world.done.add("limits");
});

step("a real Claude Code permission prompt answered from the phone, with a message queued into the running turn", "permission", 180_000, async () => {
  needs("paired");
  const { page } = world.ann;

  // Hooks in the sandbox HOME, as `sessionpipe install` writes them.
  const install = spawnSync(DAEMON, ["install", "--harness", "claude-code"], { env: personEnv(), cwd: HOME, encoding: "utf8", timeout: 60_000 });
  assert.equal(install.status, 0, `sessionpipe install: ${install.stdout}${install.stderr}`);
  const settings = fs.readFileSync(path.join(HOME, ".claude", "settings.json"), "utf8");
  assert.ok(settings.includes(HOOK) && settings.includes("claude-code PermissionRequest") && settings.includes("claude-code Stop"), settings);

  // The model's answer to the phone's message is its own words, as a real
  // model's would be: the daemon takes a continuation that repeats the turn's
  // last words ("Done." twice) for a re-read of that turn, and acks it with no
  // reply (see the report).
  const api = await messagesApi("api-claude", "touch made-from-the-phone.txt", { toMessage: REPLY });
  const project = path.join(WORK, "phone");
  fs.mkdirSync(project, { recursive: true });
  const made = path.join(project, "made-from-the-phone.txt");
  const claude = start("claude", CLAUDE, ["-p", "Make the file.", "--permission-mode", "default", "--output-format", "json"], {
    env: personEnv({ ANTHROPIC_BASE_URL: api.url }),
    cwd: project,
  });
  const claudeDone = new Promise((r) => claude.once("exit", (code) => r(code)));

  // The board: the session under "Needs you", asking for permission.
  await page.goto(`${world.origin}/`);
  const needsYou = page.getByRole("region", { name: /^Needs you/ });
  const card = needsYou.getByRole("link").filter({ hasText: "phone" });
  await card.waitFor({ timeout: SLOW_MS });
  assert.match(await card.innerText(), /Wants permission/);
  // What will run, as the notifications say it: the tool and its command.
  assert.match(await card.innerText(), /Bash touch made-from-the-phone\.txt/);
  assert.doesNotMatch(await card.innerText(), regex(HIDDEN_SENTENCE));
  assert.match(await card.innerText(), regex(`${MACHINE_NAME} · Claude Code`));
  assert.match(await card.innerText(), /~\/work\/phone/, "the folder, with the home folder as ~");
  const key = decodeURIComponent(new URL(await card.getAttribute("href"), world.origin).hash.replace(/^#session=/, ""));
  assert.match(key, /^claude-code:[0-9a-f-]{36}$/);
  world.session = key;
  assert.equal(fs.existsSync(made), false, "nothing ran before anyone answered");
  assert.equal(claude.exited, null, `Claude Code waits for the answer: ${fs.readFileSync(claude.outFile, "utf8")}`);
  assert.match(await page.title(), /^\(1\) sessionpipe$/);
  await world.ann.shot("board-attention.png");

  // The session: its open attention, in the words of the notifications
  // (the headline, what runs, where), and the message box.
  await card.click();
  const attention = page.getByRole("region", { name: "Claude Code wants to run Bash" });
  const allow = attention.getByRole("button", { name: "Allow", exact: true });
  await allow.waitFor({ timeout: WAIT_MS });
  await attention.getByRole("button", { name: "Deny", exact: true }).waitFor();
  assert.equal(await attention.locator(".ask").innerText(), "Bash touch made-from-the-phone.txt");
  assert.match(await attention.locator(".place").innerText(), /~\/work\/phone$/);
  const words = (await world.ann.fetch(`/app/api/sessions/${key}`)).body.session.attention_words;
  assert.deepEqual([words.headline, words.what, words.hidden], ["Claude Code wants to run Bash", "Bash touch made-from-the-phone.txt", null]);
  await world.ann.shot("session-approval.png");
  const text = `Also tell me the folder you are in, please (${randomUUID().slice(0, 8)}).`;
  const box = page.getByRole("textbox", { name: "Send a message" });
  await box.fill(text);
  const beforeGrant = (await world.ann.credentials())[0].signCount;
  await page.getByRole("button", { name: "Send", exact: true }).click();
  const sent = page.getByRole("region", { name: regex(`“${text}”`) });
  await sent.waitFor({ timeout: WAIT_MS });
  assert.ok((await world.ann.credentials())[0].signCount > beforeGrant, "the passkey vouched for the day key (the grant)");
  // Taken: the daemon verified it and holds it for the turn's Stop.
  await sent.getByText(regex(`Taken: ${MACHINE_NAME} handed it over and is waiting for the reply.`)).waitFor({ timeout: WAIT_MS });
  assert.equal(await box.inputValue(), "", "the box is emptied once sent");
  await waitFor("the message's id", () => world.commands.length === 1);
  const prompt = world.commands[0];
  const queued = await world.ann.fetch(`/app/api/commands/${prompt}`);
  assert.equal(queued.body.state, "taken", JSON.stringify(queued.body));
  assert.equal(queued.body.acks.final, null);
  assert.equal(queued.body.cmd, undefined, "the page gets the acks, not the command back");

  // Allow: a signed permission.answer, with the day key (no passkey prompt now).
  const beforeAllow = (await world.ann.credentials())[0].signCount;
  await allow.click();
  await attention.getByRole("button", { name: "Allow: sent" }).waitFor({ timeout: WAIT_MS });
  assert.equal((await world.ann.credentials())[0].signCount, beforeAllow, "signed with the day key: no second passkey prompt");
  await waitFor("the allowed tool to run", () => fs.existsSync(made), SLOW_MS);
  const answered = page.getByRole("region", { name: "Allow" });
  await answered.getByText("Delivered.", { exact: true }).waitFor({ timeout: WAIT_MS });

  // The turn goes on; at its Stop the queued message goes in (the `turn`
  // rung), the model answers it, and the page shows the reply.
  await sent.getByText("Delivered. The reply:").waitFor({ timeout: SLOW_MS });
  assert.equal(await sent.locator(".reply").innerText(), REPLY);
  const status = await world.ann.fetch(`/app/api/commands/${prompt}`);
  assert.equal(status.body.state, "final");
  assert.equal(status.body.acks.final.outcome, "delivered", JSON.stringify(status.body));
  assert.equal(status.body.acks.final.reply, REPLY);
  assert.equal(status.body.acks.final.mode, "turn", "delivered at the turn's Stop");
  const code = await claudeDone;
  const result = JSON.parse(fs.readFileSync(claude.outFile, "utf8"));
  assert.equal(code, 0, `Claude Code exited ${code}: ${fs.readFileSync(claude.errFile, "utf8")}`);
  assert.equal(result.is_error, false, JSON.stringify(result));
  assert.deepEqual(result.permission_denials, [], "nothing was denied");
  const lines = api.lines();
  assert.ok(lines.some((l) => l.startsWith("tool_result: ")), `the tool ran and its result went to the model: ${lines.join("\n")}`);
  const told = lines.find((l) => l.startsWith("user: ") && l.includes(text));
  assert.ok(told, `the model was sent the phone's words: ${lines.join("\n")}`);
  assert.match(told, /Message via 127\.0\.0\.1 \(sessionpipe control, signed on the sender's device; message [A-Za-z0-9_-]{12}\):\\n/, "framed as the protocol says (in place)");
  assert.equal(world.commands.length, 2, "the message and the answer");

  // The session after: done, the attention gone.
  await attention.waitFor({ state: "detached", timeout: WAIT_MS });
  await page.locator(".session-head").getByText("Done", { exact: true }).waitFor({ timeout: WAIT_MS });
  await world.ann.shot("session-after-allow.png", { fullPage: true });
  world.done.add("session");
});

step("a session started from the phone's form with a file: delivered with a reply, the file on disk, the list in the model's text", "start", 150_000, async () => {
  needs("paired");
  const { page } = world.ann;
  await openStartForm(page);

  const hello = (await world.ann.fetch("/app/api/board")).body.machines[0].hello;
  const offer = hello.starts["claude-code"];
  assert.ok(offer.levels.length > 0, `the machine offers levels: ${JSON.stringify(offer)}`);
  const level = offer.levels.includes("safe") ? "safe" : offer.levels[0];
  assert.deepEqual(await page.getByLabel("Folder").locator("option").allInnerTexts(), [WORK_REAL], "only the folders the machine allows");
  await page.getByLabel("Folder").selectOption(WORK_REAL);
  await page.getByLabel("Harness").selectOption("claude-code");
  await page.getByLabel("Level").selectOption(level);
  await page.getByLabel("First message").fill("Read the attached file.");
  const bytes = Buffer.concat([Buffer.from("Notes from the phone.\n"), randomBytes(64)]);
  await page.getByLabel("Files").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: bytes });
  await page.getByText(/^notes\.txt \(\d+ bytes\)$/).waitFor();
  await world.ann.shot("start-form.png", { fullPage: true });

  const before = world.commands.length;
  const uploads = [];
  page.on("response", async (r) => {
    if (new URL(r.url()).pathname === "/app/api/files") uploads.push({ status: r.status(), body: await r.json().catch(() => null) });
  });
  await page.getByRole("button", { name: "Start", exact: true }).click();
  const acks = page.getByRole("region", { name: `Start Claude Code in ${WORK_REAL}` });
  await acks.waitFor({ timeout: WAIT_MS });
  await acks.getByText("Delivered. The reply:").waitFor({ timeout: SLOW_MS });
  assert.equal(await acks.locator(".reply").innerText(), "Done.");
  assert.equal(uploads.length, 1);
  assert.equal(uploads[0].status, 201);
  assert.equal(uploads[0].body.sha256, createHash("sha256").update(bytes).digest("base64url"), "the receiver's hash is the bytes'");
  await waitFor("the start's id", () => world.commands.length === before + 1);
  const status = (await world.ann.fetch(`/app/api/commands/${world.commands.at(-1)}`)).body;
  assert.equal(status.acks.final.outcome, "delivered", JSON.stringify(status));
  const opener = acks.getByRole("link", { name: "Open the new session" });
  await opener.waitFor();
  const key = decodeURIComponent(new URL(await opener.getAttribute("href"), world.origin).hash.replace(/^#session=/, ""));
  const [harness, id] = [key.slice(0, key.indexOf(":")), key.slice(key.indexOf(":") + 1)];
  assert.equal(harness, "claude-code");
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "the page's own UUID v4 names the session");
  world.started = key;

  // The file, with the same bytes, where the protocol puts it.
  const kept = path.join(WORK_REAL, ".sessionpipe", "files", id, "notes.txt");
  assert.ok(fs.existsSync(kept), `the file is at ${kept}: ${fs.existsSync(path.join(WORK_REAL, ".sessionpipe")) ? JSON.stringify(fs.readdirSync(path.join(WORK_REAL, ".sessionpipe"), { recursive: true })) : "no .sessionpipe"}`);
  assert.deepEqual(fs.readFileSync(kept), bytes);
  assert.equal(fs.statSync(kept).mode & 0o777, 0o600);

  // The model was sent the first message and the attached-files list.
  const lines = world.startApi.lines();
  const first = lines.find((l) => l.startsWith("user: ") && l.includes("Read the attached file."));
  assert.ok(first, `the model was sent the start's words: ${lines.join("\n")}`);
  assert.ok(first.includes("notes.txt") && first.includes(`.sessionpipe/files/${id}`), `with the attached file's place: ${first}`);

  // The new session shows on the board, and opens.
  await opener.click();
  await page.getByRole("heading", { level: 1 }).filter({ hasText: /^Read the attached file\./ }).waitFor({ timeout: SLOW_MS });
  await page.getByRole("region", { name: "Timeline, newest at the bottom" }).getByText("Session ended").waitFor({ timeout: WAIT_MS });
  // Sent from here, so it can be written to from here.
  await page.getByRole("textbox", { name: "Send a message" }).waitFor();
  await world.ann.shot("session-started.png", { fullPage: true });
  world.done.add("started");
});

step("Stop on a session started from the phone: its running turn ends through Claude Code's own interrupt, and the acks say so", "stop", 180_000, async () => {
  needs("paired");
  const { page } = world.ann;
  // The scripted model answers this ask a word every 2 s, for a minute.
  const before = world.commands.length;
  const startId = await startFromPhone(page, "claude-code", `${SLOW_ASK} over the plan.`);

  // The running session's page (linked beside the start's acks): Stop shows
  // once its machine offers it.
  await page.getByRole("link", { name: "Its page", exact: true }).first().click();
  const stopButton = page.getByRole("button", { name: "Stop", exact: true });
  await stopButton.waitFor({ timeout: SLOW_MS });
  await waitFor("the model to be streaming its answer", () => world.startApi.lines().some((l) => l.startsWith("user: ") && l.includes(SLOW_ASK)), SLOW_MS);
  assert.equal((await world.ann.fetch(`/app/api/commands/${startId}`)).body.acks.final, null, "the start still runs");
  await stopButton.click();
  await page.getByRole("region", { name: "Stop" }).getByText("Delivered.", { exact: true }).waitFor({ timeout: SLOW_MS });
  assert.equal(world.commands.length, before + 2, "one signed cancel");
  // The turn is over: the machine no longer offers Stop, the model's stream
  // was cut, and the start's own ack says what it said and that it stopped.
  await page.locator(".stop-row button").waitFor({ state: "detached", timeout: SLOW_MS });
  assert.ok(world.startApi.lines().includes("slow answer: the client went"), world.startApi.lines().join("\n"));
  // The timeline says the turn was interrupted (read from Claude Code's
  // transcript at the session's end: no hook fires for an interrupt).
  const timelineNow = page.getByRole("region", { name: "Timeline, newest at the bottom" });
  await timelineNow.locator(".t-turn-ended").filter({ hasText: "interrupted" }).waitFor({ timeout: SLOW_MS });
  const final = await waitFor("the start's final ack", async () => (await world.ann.fetch(`/app/api/commands/${startId}`)).body.acks.final, SLOW_MS);
  assert.equal(final.outcome, "delivered", JSON.stringify(final));
  assert.match(final.reply, /^(step\d+ )*\s*\(The turn was cancelled\.\)$/, final.reply);
  assert.ok(!final.reply.includes("step29"), "stopped before the end of its answer");
});

/**
 * A real Claude Code run in `WORK/<name>` whose scripted model writes
 * notes.md, then edits it (acceptEdits: no prompt); its session id.
 */
async function writeAndEdit(name) {
  const project = path.join(WORK, name);
  fs.mkdirSync(project, { recursive: true });
  const file = path.join(project, "notes.md");
  const tools = [
    { name: "Write", input: { file_path: file, content: "alpha\nbeta\ngamma\n" } },
    { name: "Edit", input: { file_path: file, old_string: "beta", new_string: "BETA, edited" } },
  ];
  const api = await messagesApi(`api-${name}`, "", { tools });
  const claude = start(`claude-${name}`, CLAUDE, ["-p", "Write the notes, then edit them.", "--permission-mode", "acceptEdits", "--output-format", "json"], {
    env: personEnv({ ANTHROPIC_BASE_URL: api.url }),
    cwd: project,
  });
  const code = await new Promise((r) => (claude.exited !== null ? r(claude.exited.code) : claude.once("exit", (c) => r(c))));
  assert.equal(code, 0, `Claude Code exited ${code}: ${fs.readFileSync(claude.errFile, "utf8")}`);
  const result = JSON.parse(fs.readFileSync(claude.outFile, "utf8"));
  assert.equal(result.is_error, false, JSON.stringify(result));
  assert.equal(fs.readFileSync(file, "utf8"), "alpha\nBETA, edited\ngamma\n", `the model's Write and Edit ran: ${api.lines().join("\n")}`);
  return `claude-code:${result.session_id}`;
}

/** The receiver's changes of `key` once `pred` holds of them. */
function changesWhen(key, what, pred) {
  return waitFor(what, async () => {
    const r = await world.ann.fetch(`/app/api/sessions/${key}/changes`);
    return r.status === 200 && pred(r.body) ? r.body : null;
  }, SLOW_MS);
}

/** The session's page with its Changes open, and the file `path` opened in it. */
async function openChanges(page, key, file) {
  await page.goto(`${world.origin}/#session=${encodeURIComponent(key).replace(/%3A/gi, ":")}`);
  await page.locator("details.changes-section > summary").click();
  const item = page.locator("details.change-file").filter({ hasText: file });
  await item.waitFor({ timeout: WAIT_MS });
  await item.locator("summary").click();
  return item;
}

step("Changes: a real Claude Code's Write and Edit, listed at tier 1 with how they changed hidden, as diffs at tier 3 on the phone and in the desktop window; 200 edits timed", "changes", 240_000, async () => {
  needs("paired");
  const { page } = world.ann;

  // Tier 1 (as connect paired it): the file, not its content.
  const hiddenKey = await writeAndEdit("changes-tier-1");
  const atTier1 = await changesWhen(hiddenKey, "the tier-1 changes to list notes.md", (c) => c.turns.some((t) => t.files.some((f) => f.path === "notes.md")));
  const hiddenFile = atTier1.turns.flatMap((t) => t.files).find((f) => f.path === "notes.md");
  assert.deepEqual(hiddenFile.edits, [], "no edit's text reached a tier-1 receiver");
  const hidden = await openChanges(page, hiddenKey, "notes.md");
  await hidden.getByText("This machine sends the receiver tier 1: which files changed, not how.", { exact: false }).waitFor({ timeout: WAIT_MS });
  assert.doesNotMatch(await hidden.innerText(), /alpha|BETA/, "no content shown at tier 1");
  await world.ann.shot("session-changes-tier-1.png", { fullPage: true });

  // The same sink at tier 3 (its token kept): each edit's text arrives.
  const sinks = (await daemonApi("GET", "/api/sinks")).body;
  const sink = sinks.find((x) => new URL(x.url).origin === world.receiver);
  const removed = spawnSync(DAEMON, ["sink", "remove", sink.id], { env: personEnv(), cwd: HOME, encoding: "utf8", timeout: 30_000 });
  assert.equal(removed.status, 0, `sink remove: ${removed.stdout}${removed.stderr}`);
  const added = spawnSync(DAEMON, ["sink", "add", sink.url, "--tier", "3", "--token-stdin"], { env: personEnv(), cwd: HOME, encoding: "utf8", input: `${world.tokens.sink}\n`, timeout: 30_000 });
  assert.equal(added.status, 0, `sink add --tier 3: ${added.stdout}${added.stderr}`);
  await waitFor("the sink at tier 3", async () => (await daemonApi("GET", "/api/sinks")).body.some((x) => x.tier === 3));
  // The daemon takes up sinks.json within a second (its sinks' refresh);
  // until then the tier-1 sink it had still sends, and the receiver keeps
  // the first copy of an event it gets.
  await page.waitForTimeout(2500);

  const key = await writeAndEdit("changes-tier-3");
  const atTier3 = await changesWhen(key, "the tier-3 changes to carry both edits", (c) => c.turns.some((t) => t.files.some((f) => f.path === "notes.md" && f.edits.length === 2)));
  const edits = atTier3.turns.flatMap((t) => t.files).find((f) => f.path === "notes.md").edits;
  assert.deepEqual(edits.map((e) => [e.tool, e.kind, e.old, e.new]), [
    ["Write", "write", "", "alpha\nbeta\ngamma\n"],
    ["Edit", "replace", "beta", "BETA, edited"],
  ]);
  const file = await openChanges(page, key, "notes.md");
  assert.match(await file.locator("summary").innerText(), /notes\.md\s+\+4\s+−1/, "the file's counts: 3 lines written, 1 replaced");
  const lines = await file.locator("pre.diff span").allInnerTexts();
  assert.deepEqual(lines, ["+ alpha", "+ beta", "+ gamma", "- beta", "+ BETA, edited"]);
  await world.ann.shot("session-changes-tier-3.png", { fullPage: true });

  // The desktop window, against the daemon: the same changes, the same diff.
  const desk = await world.browser.newContext({ viewport: { width: 1200, height: 800 } });
  try {
    const win = await desk.newPage();
    recordPageErrors(win, world.pageErrors, "desktop");
    await win.goto(`${world.daemon.url}/#token=${world.daemon.token}&session=${key}`);
    await win.locator("details.changes-section > summary").click();
    const deskFile = win.locator("details.change-file").filter({ hasText: "notes.md" });
    await deskFile.waitFor({ timeout: WAIT_MS });
    await deskFile.locator("summary").click();
    assert.deepEqual(await deskFile.locator("pre.diff span").allInnerTexts(), lines, "the desktop window shows what the phone shows");
    await win.screenshot({ path: path.join(SHOTS, "desktop-changes.png"), fullPage: true });
  } finally {
    await desk.close();
  }

  // 200 edits in 20 turns, through the real hook and daemon (Claude Code's
  // PostToolUse payloads, as it sends them): the phone's Changes, timed.
  const many = randomUUID();
  const project = path.join(WORK, "changes-many");
  fs.mkdirSync(project, { recursive: true });
  const base = { session_id: many, transcript_path: path.join(HOME, ".claude", "projects", "many.jsonl"), cwd: project };
  const hook = (event, payload) => {
    const out = spawnSync(HOOK, ["claude-code", event], { env: personEnv(), cwd: project, input: JSON.stringify({ ...base, hook_event_name: event, ...payload }), timeout: 10_000 });
    assert.equal(out.status, 0, `sessionpipe-hook claude-code ${event}: ${out.stderr}`);
  };
  const body = (i) => Array.from({ length: 30 }, (_, n) => `line ${n} of file ${i % 40}`).join("\n");
  hook("SessionStart", { source: "startup" });
  for (let turn = 0; turn < 20; turn += 1) {
    hook("UserPromptSubmit", { prompt: `turn ${turn}`, prompt_id: `p-${turn}` });
    for (let e = 0; e < 10; e += 1) {
      const i = turn * 10 + e;
      const old = body(i);
      const input = { file_path: path.join(project, "src", `file${i % 40}.rs`), old_string: old, new_string: old.replace("line 7 ", `line 7 changed in edit ${i} `) };
      hook("PostToolUse", { tool_name: "Edit", tool_input: input, tool_response: { filePath: input.file_path }, tool_use_id: `toolu_${i}` });
    }
  }
  const manyKey = `claude-code:${many}`;
  await changesWhen(manyKey, "the receiver to hold 200 edits", (c) => c.turns.reduce((n, t) => n + t.files.reduce((m, f) => m + f.edits.length, 0), 0) === 200);
  await page.goto(`${world.origin}/#session=${manyKey}`);
  await page.locator("details.changes-section > summary").click();
  await page.locator("details.change-file").nth(199).waitFor({ state: "attached", timeout: SLOW_MS });
  assert.equal(await page.locator("details.change-file").count(), 200, "20 turns of 10 files");
  const listMs = await page.evaluate(() => performance.getEntriesByName("changes-render").at(-1).duration);
  // Every file opened at once: each one's diff drawn (on its toggle event).
  const openMs = await page.evaluate(async () => {
    const t0 = performance.now();
    const all = document.querySelectorAll("details.change-file");
    for (const d of all) d.open = true;
    while (document.querySelectorAll("details.change-file .change-body > *").length < all.length) {
      await new Promise((r) => setTimeout(r, 0));
    }
    void document.body.offsetHeight;
    return performance.now() - t0;
  });
  assert.equal(await page.locator("details.change-file pre.diff").count(), 200, "every edit's diff drawn");
  console.log(`# Changes of 200 edits on the phone page: listed in ${listMs.toFixed(1)} ms, all 200 diffs drawn in ${openMs.toFixed(1)} ms`);
  fs.writeFileSync(path.join(SHOTS, "changes-200-timing.json"), `${JSON.stringify({ listMs, openMs })}\n`);
  world.done.add("changes");
});

step("Stop in the desktop window (against the daemon): a start from the phone ends through Claude Code's own interrupt", "desktop-stop", 180_000, async () => {
  needs("paired");
  const { page } = world.ann;
  const before = world.commands.length;
  const startId = await startFromPhone(page, "claude-code", `${SLOW_ASK} with the desktop.`);
  const its = page.getByRole("link", { name: "Its page", exact: true }).first();
  await its.waitFor({ timeout: SLOW_MS });
  const key = decodeURIComponent(new URL(await its.getAttribute("href"), world.origin).hash.replace(/^#session=/, ""));
  assert.match(key, /^claude-code:/);
  await waitFor("the model to be streaming its answer", () => world.startApi.lines().some((l) => l.startsWith("user: ") && l.includes("with the desktop")), SLOW_MS);

  const desk = await world.browser.newContext({ viewport: { width: 1200, height: 800 } });
  try {
    const win = await desk.newPage();
    recordPageErrors(win, world.pageErrors, "desktop");
    await win.goto(`${world.daemon.url}/#token=${world.daemon.token}&session=${key}`);
    const detail = win.locator(`[data-detail="${key}"]`);
    const stopButton = detail.getByRole("button", { name: "Stop", exact: true });
    await stopButton.waitFor({ timeout: SLOW_MS });
    assert.equal((await world.ann.fetch(`/app/api/commands/${startId}`)).body.acks.final, null, "the start still runs");
    await stopButton.click();
    await detail.getByText("Stopped (through sdk).").waitFor({ timeout: SLOW_MS });
    await win.screenshot({ path: path.join(SHOTS, "desktop-stopped.png"), fullPage: true });
    // The turn is over: the window no longer offers Stop (the button goes,
    // whatever it says).
    await detail.locator(".stop-row button").waitFor({ state: "detached", timeout: SLOW_MS });
  } finally {
    await desk.close();
  }
  assert.equal(world.commands.length, before + 1, "no command went through the receiver for it");
  const final = await waitFor("the start's final ack", async () => (await world.ann.fetch(`/app/api/commands/${startId}`)).body.acks.final, SLOW_MS);
  assert.equal(final.outcome, "delivered", JSON.stringify(final));
  assert.match(final.reply, /\(The turn was cancelled\.\)$/, final.reply);
  assert.ok(!final.reply.includes("step29"), "stopped before the end of its answer");
});

step("Stop on an OpenCode session the phone started over ACP: its running turn ends through the agent's own session/cancel", "acp-stop", 180_000, async () => {
  needs("paired");
  const { page } = world.ann;
  // The real OpenCode against a scripted model whose first turn runs a long
  // `sleep`; its shell runs without asking (a turn to stop, not a prompt).
  const chat = await chatApi("chat-acp", "sleep 45");
  const config = path.join(HOME, ".config", "opencode");
  fs.mkdirSync(config, { recursive: true });
  fs.writeFileSync(path.join(config, "opencode.json"), `${JSON.stringify({
    $schema: "https://opencode.ai/config.json",
    provider: { mock: { npm: "@ai-sdk/openai-compatible", name: "Mock", options: { baseURL: chat.url, apiKey: "test-not-a-key" }, models: { "mock-model": { name: "Mock", tool_call: true } } } },
    model: "mock/mock-model",
    small_model: "mock/mock-model",
    enabled_providers: ["mock"],
    autoupdate: false,
    share: "disabled",
    permission: { bash: "allow" },
  }, null, 2)}\n`);
  // Its plugin (`sessionpipe install`) reports the session's events.
  const install = spawnSync(DAEMON, ["install", "--harness", "opencode"], { env: personEnv(), cwd: HOME, encoding: "utf8", timeout: 60_000 });
  assert.equal(install.status, 0, `sessionpipe install --harness opencode: ${install.stdout}${install.stderr}`);
  await waitFor("the machine to offer OpenCode starts", async () => {
    const m = (await world.ann.fetch("/app/api/board")).body.machines.find((x) => x.id === world.machine);
    return m?.hello?.starts?.opencode !== undefined;
  }, SLOW_MS);

  const startId = await startFromPhone(page, "opencode", "Wait for the build, please.");
  await page.getByRole("link", { name: "Its page", exact: true }).first().click();
  await waitFor("OpenCode to run the sleep", () => chat.lines().includes("tool call: sleep 45"), SLOW_MS);
  const stopButton = page.getByRole("button", { name: "Stop", exact: true });
  await stopButton.waitFor({ timeout: SLOW_MS });
  assert.equal((await world.ann.fetch(`/app/api/commands/${startId}`)).body.acks.final, null, "the start still runs");
  await stopButton.click();
  const stopped = page.getByRole("region", { name: "Stop" });
  await stopped.getByText("Delivered.", { exact: true }).waitFor({ timeout: SLOW_MS });
  await page.locator(".stop-row button").waitFor({ state: "detached", timeout: SLOW_MS });
  const final = await waitFor("the start's final ack", async () => (await world.ann.fetch(`/app/api/commands/${startId}`)).body.acks.final, SLOW_MS);
  assert.equal(final.outcome, "delivered", JSON.stringify(final));
  assert.match(final.reply ?? "", /\(The turn was cancelled\.\)$/, JSON.stringify(final));
  await page.getByRole("region", { name: "Timeline, newest at the bottom" }).locator(".t-turn-ended").filter({ hasText: "interrupted" }).waitFor({ timeout: SLOW_MS });
  await waitFor("the cancelled sleep to be gone", () => spawnSync("pgrep", ["-f", "^sleep 45$"], { encoding: "utf8" }).stdout.trim() === "", WAIT_MS);
  await world.ann.shot("session-acp-stopped.png", { fullPage: true });
});

step("abuse: no cookie, no page header, another account, and the machine's own tokens get nothing", "abuse", 120_000, async () => {
  needs("account", "paired");
  const ann = world.ann;
  const key = world.session ?? "claude-code:00000000-0000-4000-8000-000000000000";
  const command = world.commands[0] ?? "01HZZZZZZZZZZZZZZZZZZZZZZZ";
  const secretsOf = [world.machine, key.split(":")[1], command, world.account.id, MACHINE_NAME];
  const leaks = (text) => secretsOf.filter((s) => text.includes(s));

  // No cookie: 401 signed_out and nothing else, from Node and from the browser.
  for (const where of ["/app/api/board", "/app/api/me", `/app/api/sessions/${key}`, `/app/api/commands/${command}`, `/app/api/pair/nope`]) {
    const r = await bare("GET", where);
    assert.equal(r.status, 401, `${where} without the cookie: ${r.text}`);
    assert.equal(JSON.parse(r.text).reason, "signed_out");
    assert.deepEqual(leaks(r.text), [], `${where} says nothing of the account`);
    const b = await ann.fetch(where, { credentials: "omit" });
    assert.equal(b.status, 401, `${where} from the browser without the cookie`);
    assert.deepEqual(leaks(b.text), []);
  }
  // A cookie that is not a session.
  const forged = await bare("GET", "/app/api/board", { headers: { cookie: `sp_session=${randomBytes(32).toString("base64url")}` } });
  assert.equal(forged.status, 401);

  // The page's header is required on every state-changing call, the cookie
  // notwithstanding; and a foreign Origin is refused too.
  const noHeader = await ann.fetch("/app/api/invites", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ device: false }) });
  assert.equal(noHeader.status, 403, noHeader.text);
  assert.equal(noHeader.body.reason, "not_the_page");
  const noHeaderCmd = await ann.fetch("/app/api/commands", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ machine: world.machine, cmd: "{}" }) });
  assert.equal(noHeaderCmd.status, 403, noHeaderCmd.text);
  const cookie = (await ann.context.cookies(world.origin)).find((c) => c.name === "sp_session").value;
  const elsewhere = await bare("POST", "/app/api/invites", { headers: { cookie: `sp_session=${cookie}`, "x-sessionpipe-page": "1", origin: "http://evil.example" }, body: { device: false } });
  assert.equal(elsewhere.status, 403, elsewhere.text);
  const signOutNoHeader = await bare("POST", "/app/api/signout", { headers: { cookie: `sp_session=${cookie}` } });
  assert.equal(signOutNoHeader.status, 403, "no sign-out without the page's header");
  assert.equal((await ann.fetch("/app/api/me")).status, 200, "still signed in");

  // A second account, invited by the first from its Devices screen.
  const { page } = ann;
  await page.goto(`${world.origin}/#view=devices`);
  await page.getByRole("button", { name: "Invite someone else" }).click();
  const inviteUrl = await page.getByLabel("Send this link to the person you invite:").inputValue();
  assert.match(inviteUrl, regex(`${world.origin}/#invite=`));
  const bob = (world.bob = await phone("bob"));
  await bob.page.goto(inviteUrl);
  await bob.page.getByRole("heading", { name: "You're invited" }).waitFor();
  await bob.page.getByLabel("Your name").fill("Bob");
  await bob.page.getByLabel("This device").fill("Bob's phone");
  await bob.page.getByRole("button", { name: "Accept with a passkey" }).click();
  await bob.page.getByText("Nothing needs you right now.").waitFor({ timeout: WAIT_MS });
  await bob.page.getByRole("region", { name: "Machines" }).getByText("No machines yet.").waitFor();
  const bobMe = (await bob.fetch("/app/api/me")).body;
  assert.equal(bobMe.account.name, "Bob");
  assert.notEqual(bobMe.account.id, world.account.id, "a new account, not Ann's");
  assert.deepEqual(bobMe.machines, []);
  const bobBoard = await bob.fetch("/app/api/board");
  assert.deepEqual(bobBoard.body, { machines: [], sessions: [] }, "none of Ann's machines or sessions");
  assert.deepEqual(leaks(bobBoard.text), []);
  await bob.page.waitForTimeout(3500); // a board refresh
  assert.deepEqual(leaks(await bob.page.locator("main").innerText()), [], "nothing of Ann's on Bob's board");
  // The invite worked once.
  const twice = await bare("POST", "/app/api/register/start", { headers: { "x-sessionpipe-page": "1" }, body: { name: "Eve", invite: new URL(inviteUrl).hash.replace("#invite=", "") } });
  assert.ok(twice.status >= 400 && twice.status < 500, `a used invite is refused: ${twice.status} ${twice.text}`);

  for (const where of [`/app/api/sessions/${key}`, ...(world.started ? [`/app/api/sessions/${world.started}`] : []), ...world.commands.map((c) => `/app/api/commands/${c}`)]) {
    const r = await bob.fetch(where);
    assert.equal(r.status, 404, `Bob's ${where}: ${r.text}`);
    assert.deepEqual(leaks(r.text.replace(where, "")), [], `Bob's ${where} says nothing of Ann's`);
  }
  // Bob signs a real command (a passkey confirm) for Ann's machine: refused as no such machine.
  const bobCommand = await bob.page.evaluate(
    async ([machine, session, credential]) => {
      const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      const unb64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
      const nonce = b64(crypto.getRandomValues(new Uint8Array(18)));
      const cmd = JSON.stringify({ v: 1, t: "sessionpipe.control", machine, kind: "prompt", session, text: "rm -rf everything", nonce, iat: Date.now() });
      const got = await navigator.credentials.get({
        publicKey: { challenge: await crypto.subtle.digest("SHA-256", new TextEncoder().encode(cmd)), rpId: "localhost", allowCredentials: [{ type: "public-key", id: unb64(credential) }], userVerification: "required" },
      });
      const confirm = { cred: b64(got.rawId), ad: b64(got.response.authenticatorData), cd: b64(got.response.clientDataJSON), sig: b64(got.response.signature) };
      const r = await fetch("/app/api/commands", { method: "POST", headers: { "content-type": "application/json", "x-sessionpipe-page": "1" }, body: JSON.stringify({ machine, cmd, confirm }) });
      return { status: r.status, text: await r.text() };
    },
    [world.machine, key, bobMe.credential],
  );
  assert.equal(bobCommand.status, 404, `Bob's command for Ann's machine: ${bobCommand.text}`);
  assert.equal(JSON.parse(bobCommand.text).reason, "not_found");
  const none = await bob.fetch("/app/api/commands", { method: "POST", headers: { "content-type": "application/json", "x-sessionpipe-page": "1" }, body: JSON.stringify({ machine: "m_AAAAAAAAAAAAAAAAAAAAAA", cmd: "{}" }) });
  assert.equal(none.status, 404, "a machine that does not exist: the same answer");
  assert.equal(none.text, bobCommand.text, "word for word the same: Ann's machine is not told apart from none");

  // The machine's token opens no page call; the sink token and the receiver's
  // own token cannot poll the machine's commands.
  const { machine: machineToken, sink: sinkToken } = world.tokens;
  for (const where of ["/app/api/board", "/app/api/me", `/app/api/sessions/${key}`]) {
    for (const headers of [{ authorization: `Bearer ${machineToken}` }, { cookie: `sp_session=${machineToken}` }, { authorization: `Bearer ${sinkToken}` }]) {
      const r = await bare("GET", where, { headers });
      assert.equal(r.status, 401, `${where} with ${Object.keys(headers)[0]} of a machine/sink token: ${r.text}`);
      assert.deepEqual(leaks(r.text), []);
    }
  }
  const commandWithToken = await bare("POST", "/app/api/commands", { headers: { authorization: `Bearer ${machineToken}`, "x-sessionpipe-page": "1" }, body: { machine: world.machine, cmd: "{}" } });
  assert.equal(commandWithToken.status, 401, "the machine's token sends no command");
  for (const [what, token] of [["the sink token", sinkToken], ["the receiver's own token", TOKEN]]) {
    const r = await bare("GET", `/v1/control?machine=${encodeURIComponent(world.machine)}&wait=0`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 401, `${what} polls the machine's commands: ${r.status} ${r.text}`);
  }
  // The control: the machine's own token does poll (so the 401s above are the token's).
  const own = await bare("GET", `/v1/control?machine=${encodeURIComponent(world.machine)}&wait=0`, { headers: { authorization: `Bearer ${machineToken}` } });
  assert.ok(own.status === 200 || own.status === 204, `the machine's token polls: ${own.status} ${own.text}`);
  await bob.shot("second-account-board.png");
});

step("a second machine connected with `--tier 0`: said plainly there, and its real prompt's card says the machine hides what runs, with no Allow", "tier-0", 180_000, async () => {
  needs("account", "paired");
  const { page } = world.ann;
  // Another computer of Ann's: its own state and daemon, the same HOME (the
  // hooks read the state folder from the environment).
  const state = path.join(DIR, "state-hiding");
  fs.mkdirSync(state, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(state, "config.json"), `${JSON.stringify({ machine: HIDING_NAME }, null, 2)}\n`);
  const env = (extra = {}) => personEnv({ SESSIONPIPE_STATE_DIR: state, ...extra });
  const daemon = start("daemon-hiding", DAEMON, ["daemon"], { env: env(), cwd: HOME });
  await waitFor("the second daemon's wake.sock", () => {
    if (daemon.exited !== null) throw new Error(`the daemon exited (${JSON.stringify(daemon.exited)}): ${daemon.stderr_()}`);
    return fs.existsSync(path.join(state, "wake.sock"));
  });
  const doc = JSON.parse(fs.readFileSync(path.join(state, "ui.json"), "utf8"));
  const hiding = { url: doc.url, token: doc.token };

  const connect = start("connect-hiding", DAEMON, ["connect", world.receiver, "--tier", "0", "--folder", WORK, "--mode", "safe"], { env: env(), cwd: HOME, pipeStdout: true });
  let said = "";
  connect.stdout.on("data", (d) => (said += d));
  const link = await waitFor("`sessionpipe connect --tier 0` to print the link", () => {
    if (connect.exited !== null) throw new Error(`connect exited (${JSON.stringify(connect.exited)}): ${said}${connect.stderr_()}`);
    return /Open (\S+) and check that it shows \d{6}/.exec(said)?.[1] ?? null;
  });
  await page.goto(link);
  await page.getByRole("heading", { name: "Approve a machine", level: 1 }).waitFor();
  await page.getByText(HIDING_NAME, { exact: true }).waitFor({ timeout: WAIT_MS });
  // The approval says what the page will see is the machine's choice.
  assert.match(await page.locator("main").innerText(), regex(HIDDEN_SENTENCE));
  await page.getByRole("button", { name: "Approve", exact: true }).click();
  await page.getByText(`${HIDING_NAME} now trusts this device.`).waitFor({ timeout: WAIT_MS });
  await waitFor("`sessionpipe connect --tier 0` to finish", () => {
    if (connect.exited === null) return null;
    assert.equal(connect.exited.code, 0, `connect: ${said}${connect.stderr_()}`);
    return true;
  }, SLOW_MS);
  // Said plainly on the machine: the tier, and what it means.
  assert.match(said, /added a sink for .* \(tier 0\)/, said);
  assert.ok(said.includes(HIDDEN_SENTENCE), `connect --tier 0 says the machine hides what runs: ${said}`);
  assert.ok(!said.includes(TIER_1_SENTENCE), said);
  const sinks = await daemonCall(hiding, "GET", "/api/sinks");
  assert.equal(sinks.body[0].tier, 0);
  const control = await waitFor("the second daemon to poll", async () => {
    const c = await daemonCall(hiding, "GET", "/api/control");
    return c.body.receivers?.length === 1 ? c.body : null;
  }, SLOW_MS);
  assert.equal(control.receivers[0].tier, 0, "the UI's Pairing page is told the tier");

  // A real prompt on that machine.
  const api = await messagesApi("api-hiding", "touch made-at-tier-0.txt");
  const project = path.join(WORK, "hidden");
  fs.mkdirSync(project, { recursive: true });
  const made = path.join(project, "made-at-tier-0.txt");
  const claude = start("claude-hiding", CLAUDE, ["-p", "Make the file.", "--permission-mode", "default", "--output-format", "json"], {
    env: env({ ANTHROPIC_BASE_URL: api.url }),
    cwd: project,
  });
  await page.goto(`${world.origin}/`);
  // Its hello carries the tier: the board says it by that machine, and only there.
  await page.locator("li.machine").filter({ hasText: HIDING_NAME }).getByText(HIDDEN_SENTENCE).waitFor({ timeout: SLOW_MS });
  assert.equal(await page.locator("li.machine").filter({ hasText: HIDDEN_SENTENCE }).count(), 1, "the tier-1 machine does not say it");
  const card = page.getByRole("region", { name: /^Needs you/ }).getByRole("link").filter({ hasText: "hidden" });
  await card.waitFor({ timeout: SLOW_MS });
  assert.match(await card.innerText(), regex(HIDDEN_SENTENCE));
  assert.doesNotMatch(await card.innerText(), /made-at-tier-0/, "no command at tier 0");
  assert.match(await card.innerText(), regex(`${HIDING_NAME} · Claude Code`));
  await world.ann.shot("board-attention-tier-0.png");
  await card.click();
  const attention = page.getByRole("region", { name: "Claude Code needs your permission" });
  await attention.getByText(HIDDEN_SENTENCE).waitFor({ timeout: WAIT_MS });
  const deny = attention.getByRole("button", { name: "Deny", exact: true });
  await deny.waitFor();
  assert.equal(await attention.getByRole("button", { name: "Allow", exact: true }).count(), 0, "what runs is not shown, so Allow is not offered");
  assert.doesNotMatch(await attention.innerText(), /made-at-tier-0/);
  await world.ann.shot("session-approval-tier-0.png");
  assert.equal(fs.existsSync(made), false, "nothing ran");
  assert.equal(claude.exited, null, "Claude Code waits for the answer");
  // Deny is still a signed answer the machine takes.
  await deny.click();
  await page.getByRole("region", { name: "Deny" }).getByText("Delivered.", { exact: true }).waitFor({ timeout: WAIT_MS });
  await attention.waitFor({ state: "detached", timeout: SLOW_MS });
  assert.equal(fs.existsSync(made), false, "denied: it never ran");
  await stop(claude);
});

step("its own worktree: with `control worktrees on`, a real Claude Code start from the phone writes in a new git worktree on sessionpipe/<id>, not in the checkout; prune keeps it while it holds work, then removes it", "worktrees", 180_000, async () => {
  needs("paired");
  const { page } = world.ann;
  // The allowed folder becomes a git repository with one commit.
  const git = (...args) => {
    const r = spawnSync("git", ["-c", "user.name=Ann", "-c", "user.email=ann@example.com", ...args], { cwd: WORK, encoding: "utf8", env: personEnv() });
    assert.equal(r.status, 0, `git ${args.join(" ")}: ${r.stdout}${r.stderr}`);
    return r.stdout;
  };
  git("init", "-q", "-b", "main");
  fs.writeFileSync(path.join(WORK, "README.md"), "# work\n");
  git("add", "README.md");
  git("commit", "-q", "-m", "first");
  const cli = (...args) => {
    const r = spawnSync(DAEMON, args, { env: personEnv(), cwd: HOME, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, `sessionpipe ${args.join(" ")}: ${r.stdout}${r.stderr}`);
    return r.stdout;
  };
  cli("control", "worktrees", "on");
  // A start may write only at the `edits` level, which a `safe` machine does
  // not offer (its `safe` runs ask nobody and are refused any write).
  cli("control", "mode", "auto");
  await waitFor("the machine to offer starts at `edits`", async () => {
    const m = (await world.ann.fetch("/app/api/board")).body.machines.find((x) => x.id === world.machine);
    return m?.hello?.starts?.["claude-code"]?.levels?.includes("edits");
  }, SLOW_MS);

  // The start, from the phone's form; the model writes a file where it runs.
  const startId = await startFromPhone(page, "claude-code", "Make the note [[write made-in-worktree.txt]].", "edits");
  const its = page.getByRole("link", { name: "Its page", exact: true }).first();
  await its.waitFor({ timeout: SLOW_MS });
  await its.click();
  const final = await waitFor("the start's final ack", async () => (await world.ann.fetch(`/app/api/commands/${startId}`)).body.acks.final, SLOW_MS);
  assert.equal(final.outcome, "delivered", JSON.stringify(final));

  // The file is in the worktree, not in the checkout; the session's page says the branch.
  const listed = JSON.parse(cli("worktrees", "list", "--json")).worktrees;
  assert.equal(listed.length, 1, JSON.stringify(listed));
  const tree = listed[0];
  assert.match(tree.branch, /^sessionpipe\/[0-9A-Za-z]{8}$/);
  assert.equal(fs.readFileSync(path.join(tree.path, "made-in-worktree.txt"), "utf8"), "written by the model\n");
  assert.equal(fs.existsSync(path.join(WORK, "made-in-worktree.txt")), false, "nothing written in the checkout");
  await page.locator("dl.facts").getByText(tree.branch).waitFor({ timeout: SLOW_MS });
  await world.ann.shot("session-worktree.png", { fullPage: true });

  // Once the session ended, prune keeps it (its file is uncommitted work) ...
  await waitFor("the session to end", () => JSON.parse(cli("worktrees", "list", "--json")).worktrees[0].state === "ended", SLOW_MS);
  const kept = cli("worktrees", "prune");
  assert.match(kept, /uncommitted/, kept);
  assert.ok(fs.existsSync(tree.path), "kept");
  // ... and removes it, with its branch, once nothing in it is work.
  fs.rmSync(path.join(tree.path, "made-in-worktree.txt"));
  cli("worktrees", "prune");
  assert.equal(fs.existsSync(tree.path), false, "removed");
  assert.doesNotMatch(git("branch", "--list"), new RegExp(tree.branch.replace("/", "\\/")));
  cli("control", "worktrees", "off");
  cli("control", "mode", "safe");
});

test("no uncaught errors or CSP refusals in the pages", () => {
  assert.deepEqual(world.pageErrors, []);
});
