// WebAuthn, as the receiver's JSON wants it: options arrive with base64url
// members (decoded here into bytes), responses go back with every buffer as
// base64url (bytes.ts). Plus the words for what a passkey prompt can end in.

import { b64url, fromB64url } from "./bytes";
import type { Assertion } from "./types";

type Json = Record<string, unknown>;

const TIMEOUT_MS = 120_000;

export function passkeysSupported(): boolean {
  return typeof window.PublicKeyCredential === "function" && typeof navigator.credentials?.get === "function";
}

/** Some servers wrap the options once more (`{publicKey: {...}}`): take the inner ones. */
function unwrap(options: Json): Json {
  const inner = options["publicKey"];
  if (!("challenge" in options) && typeof inner === "object" && inner !== null) return inner as Json;
  return options;
}

function bytesOf(value: unknown, what: string): Uint8Array<ArrayBuffer> {
  if (typeof value !== "string") throw new Error(`The receiver's passkey options have no ${what}.`);
  return fromB64url(value);
}

function descriptors(list: unknown): PublicKeyCredentialDescriptor[] | undefined {
  if (!Array.isArray(list)) return undefined;
  return list.map((d: unknown) => {
    const o = (typeof d === "object" && d !== null ? d : {}) as Json;
    const out: PublicKeyCredentialDescriptor = { type: "public-key", id: bytesOf(o["id"], "credential id") };
    if (Array.isArray(o["transports"])) out.transports = o["transports"] as AuthenticatorTransport[];
    return out;
  });
}

/** register/start's `publicKey` → creation options. */
function creationOptions(json: Json): PublicKeyCredentialCreationOptions {
  const o = unwrap(json);
  const user = (o["user"] ?? {}) as Json;
  const out = {
    ...o,
    challenge: bytesOf(o["challenge"], "challenge"),
    user: { ...user, id: bytesOf(user["id"], "user id") },
  } as unknown as PublicKeyCredentialCreationOptions;
  const exclude = descriptors(o["excludeCredentials"]);
  if (exclude !== undefined) out.excludeCredentials = exclude;
  if (out.timeout === undefined) out.timeout = TIMEOUT_MS;
  return out;
}

/** signin/start's `publicKey` → request options. */
function requestOptions(json: Json): PublicKeyCredentialRequestOptions {
  const o = unwrap(json);
  const out = { ...o, challenge: bytesOf(o["challenge"], "challenge") } as unknown as PublicKeyCredentialRequestOptions;
  const allow = descriptors(o["allowCredentials"]);
  if (allow !== undefined) out.allowCredentials = allow;
  else delete (out as { allowCredentials?: unknown }).allowCredentials;
  if (out.timeout === undefined) out.timeout = TIMEOUT_MS;
  return out;
}

/** RegistrationResponseJSON: `{id, rawId, type, response: {clientDataJSON, attestationObject, transports?}, clientExtensionResults}`. */
export async function createPasskey(options: Json): Promise<Json> {
  const cred = await navigator.credentials.create({ publicKey: creationOptions(options) });
  if (!(cred instanceof PublicKeyCredential)) throw new Error("The browser made no passkey.");
  const response = cred.response as AuthenticatorAttestationResponse;
  const body: Json = {
    clientDataJSON: b64url(response.clientDataJSON),
    attestationObject: b64url(response.attestationObject),
  };
  const transports = typeof response.getTransports === "function" ? response.getTransports() : [];
  if (transports.length > 0) body["transports"] = transports;
  return {
    id: cred.id,
    rawId: b64url(cred.rawId),
    type: cred.type,
    response: body,
    clientExtensionResults: extensions(cred),
  };
}

/** AuthenticationResponseJSON: `{id, rawId, type, response: {clientDataJSON, authenticatorData, signature, userHandle}}`. */
export async function signInWithPasskey(options: Json): Promise<Json> {
  const cred = await navigator.credentials.get({ publicKey: requestOptions(options) });
  if (!(cred instanceof PublicKeyCredential)) throw new Error("The browser gave no passkey.");
  const response = cred.response as AuthenticatorAssertionResponse;
  return {
    id: cred.id,
    rawId: b64url(cred.rawId),
    type: cred.type,
    response: {
      clientDataJSON: b64url(response.clientDataJSON),
      authenticatorData: b64url(response.authenticatorData),
      signature: b64url(response.signature),
      userHandle: response.userHandle === null ? null : b64url(response.userHandle),
    },
  };
}

function extensions(cred: PublicKeyCredential): Json {
  try {
    return cred.getClientExtensionResults() as Json;
  } catch {
    return {};
  }
}

/**
 * A passkey assertion over `challenge` by this device's credential, with the
 * person verified (fingerprint, face, PIN): a grant, a confirm, a pairing proof.
 */
export async function assert(challenge: ArrayBuffer, rpId: string, credentialId: string): Promise<Assertion> {
  const cred = await navigator.credentials.get({
    publicKey: {
      challenge,
      rpId,
      allowCredentials: [{ type: "public-key", id: fromB64url(credentialId) }],
      userVerification: "required",
      timeout: TIMEOUT_MS,
    },
  });
  if (!(cred instanceof PublicKeyCredential)) throw new Error("The browser gave no passkey.");
  const response = cred.response as AuthenticatorAssertionResponse;
  return {
    cred: b64url(cred.rawId),
    ad: b64url(response.authenticatorData),
    cd: b64url(response.clientDataJSON),
    sig: b64url(response.signature),
  };
}

/** A passkey prompt's failure, in words. */
export function passkeyError(e: unknown): string {
  if (e instanceof DOMException) {
    switch (e.name) {
      case "NotAllowedError":
      case "AbortError":
        return "The passkey prompt was closed or timed out, so nothing was signed. Try again when you're ready.";
      case "InvalidStateError":
        return "This device already has a passkey for this account. Sign in with it instead.";
      case "SecurityError":
        return `Passkeys can't be used at this address (${location.host}). Open the receiver at its own address.`;
      case "NotSupportedError":
        return "This browser or device can't make the kind of passkey the receiver asks for.";
      default:
        return `The passkey prompt failed: ${e.message || e.name}.`;
    }
  }
  return e instanceof Error ? e.message : String(e);
}
