import { createHash } from "node:crypto";

/**
 * Parses an OpenSSH public key line the way Nova does before it makes a keypair's fingerprint:
 * nova/crypto.py, generate_fingerprint, loads the key with pyca/cryptography's
 * `serialization.load_ssh_public_key` (cryptography/hazmat/primitives/serialization/ssh.py),
 * which needs a known key type, strict base64, a blob whose inner type matches, the key's own
 * fields in full and no bytes left over. Returns Nova's fingerprint, the MD5 of the blob in
 * colon-separated hex, or undefined when cryptography would refuse the key.
 */
export function sshKeyFingerprint(line: string): string | undefined {
  const [type, body] = line.trim().split(/\s+/);
  if (type === undefined || body === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return undefined;
  const blob = Buffer.from(body, "base64");
  const reader = new BlobReader(blob);
  try {
    if (reader.string().toString("latin1") !== type) return undefined;
    const fields = KEY_FIELDS[type];
    if (fields === undefined || !fields(reader) || !reader.done()) return undefined;
  } catch {
    return undefined;
  }
  return (createHash("md5").update(blob).digest("hex").match(/../g) as string[]).join(":");
}

/** The SSH wire format (RFC 4251 section 5): uint32 length-prefixed strings and mpints. */
class BlobReader {
  private offset = 0;
  constructor(private readonly blob: Buffer) {}

  string(): Buffer {
    if (this.offset + 4 > this.blob.length) throw new Error("truncated");
    const length = this.blob.readUInt32BE(this.offset);
    const start = this.offset + 4;
    if (start + length > this.blob.length) throw new Error("truncated");
    this.offset = start + length;
    return this.blob.subarray(start, start + length);
  }

  done(): boolean {
    return this.offset === this.blob.length;
  }
}

const CURVES: Record<string, { name: string; pointBytes: number }> = {
  "ecdsa-sha2-nistp256": { name: "nistp256", pointBytes: 65 },
  "ecdsa-sha2-nistp384": { name: "nistp384", pointBytes: 97 },
  "ecdsa-sha2-nistp521": { name: "nistp521", pointBytes: 133 },
};

/** Each key type's fields after the type name, as cryptography's loaders read them. */
const KEY_FIELDS: Record<string, (reader: BlobReader) => boolean> = {
  // _SSHFormatRSA.load_public: mpint e, mpint n
  "ssh-rsa": (r) => r.string().length > 0 && r.string().length > 0,
  // _SSHFormatEd25519.load_public: a 32-byte point
  "ssh-ed25519": (r) => r.string().length === 32,
  ...Object.fromEntries(
    Object.entries(CURVES).map(([type, curve]) => [
      type,
      // _SSHFormatECDSA.load_public: the curve's name, then an uncompressed point
      (r: BlobReader) => {
        if (r.string().toString("latin1") !== curve.name) return false;
        const point = r.string();
        return point.length === curve.pointBytes && point[0] === 4;
      },
    ]),
  ),
};
