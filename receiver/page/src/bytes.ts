// Every binary ↔ text conversion the page does, in one place: base64url (no
// padding, the protocol's only binary encoding), UTF-8, SHA-256, random bytes.

/** Bytes → base64url without padding. */
export function b64url(data: ArrayBuffer | ArrayBufferView): string {
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** base64url (padding and standard base64 tolerated) → bytes. Throws on anything else. */
export function fromB64url(text: string): Uint8Array<ArrayBuffer> {
  const std = text.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  const padded = std + "===".slice((std.length + 3) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** A string's UTF-8 bytes: what gets signed is always these, never a re-encoding. */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(text);
}

/** SHA-256 of bytes, or of a string's UTF-8 bytes. */
export async function sha256(data: string | BufferSource): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", typeof data === "string" ? utf8(data) : data);
}

/** `n` random bytes as base64url (the nonce: 24 bytes → 32 characters). */
export function randomB64url(n: number): string {
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}

/** Two byte strings equal (a file's hash, here and as the receiver saw it). */
export function sameBytes(a: ArrayBuffer, b: ArrayBuffer): boolean {
  if (a.byteLength !== b.byteLength) return false;
  const x = new Uint8Array(a);
  const y = new Uint8Array(b);
  let diff = 0;
  for (let i = 0; i < x.length; i += 1) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}
