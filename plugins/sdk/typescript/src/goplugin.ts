// hashicorp/go-plugin's protocol, plugin side, for a Node process (Go: goplugin.go and go-plugin's
// server.go, grpc_server.go, grpc_controller.go, grpc_stdio.go, mtls.go).
//
// What go-plugin's client (the Foresight host) does and expects, in order:
//  1. It execs the plugin with FORESIGHT_PLUGIN=<cookie>, PLUGIN_PROTOCOL_VERSIONS=1 (the
//     protocol versions it speaks, comma-separated), PLUGIN_MIN_PORT/PLUGIN_MAX_PORT (TCP only)
//     and, with AutoMTLS, PLUGIN_CLIENT_CERT: its own one-time certificate, PEM.
//  2. It reads one line on the plugin's stdout:
//       CORE-PROTOCOL|APP-PROTOCOL|NETWORK|ADDRESS|PROTOCOL|SERVER-CERT
//     here 1|1|unix|/tmp/plugin123|grpc|<the server certificate, DER, base64 RawStdEncoding:
//     standard alphabet, no padding, since the line cannot hold PEM's newlines>.
//  3. It dials ADDRESS over TLS (server name "localhost", the server certificate as its only
//     root, its own certificate as the client certificate), with ALPN h2, and calls
//     plugin.GRPCStdio/StreamStdio at once (stdout/stderr written after the handshake, mirrored
//     on the host; Unimplemented would only make it log a warning) and opens
//     plugin.GRPCBroker/StartStream (for brokered connections, which Foresight never uses).
//  4. The Foresight host then calls foresight.v1.PluginService/GetInfo and Configure and the stage
//     streams; go-plugin's Ping would call grpc.health.v1.Health/Check for service "plugin".
//  5. On Kill it calls plugin.GRPCController/Shutdown and waits up to 2 s for the process to exit
//     before killing it.
// Every other line on stderr is the plugin's log (see log.ts); a plugin never writes to stdout
// after the handshake except through the stdio stream.

import { X509Certificate, randomInt } from "node:crypto";
import { chmodSync, chownSync, existsSync, readFileSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import * as grpc from "@grpc/grpc-js";
import { log, realStderrWrite } from "./log";
import { addForesightServices, stageOf } from "./server";
import { Stage, checkReads, stageName, type AnyStage } from "./types";
import { rawStdBase64, selfSignedCert } from "./x509";

/** PROTOCOL_VERSION is the Foresight plugin protocol this SDK speaks (Go: sdk.ProtocolVersion). */
export const PROTOCOL_VERSION = 1;

/** HANDSHAKE is the go-plugin handshake shared by the host and every plugin (Go: sdk.Handshake). */
export const HANDSHAKE = {
  protocolVersion: PROTOCOL_VERSION,
  magicCookieKey: "FORESIGHT_PLUGIN",
  magicCookieValue: "6d1b3c2f-foresight-stage-plugin",
} as const;

/** CORE_PROTOCOL_VERSION is go-plugin's own protocol version, the handshake line's first field. */
export const CORE_PROTOCOL_VERSION = 1;

/** HEALTH_SERVICE is the service name go-plugin's Ping checks. */
export const HEALTH_SERVICE = "plugin";

/** cookieRefusal is what a plugin prints when run by hand. */
export function cookieRefusal(type: string): string {
  return (
    `${type}: this program is a Foresight plugin: the Foresight host starts it (see the plugins\n` +
    `section of a pipeline config) and talks to it over the go-plugin protocol. It is not meant\n` +
    `to be run by hand (${HANDSHAKE.magicCookieKey} does not hold the handshake cookie).\n`
  );
}

/**
 * negotiate picks the protocol version to serve, as go-plugin does: the newest of `ours` that the
 * host lists in PLUGIN_PROTOCOL_VERSIONS; when none matches (or the host lists none), the oldest
 * of ours, leaving it to the host to report the mismatch. `matched` says whether one matched.
 */
export function negotiate(ours: readonly number[], hostVersions: string | undefined): { version: number; matched: boolean } {
  const theirs = new Set<number>();
  for (const s of (hostVersions ?? "").split(",")) {
    if (s.trim() === "") continue;
    const v = Number(s);
    if (Number.isInteger(v)) theirs.add(v);
  }
  const sorted = [...ours].sort((a, b) => b - a);
  for (const v of sorted) if (theirs.has(v)) return { version: v, matched: true };
  return { version: sorted[sorted.length - 1]!, matched: false };
}

/** handshakeLine returns go-plugin's handshake line (without the newline). */
export function handshakeLine(protocol: number, socket: string, certDer?: Uint8Array, multiplexAsked = false): string {
  const parts: (string | number)[] = [CORE_PROTOCOL_VERSION, protocol, "unix", socket, "grpc", certDer ? rawStdBase64(certDer) : ""];
  // A host that asks for gRPC broker multiplexing reads a 7th field; this plugin brokers nothing
  // and says so, and go-plugin's client then reports that multiplexing is unsupported.
  if (multiplexAsked) parts.push("false");
  return parts.join("|");
}

/** socketPath returns a fresh path for the plugin's unix socket, like go-plugin's os.CreateTemp(dir, "plugin"). */
export function socketPath(dir = process.env.PLUGIN_UNIX_SOCKET_DIR || tmpdir()): string {
  for (;;) {
    const p = join(dir, `plugin${randomInt(1e9, 1e10)}`);
    if (!existsSync(p)) return p;
  }
}

/** groupId resolves PLUGIN_UNIX_SOCKET_GROUP: a numeric gid or a group name from /etc/group. */
function groupId(group: string): number {
  if (/^\d+$/.test(group)) return Number(group);
  for (const line of readFileSync("/etc/group", "utf8").split("\n")) {
    const [name, , gid] = line.split(":");
    if (name === group && gid !== undefined) return Number(gid);
  }
  throw new Error(`failed to find gid from ${JSON.stringify(group)}`);
}

// --- go-plugin's own services, by hand: their messages are one or two fields ------------------

const identity = (b: Buffer): Buffer => b;
const emptyMessage = (): Buffer => Buffer.alloc(0);

/** Serving statuses of grpc.health.v1.HealthCheckResponse. */
const SERVING = 1;
const SERVICE_UNKNOWN = 3;

/** decodeHealthRequest reads grpc.health.v1.HealthCheckRequest's service (field 1). */
export function decodeHealthRequest(buf: Uint8Array): string {
  const r = new BinaryReader(buf);
  let service = "";
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag === 10) service = r.string();
    else r.skip(tag & 7, tag >>> 3);
  }
  return service;
}

/** encodeHealthResponse writes grpc.health.v1.HealthCheckResponse{status} (field 1, enum). */
export function encodeHealthResponse(status: number): Buffer {
  return Buffer.from(new BinaryWriter().uint32(8).int32(status).finish());
}

/** encodeStdioData writes plugin.StdioData{channel (1: stdout, 2: stderr), data}. */
export function encodeStdioData(channel: 1 | 2, data: Uint8Array): Buffer {
  return Buffer.from(new BinaryWriter().uint32(8).int32(channel).uint32(18).bytes(data).finish());
}

const healthService: grpc.ServiceDefinition = {
  Check: {
    path: "/grpc.health.v1.Health/Check",
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: (b: Buffer) => decodeHealthRequest(b),
    responseSerialize: (s: number) => encodeHealthResponse(s),
    responseDeserialize: identity,
  },
  Watch: {
    path: "/grpc.health.v1.Health/Watch",
    requestStream: false,
    responseStream: true,
    requestSerialize: identity,
    requestDeserialize: (b: Buffer) => decodeHealthRequest(b),
    responseSerialize: (s: number) => encodeHealthResponse(s),
    responseDeserialize: identity,
  },
};

const knownHealth = (service: string): boolean => service === "" || service === HEALTH_SERVICE;

const healthImpl: grpc.UntypedServiceImplementation = {
  Check: (call: grpc.ServerUnaryCall<string, number>, cb: grpc.sendUnaryData<number>) => {
    if (knownHealth(call.request)) cb(null, SERVING);
    else cb({ code: grpc.status.NOT_FOUND, details: "unknown service" });
  },
  Watch: (call: grpc.ServerWritableStream<string, number>) => {
    call.write(knownHealth(call.request) ? SERVING : SERVICE_UNKNOWN); // then stays open until cancelled
  },
};

const controllerService: grpc.ServiceDefinition = {
  Shutdown: {
    path: "/plugin.GRPCController/Shutdown",
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: emptyMessage,
    responseDeserialize: identity,
  },
};

const stdioService: grpc.ServiceDefinition = {
  StreamStdio: {
    path: "/plugin.GRPCStdio/StreamStdio",
    requestStream: false,
    responseStream: true,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity, // already encoded StdioData
    responseDeserialize: identity,
  },
};

const brokerService: grpc.ServiceDefinition = {
  StartStream: {
    path: "/plugin.GRPCBroker/StartStream",
    requestStream: true,
    responseStream: true,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

/**
 * Stdio forwards what the process writes on stdout and stderr after the handshake to the host over
 * plugin.GRPCStdio/StreamStdio, as go-plugin does with os.Stdout and os.Stderr (the Foresight
 * host discards it; log with `log`, which writes the real stderr). Until the host connects, up to
 * 1 MiB is kept.
 */
export class Stdio {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private stream: grpc.ServerWritableStream<Buffer, Buffer> | undefined;
  static readonly maxPending = 1 << 20;

  push(channel: 1 | 2, data: Buffer): void {
    if (data.length === 0) return;
    const msg = encodeStdioData(channel, data);
    if (this.stream !== undefined) {
      this.stream.write(msg);
      return;
    }
    this.pending.push(msg);
    this.pendingBytes += msg.length;
    while (this.pendingBytes > Stdio.maxPending && this.pending.length > 1) {
      this.pendingBytes -= this.pending.shift()!.length;
    }
  }

  attach(call: grpc.ServerWritableStream<Buffer, Buffer>): void {
    this.stream = call;
    for (const m of this.pending) call.write(m);
    this.pending = [];
    this.pendingBytes = 0;
    const detach = () => {
      if (this.stream === call) this.stream = undefined;
    };
    call.on("cancelled", detach);
    call.on("close", detach);
    call.on("error", detach);
  }

  /** redirect makes process.stdout and process.stderr writes go through push. */
  redirect(): void {
    const hook = (channel: 1 | 2) =>
      ((chunk: string | Uint8Array, encoding?: BufferEncoding | ((err?: Error) => void), cb?: (err?: Error) => void) => {
        const done = typeof encoding === "function" ? encoding : cb;
        const enc = typeof encoding === "string" ? encoding : "utf8";
        this.push(channel, typeof chunk === "string" ? Buffer.from(chunk, enc) : Buffer.from(chunk));
        if (done) process.nextTick(done);
        return true;
      }) as typeof process.stdout.write;
    process.stdout.write = hook(1);
    process.stderr.write = hook(2);
  }
}

/** ServeOptions tunes serve; the defaults suit every plugin. */
export interface ServeOptions {
  /** The stage to serve when the implementation has the methods of several. */
  stage?: Stage;
  /** The protocol versions this plugin serves (default [PROTOCOL_VERSION]). */
  protocols?: number[];
  /** Extra grpc-js server options. */
  grpcOptions?: grpc.ServerOptions;
}

function fatal(message: string, fields?: Record<string, unknown>): never {
  log.error(message, fields);
  process.exit(1);
}

/**
 * serve serves impl as a plugin process of the stage it implements (filter, score, admit, pick,
 * detect, order, or produce and observe), reporting `version` (the plugin's semver) in GetInfo.
 * It returns at once; the process then runs until the host shuts it down. Run by hand (without
 * the handshake cookie), it prints why it will not run and exits with status 1.
 */
export function serve(impl: AnyStage, version: string, opts: ServeOptions = {}): void {
  if (process.env[HANDSHAKE.magicCookieKey] !== HANDSHAKE.magicCookieValue) {
    realStderrWrite(cookieRefusal(impl.type));
    process.exit(1);
  }
  let stage: Stage;
  try {
    stage = stageOf(impl, opts.stage);
    checkReads(impl.reads);
  } catch (err) {
    fatal("plugin init error", { error: err });
  }
  const { version: protocol, matched } = negotiate(opts.protocols ?? [PROTOCOL_VERSION], process.env.PLUGIN_PROTOCOL_VERSIONS);
  if (!matched) {
    log.warn("the host speaks none of this plugin's protocol versions", {
      host: process.env.PLUGIN_PROTOCOL_VERSIONS ?? "",
      plugin: (opts.protocols ?? [PROTOCOL_VERSION]).join(","),
    });
  }

  // A crash is one error line in the host's log (stack included), then exit 2 like a Go panic;
  // the host restarts the process.
  const crash = (what: string) => (err: unknown) => {
    log.error(what, { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exit(2);
  };
  process.on("uncaughtException", crash("plugin crashed: uncaught exception"));
  process.on("unhandledRejection", crash("plugin crashed: unhandled promise rejection"));
  // The host's Ctrl-C reaches the whole process group; the host stops its plugins itself.
  let interrupts = 0;
  process.on("SIGINT", () => log.trace("plugin received interrupt signal, ignoring", { count: ++interrupts }));

  log.info("plugin serving", { type: impl.type, version, protocol, stage: stageName(stage), node: process.version });

  let creds = grpc.ServerCredentials.createInsecure();
  let certDer: Buffer | undefined;
  const clientCert = process.env.PLUGIN_CLIENT_CERT;
  if (clientCert) {
    try {
      new X509Certificate(clientCert); // the host's certificate: the only one trusted, and required
    } catch (err) {
      log.error("client cert provided but failed to parse", { error: err });
    }
    const server = selfSignedCert();
    certDer = server.der;
    creds = grpc.ServerCredentials.createSsl(
      Buffer.from(clientCert),
      [{ private_key: Buffer.from(server.keyPem), cert_chain: Buffer.from(server.certPem) }],
      true,
    );
  }

  const server = new grpc.Server(opts.grpcOptions);
  const stdio = new Stdio();
  const socket = socketPath();
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    const exit = () => process.exit(0);
    setTimeout(() => {
      server.forceShutdown();
      exit();
    }, 500).unref();
    server.tryShutdown(exit);
  };
  const removeSocket = () => {
    try {
      unlinkSync(socket);
    } catch {
      // already gone
    }
  };
  process.on("exit", removeSocket);
  // Terminated: remove the socket, then die of the signal as before.
  process.once("SIGTERM", () => {
    removeSocket();
    process.kill(process.pid, "SIGTERM");
  });

  server.addService(healthService, healthImpl);
  server.addService(controllerService, {
    Shutdown: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      cb(null, Buffer.alloc(0));
      setImmediate(shutdown);
    },
  });
  server.addService(stdioService, {
    StreamStdio: (call: grpc.ServerWritableStream<Buffer, Buffer>) => stdio.attach(call),
  });
  server.addService(brokerService, {
    StartStream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on("data", () => log.debug("ignoring a broker message: this plugin brokers no connections"));
      call.on("end", () => call.end());
      call.on("error", () => undefined);
    },
  });
  try {
    addForesightServices(server, impl, stage, version);
  } catch (err) {
    fatal("plugin init error", { error: err });
  }

  server.bindAsync(`unix:${socket}`, creds, (err) => {
    if (err) fatal("plugin init error", { error: err, address: socket });
    const group = process.env.PLUGIN_UNIX_SOCKET_GROUP;
    if (group) {
      try {
        chownSync(socket, -1, groupId(group));
        chmodSync(socket, 0o660);
      } catch (e) {
        fatal("plugin init error", { error: e, group });
      }
    }
    // Tell the host where to connect, then route later stdout/stderr writes to the stdio stream.
    process.stdout.write(handshakeLine(protocol, socket, certDer, !!process.env.PLUGIN_MULTIPLEX_GRPC) + "\n");
    stdio.redirect();
  });
}
