// The window's page on a waiting permission prompt, for src-tauri/tests/xvfb.sh
// step 12: the same page the app's window loads (the daemon's UI, the token in
// the fragment, from $SP_UI_PAGE), in Debian's Chromium through playwright-core
// as ui/ resolves it (the npm workspace's, at the repo root). Finds the approval whose text has TEXT, checks it shows
// Allow and Deny, clicks Allow (a person's click) and waits for the page to say
// it was allowed; screenshots to SHOT. Owns nothing else; exits 1 on failure.
// Usage: SP_UI_PAGE=URL node approve-in-page.mjs UI_DIR TEXT SHOT

import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [uiDir, text, shot] = process.argv.slice(2);
const page_url = process.env.SP_UI_PAGE;
if (!uiDir || !text || !shot || !page_url) {
  console.error("usage: SP_UI_PAGE=URL node approve-in-page.mjs UI_DIR TEXT SHOT");
  process.exit(2);
}
const { chromium } = createRequire(path.join(uiDir, "package.json"))("playwright-core");
const WAIT_MS = 15_000;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "sp-approve-page-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 900, height: 640 },
  env: { ...process.env, HOME: path.join(profile, "home") },
});
let failed = false;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(page_url);
  const approval = page.locator(".approvals li.approval", { hasText: text });
  await approval.waitFor({ timeout: WAIT_MS });
  const allow = approval.getByRole("button", { name: /^Allow / });
  const deny = approval.getByRole("button", { name: /^Deny / });
  await allow.waitFor({ timeout: WAIT_MS });
  await deny.waitFor({ timeout: WAIT_MS });
  console.log(`the page lists: ${(await approval.innerText()).replace(/\s+/g, " ").trim()}`);
  await page.screenshot({ path: shot });
  await allow.click();
  // The answer shows until the attention clears (the tool ran, its next hook
  // came). On a busy machine the clearing can land in the same refresh as the
  // answer, and the approval leaves the list without the words ever painting:
  // either is an answer taken; the caller then checks the tool really ran.
  const said = page.waitForSelector(".approvals li.approval .message.ok", { timeout: WAIT_MS }).then((el) => ({ el }));
  const gone = approval.waitFor({ state: "detached", timeout: WAIT_MS }).then(() => ({ el: null }));
  const first = await Promise.race([said, gone]);
  said.catch(() => {});
  gone.catch(() => {});
  if (first.el) {
    const words = (await first.el.textContent())?.trim() ?? "";
    if (!words.startsWith("Allowed")) throw new Error(`the page said ${JSON.stringify(words)}`);
    console.log(`after Allow the page says: ${words}`);
    if ((await approval.getByRole("button", { name: /^Allow/ }).count()) !== 0) throw new Error("the buttons stayed after the answer");
  } else {
    console.log("after Allow the approval left the list (answered and cleared at once)");
  }
} catch (e) {
  console.error(`the page: ${e}`);
  failed = true;
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
