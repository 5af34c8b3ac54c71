// Pairing, Pool and Titles: what turning each on reads, writes and sends,
// said plainly (facts: shared spec ADAPTERS.md and PROTOCOL-NOTES §6). Each
// page is live and shows these parts below its own controls
// (`consentParts`). This file owns the words only: it must not call the API
// or hold a switch.

import { h, prose } from "@sessionpipe/web-shared/dom";

export type ConsentKind = "pairing" | "pool" | "titles";

interface Consent {
  title: string;
  switchLabel: string;
  lead: string;
  sections: { heading: string; items: string[] }[];
}

const CONSENT: Record<ConsentKind, Consent> = {
  pairing: {
    title: "Pairing",
    switchLabel: "Control from a phone",
    lead: "Pair a phone to control this machine's agents from it: answer a permission prompt, send a prompt, start or cancel a session.",
    sections: [
      {
        heading: "How pairing works",
        items: [
          "Pairing starts only here on this machine (this app or its terminal), never from the phone or the receiver.",
          "The daemon asks your receiver for a pairing code; you open the link on your phone, check that it shows the same six digits as this machine, and approve with a passkey on the phone.",
          "The daemon checks the passkey's signature itself before it trusts the key.",
        ],
      },
      {
        heading: "Who does what",
        items: [
          "The phone signs every command, with its passkey or with a day key the passkey vouches for (24 hours at most).",
          "The receiver only carries and queues commands: it holds a bearer token for this machine, never a signing key.",
          "This daemon verifies every signature and delivers the command. A bearer token never authorises a command.",
        ],
      },
      {
        heading: "What it reads",
        items: [
          "The signed commands your receiver queues for this machine (one long poll per receiver).",
          "A session's folder, as the harness reported it in the session's own hook calls (never from the command), to check it against the folders you allow.",
          "Whether an attention is open right now: an allow needs one, and nothing is ever allowed on its own.",
        ],
      },
      {
        heading: "What it writes",
        items: [
          "This machine's id, the passkeys you pair (listed and removed one at a time) and the machine's bearer token, kept in the keychain or a 0600 file.",
          "Each command's nonce, recorded before the command runs and kept 25 hours, so no command runs twice.",
        ],
      },
      {
        heading: "What it sends, to your receiver only",
        items: [
          "The pairing request, and a hello naming this machine's name, folders and mode, the harnesses it has seen sessions of, the passkeys it trusts (their ids) and which sessions have a waiter.",
          "One answer per command: delivered (and how), refused (with its reason), expired or unsupported.",
        ],
      },
      {
        heading: "What it never does",
        items: [
          "Run a command that is unsigned, signed more than 24 hours ago, already seen, or for a folder you did not allow.",
          "Cancel by signalling a process: only through the harness's own API.",
          "Keep the machine, its keys or its token once you turn it off: `sessionpipe control off` removes them and tells the receiver.",
        ],
      },
    ],
  },
  pool: {
    title: "Pool",
    switchLabel: "Pool my Claude accounts",
    lead: "A proxy on this machine's loopback that pools your Claude accounts for Claude Code: each request goes out with one of the accounts you added, and the rate-limit headers tell you how much of each window is used.",
    sections: [
      {
        heading: "What it reads",
        items: [
          "Claude Code's own login, once, when you import it (this page's Import, or `sessionpipe pool add --import`): the keychain item `Claude Code-credentials` on macOS, elsewhere `<config dir>/.credentials.json` (access token, refresh token, expiry), and `.claude.json` for the account id and email. The copy goes to sessionpipe's secrets store; Claude Code's own login stays where it is.",
          "Before refreshing an imported account, Claude Code's own copy again: when it is a later sign-in of the same account (Claude Code refreshed it), that one is taken instead. Claude Code's file is never written.",
          "The `anthropic-ratelimit-unified-*` headers of each response: status, reset, and the 5-hour and 7-day use of each window.",
          "Idle accounts' use from `https://api.anthropic.com/api/oauth/usage`, at most every 5 minutes, and at once after you add or enable one.",
        ],
      },
      {
        heading: "What it writes",
        items: [
          "Exactly three keys into `env` of each Claude Code config dir's `settings.json`: `ANTHROPIC_BASE_URL` (this daemon's loopback listener), `ANTHROPIC_AUTH_TOKEN` (a random token the listener checks, never an account's) and `_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL=1`. Never over an `ANTHROPIC_BASE_URL` you set yourself; turning the pool off removes exactly those three keys.",
          "The rate limits, as `limits.observed` events on the session whose request showed them.",
          "The accounts you add (id, email, on or off) in `pool.json` in the state dir; their sign-ins only in the keychain or, without one, the 0600 secrets file.",
        ],
      },
      {
        heading: "What it sends",
        items: [
          "Each of Claude Code's requests, to `https://api.anthropic.com` only, with the chosen account's sign-in; the account part of `metadata.user_id` is rewritten to that account, and a session stays on one account.",
          "Each account's refresh token, to `https://platform.claude.com/v1/oauth/token` only, five minutes before its sign-in expires; the new sign-in is stored before it is used.",
          "Signing in another account (`sessionpipe pool add --login`) goes through claude.com and platform.claude.com the way Claude Code does.",
        ],
      },
      {
        heading: "What it never does",
        items: [
          "Keep or log a request or a response: bodies pass through unchanged.",
          "Use an account you did not add, or call anything but Anthropic's own endpoints.",
          "Turn idle accounts' numbers into events: they only reach this page, `pool status` (and a paired phone's hello).",
          "Read a login, write a setting or forward a request before you add an account or turn it on.",
        ],
      },
    ],
  },
  titles: {
    title: "Titles",
    switchLabel: "Ask claude.ai for session names",
    lead: "claude.ai names a session the Claude app started a few seconds after its first message, and never writes that name to this machine. With Titles on, sessionpipe asks for that name, so every place shows the same one.",
    sections: [
      {
        heading: "What it reads",
        items: [
          "Claude Code's sign-in on this machine: the keychain item `Claude Code-credentials` on macOS, elsewhere `<config dir>/.credentials.json` (`claudeAiOauth.accessToken`), for that one read each time.",
          "A sign-in within a minute of expiring is not used, and it is never refreshed (that would replace Claude Code's own login).",
        ],
      },
      {
        heading: "What it sends",
        items: [
          "The sign-in, to Anthropic alone, to read one session's name: `GET https://api.anthropic.com/v1/code/sessions/<session>`, the same read Claude Code makes. Only for sessions with a claude.ai link; asked again a minute later while there is no name, then every half hour, each read over in 3 seconds at most.",
          "The name then goes where the session's events go: to your sinks, as the session's title, through the same secret removal as every title.",
        ],
      },
      {
        heading: "What it writes",
        items: [
          "The name, as the session's title. It replaces every title but a name you gave the session yourself.",
          "Turning it on asks about every session of the last 30 days; one already sent under another name is sent again as `session.backfill` with the new name.",
        ],
      },
      {
        heading: "What it never does",
        items: [
          "Keep the sign-in: never in a file, an event or a log.",
          "Refresh the sign-in, or use one within a minute of expiring.",
          "Follow a redirect, go through a proxy, or send the sign-in anywhere else.",
          "Read an answer over 1 MiB, or take a name the answer gives another session.",
          "Ask anything while it is off.",
        ],
      },
    ],
  },
};

/** A consent's title, its switch's label and its lead sentence. */
export function consentHead(kind: ConsentKind): { title: string; switchLabel: string; lead: string } {
  const { title, switchLabel, lead } = CONSENT[kind];
  return { title, switchLabel, lead };
}

/** A consent's parts (what it reads, writes, sends, never does), as panels. */
export function consentParts(kind: ConsentKind): HTMLElement[] {
  return CONSENT[kind].sections.map((s) =>
    h(
      "section",
      { class: "panel consent-part" },
      h("h2", null, s.heading),
      h("ul", null, s.items.map((item) => h("li", null, ...prose(item)))),
    ),
  );
}
