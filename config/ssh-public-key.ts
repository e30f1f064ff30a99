/**
 * An OpenSSH public key line (`type base64-blob [comment]`) as one regular expression, so synth
 * (JavaScript) and plan (RE2, in a `validation` block) parse a key alike, without decoding it.
 *
 * The blob is the key in the SSH wire format (RFC 4253 section 6.6; RFC 5656 section 3.1 for
 * ECDSA, RFC 8709 section 4 for Ed25519; PROTOCOL.u2f in openssh-portable for the sk- keys): it
 * starts with the key type as a length-prefixed string, so the first base64 characters are fixed
 * by the type, and the type named on the line must be the one in the blob. The blob must be
 * canonical base64 with zero padding bits, as OpenSSH's b64_pton demands; Ed25519 and ECDSA keys
 * have a fixed size, and an RSA modulus has at least 1024 bits (SSH_RSA_MINIMUM_MODULUS_SIZE).
 */

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const ANY = "[A-Za-z0-9+/]";

function sshString(text: string): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(text.length);
  return Buffer.concat([length, Buffer.from(text, "latin1")]);
}

function uint32(n: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(n);
  return bytes;
}

/** The base64 characters whose 6 bits satisfy `keep`, as a character class (or the one character). */
function charsWhere(keep: (sextet: number) => boolean): string {
  const chars = [...BASE64].filter((_, sextet) => keep(sextet));
  return chars.length === 1 ? chars[0] : `[${chars.join("")}]`;
}

/** The base64 characters that start a blob beginning with `prefix`. */
function prefixPattern(prefix: Buffer): { pattern: string; chars: number } {
  const bits = [...prefix].map((byte) => byte.toString(2).padStart(8, "0")).join("");
  const whole = Math.floor(bits.length / 6);
  let pattern = "";
  for (let i = 0; i < whole; i++) pattern += BASE64[parseInt(bits.slice(6 * i, 6 * i + 6), 2)];
  const rest = bits.slice(6 * whole);
  if (rest.length > 0) pattern += charsWhere((sextet) => sextet >> (6 - rest.length) === parseInt(rest, 2));
  return { pattern, chars: whole + (rest.length > 0 ? 1 : 0) };
}

/** The last character of a group holding `tail` (1 or 2) bytes: its padding bits are zero. */
function paddingChar(tail: number): string {
  return tail === 1 ? charsWhere((sextet) => (sextet & 0b1111) === 0) : charsWhere((sextet) => (sextet & 0b11) === 0);
}

function repeat(count: number): string {
  return count === 0 ? "" : count === 1 ? ANY : `${ANY}{${count}}`;
}

/** A blob of exactly `size` bytes starting with `prefix`. */
function fixedBlob(prefix: Buffer, size: number): string {
  const start = prefixPattern(prefix);
  const tail = size % 3;
  if (tail === 0) return start.pattern + repeat((size / 3) * 4 - start.chars);
  // The last group holds `tail` bytes: tail + 1 characters, the last with zero padding bits, then "=".
  const dataChars = Math.floor(size / 3) * 4 + tail + 1;
  return start.pattern + repeat(dataChars - start.chars - 1) + paddingChar(tail) + "=".repeat(3 - tail);
}

/** A blob of at least about `minSize` bytes (2 less at most) starting with `prefix`. */
function variableBlob(prefix: Buffer, minSize: number): string {
  const start = prefixPattern(prefix);
  // Up to the end of the group the prefix ends in, then whole groups, then an optional padded group.
  const toGroup = (4 - (start.chars % 4)) % 4;
  const bytesSoFar = ((start.chars + toGroup) / 4) * 3;
  const minGroups = Math.max(0, Math.ceil((minSize - 2 - bytesSoFar) / 3));
  return `${start.pattern}${repeat(toGroup)}(${ANY}{4}){${minGroups},}(${ANY}${paddingChar(1)}==|${ANY}{2}${paddingChar(2)}=)?`;
}

function ecdsa(curve: "nistp256" | "nistp384" | "nistp521", pointSize: number): string {
  const type = `ecdsa-sha2-${curve}`;
  const prefix = Buffer.concat([sshString(type), sshString(curve), uint32(pointSize), Buffer.from([4])]);
  return `${type.replace(/[.]/g, "[.]")} ${fixedBlob(prefix, 4 + type.length + 4 + curve.length + 4 + pointSize)}`;
}

/** `type blob` for every key type OpenSSH accepts in authorized_keys (DSA is gone since 9.8). */
const KEY_PATTERNS = [
  `ssh-ed25519 ${fixedBlob(Buffer.concat([sshString("ssh-ed25519"), uint32(32)]), 4 + 11 + 4 + 32)}`,
  ecdsa("nistp256", 65),
  ecdsa("nistp384", 97),
  ecdsa("nistp521", 133),
  // e as an mpint of at least 1 byte, n of at least 128.
  `ssh-rsa ${variableBlob(sshString("ssh-rsa"), 4 + 7 + 4 + 1 + 4 + 128)}`,
  `sk-ssh-ed25519@openssh[.]com ${variableBlob(Buffer.concat([sshString("sk-ssh-ed25519@openssh.com"), uint32(32)]), 4 + 26 + 4 + 32 + 4)}`,
  `sk-ecdsa-sha2-nistp256@openssh[.]com ${variableBlob(
    Buffer.concat([sshString("sk-ecdsa-sha2-nistp256@openssh.com"), sshString("nistp256"), uint32(65), Buffer.from([4])]),
    4 + 34 + 4 + 8 + 4 + 65 + 4,
  )}`,
];

/** The source of the pattern: one key, then optionally a space and a comment on the same line. */
export const SSH_PUBLIC_KEY_SOURCE = `^(${KEY_PATTERNS.join("|")})( [^\\n]*)?$`;
