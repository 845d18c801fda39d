import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { encodeCycleBatch } from "../src/convert";
import { DetectResponse } from "../src/gen/foresight/v1/detector";
import { FilterResponse } from "../src/gen/foresight/v1/filter";
import { OrderResponse } from "../src/gen/foresight/v1/order";
import { ConfigureResponse, GetInfoResponse } from "../src/gen/foresight/v1/plugin";
import {
  HANDSHAKE,
  decodeHealthRequest,
  encodeHealthResponse,
  handshakeLine,
  negotiate,
} from "../src/goplugin";
import { logLine, timestamp } from "../src/log";
import { rawStdBase64, selfSignedCert, toPem } from "../src/x509";
import { cycle } from "./helpers";

const fixture = join(__dirname, "fixtures", "parity-filter.js");
const flowFixture = join(__dirname, "fixtures", "flow-stages.js");
const cookie = { [HANDSHAKE.magicCookieKey]: HANDSHAKE.magicCookieValue };

test("negotiation picks the newest common version, else the oldest of ours", () => {
  assert.deepEqual(negotiate([1], "1"), { version: 1, matched: true });
  assert.deepEqual(negotiate([1, 2], "1,2,3"), { version: 2, matched: true });
  assert.deepEqual(negotiate([1, 2], "1"), { version: 1, matched: true });
  assert.deepEqual(negotiate([1], "2,3"), { version: 1, matched: false });
  assert.deepEqual(negotiate([1], undefined), { version: 1, matched: false });
  assert.deepEqual(negotiate([1], "x,1"), { version: 1, matched: true });
});

test("the handshake line carries the certificate as unpadded standard base64", () => {
  const cert = selfSignedCert();
  const line = handshakeLine(1, "/tmp/plugin42", cert.der);
  const parts = line.split("|");
  assert.deepEqual(parts.slice(0, 5), ["1", "1", "unix", "/tmp/plugin42", "grpc"]);
  assert.ok(!parts[5]!.includes("=") && !parts[5]!.includes("\n"));
  assert.ok(parts[5]!.length > 50, "go-plugin ignores a 6th field of 50 characters or less");
  assert.deepEqual(Buffer.from(parts[5]!, "base64"), cert.der);
  assert.equal(rawStdBase64(Buffer.from([0xfb, 0xff])), "+/8");
  assert.equal(handshakeLine(1, "/s"), "1|1|unix|/s|grpc|");
  assert.equal(handshakeLine(1, "/s", undefined, true), "1|1|unix|/s|grpc||false");
});

test("the server certificate is what go-plugin's client checks", () => {
  const { der, certPem } = selfSignedCert();
  const x = new X509Certificate(der);
  assert.equal(x.toString(), new X509Certificate(certPem).toString());
  assert.equal(x.checkHost("localhost"), "localhost");
  assert.equal(x.subjectAltName, "DNS:localhost");
  assert.ok(x.ca);
  assert.ok(x.verify(x.publicKey), "self-signed");
  assert.deepEqual(x.keyUsage, ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
  assert.ok(new Date(x.validFrom) <= new Date() && new Date(x.validTo).getFullYear() >= new Date().getFullYear() + 29);
});

test("health messages by hand", () => {
  assert.deepEqual([...encodeHealthResponse(1)], [0x08, 0x01]);
  assert.equal(decodeHealthRequest(Buffer.from([0x0a, 0x06, ...Buffer.from("plugin")])), "plugin");
  assert.equal(decodeHealthRequest(Buffer.alloc(0)), "");
});

test("log lines have hclog's shape and go-plugin's timestamp layout", () => {
  const line = JSON.parse(logLine("info", "hello", { n: 1, big: 2n ** 64n, err: new Error("e") }, new Date("2026-01-02T03:04:05.678Z")));
  assert.deepEqual(line, { "@level": "info", "@message": "hello", "@timestamp": "2026-01-02T03:04:05.678000Z", n: 1, big: "18446744073709551616", err: "e" });
  assert.match(timestamp(new Date()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});

/** run starts a fixture plugin (the parity filter unless told) and collects its output. */
function run(
  env: Record<string, string>,
  args: string[] = [fixture],
): { child: ChildProcess; stdout: Promise<string>; stderr: string[]; exit: Promise<number | null> } {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (l) => stderr.push(l));
  const stdout = new Promise<string>((resolve) => {
    let first: string | undefined;
    createInterface({ input: child.stdout! })
      .on("line", (l) => {
        if (first === undefined) resolve((first = l));
      })
      .on("close", () => resolve(first ?? ""));
  });
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, stdout, stderr, exit };
}

test("run by hand, the plugin refuses with a clear message and status 1", async () => {
  const p = run({});
  assert.equal(await p.exit, 1);
  assert.equal(await p.stdout, "");
  assert.match(p.stderr.join("\n"), /parity-filter: this program is a Foresight plugin.*\n.*\nto be run by hand/);
  const wrong = run({ [HANDSHAKE.magicCookieKey]: "nope" });
  assert.equal(await wrong.exit, 1);
});

const identity = (b: Buffer) => b;

function unary<T>(client: grpc.Client, path: string, req: Uint8Array, decode: (b: Buffer) => T): Promise<T> {
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(path, identity, decode, Buffer.from(req), (err, v) => (err ? reject(err) : resolve(v as T))),
  );
}

test("a plugin process over AutoMTLS: health, info, configure, stdio, a filter stream, shutdown", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-test-"));
  const host = selfSignedCert();
  const p = run({ ...cookie, PLUGIN_PROTOCOL_VERSIONS: "1", PLUGIN_CLIENT_CERT: host.certPem, PLUGIN_UNIX_SOCKET_DIR: dir });
  try {
    const parts = (await p.stdout).split("|");
    assert.equal(parts.length, 6);
    assert.deepEqual(parts.slice(0, 3), ["1", "1", "unix"]);
    assert.equal(parts[4], "grpc");
    const socket = parts[3]!;
    assert.ok(socket.startsWith(join(dir, "plugin")) && existsSync(socket));
    const serverPem = toPem("CERTIFICATE", Buffer.from(parts[5]!, "base64"));
    const opts = { "grpc.ssl_target_name_override": "localhost", "grpc.default_authority": "localhost" };
    const client = new grpc.Client(
      `unix:${socket}`,
      grpc.credentials.createSsl(Buffer.from(serverPem), Buffer.from(host.keyPem), Buffer.from(host.certPem)),
      opts,
    );

    // grpc.health.v1.Health/Check for "plugin": SERVING; an unknown service: NOT_FOUND
    const health = await unary(client, "/grpc.health.v1.Health/Check", Buffer.from([0x0a, 0x06, ...Buffer.from("plugin")]), identity);
    assert.deepEqual([...health], [0x08, 0x01]);
    await assert.rejects(unary(client, "/grpc.health.v1.Health/Check", Buffer.from([0x0a, 0x01, 0x78]), identity), {
      code: grpc.status.NOT_FOUND,
    });

    // stdio first, as go-plugin's client does: what the plugin prints after the handshake arrives here
    const stdio = client.makeServerStreamRequest("/plugin.GRPCStdio/StreamStdio", identity, identity, Buffer.alloc(0));
    const printed = new Promise<{ channel: number; data: string }>((resolve) =>
      stdio.on("data", (b: Buffer) => {
        const r = new BinaryReader(b);
        let channel = 0;
        let data = "";
        while (r.pos < r.len) {
          const tag = r.uint32();
          if (tag === 8) channel = r.int32();
          else if (tag === 18) data = Buffer.from(r.bytes()).toString();
          else r.skip(tag & 7);
        }
        resolve({ channel, data });
      }),
    );
    stdio.on("error", () => undefined);

    const info = await unary(client, "/foresight.v1.PluginService/GetInfo", Buffer.alloc(0), (b) => GetInfoResponse.decode(b));
    assert.deepEqual(info, { type: "parity-filter", stage: 2, version: "1.2.3", description: "keeps the endpoints at even or odd positions", reads: [], multiInstance: false, rounds: false });

    const configure = (json: string) =>
      unary(client, "/foresight.v1.PluginService/Configure", Buffer.from([0x0a, json.length, ...Buffer.from(json)]), (b) => ConfigureResponse.decode(b));
    assert.deepEqual(await configure('{"keep":"sideways"}'), {
      status: { code: 2, message: 'parameter "keep" must be one of ["even" "odd"], got "sideways"' },
      admitsUnsheddable: false,
    });
    assert.deepEqual(await configure('{"keep":"odd"}'), { status: undefined, admitsUnsheddable: false });
    assert.deepEqual(await printed, { channel: 1, data: "configured: keep odd\n" });

    // the filter stream: two requests on one stream, answered in order
    const stream = client.makeBidiStreamRequest("/foresight.v1.FilterService/Filter", identity, (b: Buffer) => FilterResponse.decode(b));
    const responses: FilterResponse[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("data", (r: FilterResponse) => responses.push(r));
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    const thrower = cycle(2);
    thrower.request.model = "throw";
    stream.write(Buffer.from(encodeCycleBatch([cycle(5)])));
    stream.write(Buffer.from(encodeCycleBatch([cycle(4), thrower])));
    stream.end();
    await ended;
    assert.equal(responses.length, 2);
    assert.deepEqual(responses[0]!.results[0]!.kept, [1, 3]);
    assert.equal(
      responses[0]!.results[0]!.reason,
      "seed=18364758544493064720 hashes=18446744073709551601,11,9223372036854775813 now=2026-11-22T10:11:12.345Z",
    );
    assert.deepEqual(responses[1]!.results.map((r) => r.status?.message ?? r.kept.join(",")), ["1,3", "asked to throw"]);

    // a client without the host's certificate is refused
    const stranger = selfSignedCert();
    const other = new grpc.Client(
      `unix:${socket}`,
      grpc.credentials.createSsl(Buffer.from(serverPem), Buffer.from(stranger.keyPem), Buffer.from(stranger.certPem)),
      opts,
    );
    await assert.rejects(unary(other, "/grpc.health.v1.Health/Check", Buffer.alloc(0), identity), { code: grpc.status.UNAVAILABLE });
    other.close();

    // Shutdown: the process exits 0 and removes its socket
    await unary(client, "/plugin.GRPCController/Shutdown", Buffer.alloc(0), identity);
    client.close();
    assert.equal(await p.exit, 0);
    assert.ok(!existsSync(socket));

    const serving = p.stderr.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["@message"] === "plugin serving");
    assert.deepEqual(
      { ...serving, "@timestamp": undefined, node: undefined },
      { "@level": "info", "@message": "plugin serving", "@timestamp": undefined, node: undefined, type: "parity-filter", version: "1.2.3", protocol: 1, stage: "filter" },
    );
    assert.ok(!p.stderr.some((l) => l.includes("configured")), "printed output goes to the stdio stream, not the log");
  } finally {
    p.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

test("without AutoMTLS the plugin serves plaintext; a host without protocol 1 gets 1 and a warning", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-test-"));
  const p = run({ ...cookie, PLUGIN_PROTOCOL_VERSIONS: "2,3", PLUGIN_UNIX_SOCKET_DIR: dir });
  try {
    const parts = (await p.stdout).split("|");
    assert.deepEqual([parts[0], parts[1], parts[5]], ["1", "1", ""]);
    const client = new grpc.Client(`unix:${parts[3]}`, grpc.credentials.createInsecure());
    const info = await unary(client, "/foresight.v1.PluginService/GetInfo", Buffer.alloc(0), (b) => GetInfoResponse.decode(b));
    assert.equal(info.type, "parity-filter");
    client.close();
    assert.ok(p.stderr.some((l) => JSON.parse(l)["@level"] === "warn" && /none of this plugin's protocol versions/.test(l)));
    p.child.kill("SIGTERM");
    await p.exit;
    assert.ok(!existsSync(parts[3]!), "SIGTERM removes the socket too");
  } finally {
    p.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

/** bidi sends each request on one stage stream and returns the responses, in order. */
function bidi<T>(client: grpc.Client, path: string, reqs: Uint8Array[], decode: (b: Buffer) => T): Promise<T[]> {
  const stream = client.makeBidiStreamRequest(path, identity, decode);
  const out: T[] = [];
  const ended = new Promise<T[]>((resolve, reject) => {
    stream.on("data", (r: T) => out.push(r));
    stream.on("end", () => resolve(out));
    stream.on("error", reject);
  });
  for (const r of reqs) stream.write(Buffer.from(r));
  stream.end();
  return ended;
}

test("flow control's stages as processes: a detector and an orderer answer their streams", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-test-"));
  const env = { ...cookie, PLUGIN_PROTOCOL_VERSIONS: "1", PLUGIN_UNIX_SOCKET_DIR: dir };
  const detector = run(env, [flowFixture, "detector"]);
  const orderer = run(env, [flowFixture, "order"]);
  try {
    const dial = async (p: ReturnType<typeof run>) => new grpc.Client(`unix:${(await p.stdout).split("|")[3]}`, grpc.credentials.createInsecure());
    const d = await dial(detector);
    const dInfo = await unary(d, "/foresight.v1.PluginService/GetInfo", Buffer.alloc(0), (b) => GetInfoResponse.decode(b));
    assert.deepEqual([dInfo.type, dInfo.stage, dInfo.reads], ["fixture-detector", 6, ["endpoints.states.waiting"]]);
    // helpers' endpoint i waits i: room 2 − [0, 1, 2, 3] = 2, 1, 0, −1 (sent as 0); then [2, 3]: all full.
    const many = cycle(4);
    const full = cycle(4);
    full.endpoints = full.endpoints.slice(2);
    const [r1, r2] = await bidi(d, "/foresight.v1.SaturationDetectorService/Detect", [encodeCycleBatch([many]), encodeCycleBatch([full])], (b) =>
      DetectResponse.decode(b),
    );
    assert.deepEqual(r1!.results, [{ status: undefined, room: [2, 1, 0, 0], waitMs: 0, reason: "", slots: [] }]);
    assert.deepEqual(r2!.results, [{ status: undefined, room: [0, 0], waitMs: -1, reason: "queues-full", slots: [] }]);
    d.close();

    const o = await dial(orderer);
    const oInfo = await unary(o, "/foresight.v1.PluginService/GetInfo", Buffer.alloc(0), (b) => GetInfoResponse.decode(b));
    assert.deepEqual([oInfo.type, oInfo.stage], ["fixture-order", 7]);
    // helpers' cycle: priority −1, session "s-1", a TTFT objective, now 10:11:12.345.
    const noSlo = cycle(1);
    noSlo.request = { ...noSlo.request, priority: 3, sessionId: "", slo: { ttftMs: 0, tpotMs: 0 } };
    const [keys] = await bidi(o, "/foresight.v1.OrderService/Order", [encodeCycleBatch([cycle(1), noSlo])], (b) => OrderResponse.decode(b));
    assert.deepEqual(keys!.results, [
      { status: undefined, rank: 1n, hopelessAfter: new Date("2026-11-22T10:11:12.445Z"), flow: "s-1" },
      { status: undefined, rank: -3n, hopelessAfter: undefined, flow: "" },
    ]);
    o.close();
  } finally {
    detector.child.kill("SIGKILL");
    orderer.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});
