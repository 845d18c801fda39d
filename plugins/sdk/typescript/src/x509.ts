// A self-signed X.509 certificate for go-plugin's AutoMTLS, built with nothing but node:crypto.
//
// Node can make key pairs and sign, but has no certificate builder; a certificate is a small DER
// structure (RFC 5280), so this file encodes it by hand: the fields go-plugin's own generateCert
// sets (mtls.go), with an ECDSA P-256 key signed with SHA-256 instead of P-521/SHA-512.

import { generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";

/** A certificate and its private key. */
export interface SelfSigned {
  /** The certificate, DER. */
  der: Buffer;
  /** The certificate, PEM. */
  certPem: string;
  /** The private key, PKCS#8 PEM. */
  keyPem: string;
  key: KeyObject;
}

// --- DER ---------------------------------------------------------------------------------------

/** tlv encodes one DER element: tag, definite length, contents. */
export function tlv(tag: number, ...contents: Uint8Array[]): Buffer {
  const body = Buffer.concat(contents);
  const n = body.length;
  let len: Buffer;
  if (n < 0x80) {
    len = Buffer.from([n]);
  } else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

export const seq = (...items: Uint8Array[]): Buffer => tlv(0x30, ...items);
const set = (...items: Uint8Array[]): Buffer => tlv(0x31, ...items);

/** derInteger encodes a non-negative integer given as big-endian bytes, minimally. */
export function derInteger(bytes: Uint8Array): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const b = Buffer.from(bytes.subarray(i));
  return tlv(0x02, b[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

/** derOid encodes a dotted object identifier. */
export function derOid(dotted: string): Buffer {
  const arcs = dotted.split(".").map(Number);
  const out: number[] = [40 * arcs[0]! + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const groups: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) groups.unshift(0x80 | (v & 0x7f));
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}

const derBool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const derUtf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, "utf8"));
const derOctets = (b: Uint8Array): Buffer => tlv(0x04, b);
/** derBits encodes a BIT STRING whose last `unused` bits are padding. */
const derBits = (b: Uint8Array, unused = 0): Buffer => tlv(0x03, Buffer.from([unused]), b);

/** derTime encodes a validity time: UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5). */
export function derTime(d: Date): Buffer {
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-:T]/g, "") + "Z"; // YYYYMMDDHHMMSSZ
  const year = d.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2), "ascii")) : tlv(0x18, Buffer.from(digits, "ascii"));
}

// --- the certificate ---------------------------------------------------------------------------

const OID = {
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  ecdsaWithSHA256: "1.2.840.10045.4.3.2",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
};

const extension = (oid: string, critical: boolean, value: Buffer): Buffer =>
  critical ? seq(derOid(oid), derBool(true), derOctets(value)) : seq(derOid(oid), derOctets(value));

/**
 * selfSignedCert makes a fresh ECDSA P-256 key and a self-signed certificate for `host`, shaped
 * like go-plugin's: CN=host, O=organization, DNS SAN host, CA, key usage digitalSignature,
 * keyEncipherment, keyAgreement and certSign, extended key usage serverAuth and clientAuth, valid
 * from 30 s ago for 30 years. go-plugin's client trusts exactly this certificate (as its root) and
 * checks the name "localhost" against the SAN.
 */
export function selfSignedCert(host = "localhost", organization = "Foresight", now = new Date()): SelfSigned {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const serial = randomBytes(16);
  serial[0]! &= 0x7f; // positive
  serial[0]! |= 0x01; // and never zero
  const name = seq(
    set(seq(derOid(OID.commonName), derUtf8(host))),
    set(seq(derOid(OID.organization), derUtf8(organization))),
  );
  const algorithm = seq(derOid(OID.ecdsaWithSHA256));
  const notBefore = new Date(now.getTime() - 30_000);
  const notAfter = new Date(now.getTime() + 262980 * 3600_000); // 30 years, as go-plugin
  // Key usage bits, most significant first: digitalSignature(0) keyEncipherment(2)
  // keyAgreement(4) keyCertSign(5) = 1010 1100; the two trailing zero bits are padding.
  const keyUsage = derBits(Buffer.from([0b1010_1100]), 2);
  const extensions = seq(
    extension(OID.keyUsage, true, keyUsage),
    extension(OID.extKeyUsage, false, seq(derOid(OID.serverAuth), derOid(OID.clientAuth))),
    extension(OID.basicConstraints, true, seq(derBool(true))),
    extension(OID.subjectAltName, false, seq(tlv(0x82, Buffer.from(host, "ascii")))), // dNSName
  );
  const tbs = seq(
    tlv(0xa0, derInteger(Buffer.from([2]))), // [0] EXPLICIT version v3
    derInteger(serial),
    algorithm,
    name, // issuer = subject: self-signed
    seq(derTime(notBefore), derTime(notAfter)),
    name,
    publicKey.export({ type: "spki", format: "der" }), // SubjectPublicKeyInfo, as is
    tlv(0xa3, extensions), // [3] EXPLICIT extensions
  );
  const signature = sign("sha256", tbs, privateKey); // DER ECDSA-Sig-Value
  const der = seq(tbs, algorithm, derBits(signature));
  return { der, certPem: toPem("CERTIFICATE", der), keyPem: privateKey.export({ type: "pkcs8", format: "pem" }) as string, key: privateKey };
}

/** toPem wraps DER bytes in PEM armour. */
export function toPem(label: string, der: Uint8Array): string {
  const b64 = Buffer.from(der).toString("base64").replace(/.{1,64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}

/** rawStdBase64 encodes as Go's base64.RawStdEncoding: the standard alphabet without padding. */
export function rawStdBase64(b: Uint8Array): string {
  return Buffer.from(b).toString("base64").replace(/=+$/, "");
}
