import { test } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";

import { handshakeCert, makeCert } from "../src";

test("the handshake certificate is what go-plugin's AutoMTLS expects", () => {
  const c = makeCert();
  const x = new X509Certificate(c.der);
  assert.equal(x.ca, true);
  assert.match(x.subjectAltName ?? "", /DNS:localhost/);
  assert.deepEqual([...(x.keyUsage ?? [])].sort(), ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]); // serverAuth, clientAuth
  assert.ok(x.checkIssued(x), "self-signed");
  assert.ok(x.verify(x.publicKey));
  assert.ok(x.checkHost("localhost"));
  const line = handshakeCert(c.der);
  assert.doesNotMatch(line, /=/);
  assert.deepEqual(Buffer.from(line, "base64"), c.der);
});
