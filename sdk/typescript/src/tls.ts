// The certificate of the go-plugin handshake (AutoMTLS): a fresh
// self-signed certificate for this process, which the host trusts because
// the handshake line carries it.
//
// The key is made by Node's crypto (RSA 2048), the certificate by
// node-forge: DNS name "localhost", a CA (the host verifies the server
// against this very certificate), key usages digital signature and cert
// sign, extended key usages serverAuth and clientAuth, SHA-256 signature.

import { generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";

export interface PluginCert {
  /** certPem and keyPem are for the TLS server. */
  certPem: string;
  keyPem: string;
  /** der is the certificate's DER bytes. */
  der: Buffer;
}

export function makeCert(now: Date = new Date()): PluginCert {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  // A positive serial number of 16 random bytes (the top bit cleared, so
  // DER keeps it positive without a leading zero byte).
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  serial[0] |= 0x01;
  cert.serialNumber = serial.toString("hex");
  // Like go-plugin's own certificate: valid from a little before now, so a
  // clock a few seconds apart does not refuse it.
  cert.validity.notBefore = new Date(now.getTime() - 30_000);
  cert.validity.notAfter = new Date(now.getTime() + 365 * 24 * 3600 * 1000);
  const subject = [
    { name: "commonName", value: "localhost" },
    { name: "organizationName", value: "dex-agents runner" },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", digitalSignature: true, keyCertSign: true, critical: true },
    { name: "extKeyUsage", serverAuth: true, clientAuth: true },
    { name: "subjectAltName", altNames: [{ type: 2, value: "localhost" }] },
    { name: "subjectKeyIdentifier" },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  const der = Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), "binary");
  return { certPem: forge.pki.certificateToPem(cert), keyPem: privateKey, der };
}

/** handshakeCert is the certificate as the handshake line carries it:
 * standard base64 without "=" padding (Go's base64.RawStdEncoding). */
export function handshakeCert(der: Buffer): string {
  return der.toString("base64").replace(/=+$/, "");
}
