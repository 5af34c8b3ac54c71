// Signed out: sign in with a passkey (discoverable), or create an account with
// one when the receiver is open to new accounts or the link carries an invite.

import { api, describeError } from "./api";
import { rememberCredential } from "./app";
import { field, h, message, type Child } from "@sessionpipe/web-shared/dom";
import { guessDevice } from "./format";
import { createPasskey, passkeyError, passkeysSupported, signInWithPasskey } from "./passkey";
import type { Config, SignedIn } from "./types";

export function mountSignIn(root: HTMLElement, config: Config, invite: string | null, done: (s: SignedIn) => void): void {
  const out = h("div", { class: "form-out" });

  function fail(e: unknown): void {
    out.replaceChildren(message("error", h("p", null, e instanceof DOMException ? passkeyError(e) : describeError(e))));
  }

  if (!passkeysSupported()) {
    root.replaceChildren(
      h(
        "section",
        { class: "card auth" },
        h("h1", { tabindex: "-1" }, "sessionpipe"),
        message("error", h("p", null, "This browser can't use passkeys, and this page signs in only with a passkey. Try an up-to-date Safari, Chrome, Edge or Firefox.")),
      ),
    );
    return;
  }

  const signInButton = h("button", { type: "button", class: "big primary" }, "Sign in with a passkey");
  signInButton.addEventListener("click", () => {
    void (async () => {
      out.replaceChildren();
      signInButton.disabled = true;
      try {
        const { ceremony, publicKey } = await api.signinStart();
        const credential = await signInWithPasskey(publicKey);
        const signed = await api.signinFinish(ceremony, credential);
        rememberCredential(signed.credential.id);
        done(signed);
      } catch (e) {
        fail(e);
      } finally {
        signInButton.disabled = false;
      }
    })();
  });

  const canRegister = config.registration === "open" || invite !== null;
  const parts: Child[] = [
    h("h1", { tabindex: "-1" }, invite !== null ? "You're invited" : "sessionpipe"),
    h(
      "p",
      { class: "lead" },
      invite !== null
        ? "This link lets you add this device to an account on this receiver, or make your own, with a passkey: the fingerprint, face or PIN this device already uses."
        : "See what your coding agents are doing, answer them, and start new work, from here. Your passkey signs everything you send.",
    ),
  ];

  if (invite === null || config.accounts) {
    parts.push(
      h(
        "section",
        { class: "card", "aria-labelledby": "signin-h" },
        h("h2", { id: "signin-h" }, invite !== null ? "Already have a passkey here?" : "Sign in"),
        signInButton,
      ),
    );
  }

  if (canRegister) {
    const name = h("input", { type: "text", required: true, maxlength: "80", autocomplete: "name", autocapitalize: "words" });
    const device = h("input", { type: "text", required: true, maxlength: "80", value: guessDevice(), autocomplete: "off" });
    const create = h("button", { type: "submit", class: "big primary" }, invite !== null ? "Accept with a passkey" : "Create an account with a passkey");
    const form = h(
      "form",
      {
        class: "card",
        "aria-labelledby": "register-h",
        onsubmit: (e: Event) => {
          e.preventDefault();
          void (async () => {
            out.replaceChildren();
            if (name.value.trim() === "" || device.value.trim() === "") {
              out.replaceChildren(message("error", h("p", null, "Give your name and this device's name.")));
              return;
            }
            create.disabled = true;
            try {
              const { ceremony, publicKey } = await api.registerStart(name.value.trim(), invite);
              const credential = await createPasskey(publicKey);
              const signed = await api.registerFinish(ceremony, device.value.trim(), credential);
              rememberCredential(signed.credential.id);
              if (invite !== null) history.replaceState(null, "", "/");
              done(signed);
            } catch (e) {
              fail(e);
            } finally {
              create.disabled = false;
            }
          })();
        },
      },
      h("h2", { id: "register-h" }, invite !== null ? "Accept the invite" : "New here?"),
      field("Your name", name, "As it shows on this receiver."),
      field("This device", device, "So you can tell your devices apart later."),
      create,
    );
    parts.push(form);
  } else if (!config.accounts) {
    parts.push(message("info", h("p", null, "Nobody has an account here yet, and new accounts need an invite link.")));
  } else {
    parts.push(h("p", { class: "hint" }, "New accounts need an invite link from someone who has one."));
  }

  parts.splice(2, 0, out);
  root.replaceChildren(h("section", { class: "auth" }, parts));
}
