// Copies the committed TypeScript contracts (proto/gen/ts, made by `make generate` with ts-proto)
// into src/gen, so that tsc compiles them with the SDK and their imports (@grpc/grpc-js,
// @bufbuild/protobuf) resolve against this package's node_modules. src/gen is ignored by git:
// proto/gen/ts stays the only source.
import { cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const from = join(pkg, "..", "..", "..", "proto", "gen", "ts");
const to = join(pkg, "src", "gen");
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true, filter: (p) => !p.includes("node_modules") });
