#!/usr/bin/env node
// assemble.mjs lays out a compiled TypeScript plugin as a self-contained directory the host can
// exec, like the binary `make build` puts in bin/plugins/<stage>:
//
//   node assemble.mjs --plugin DIR --out OUT [--entry main.js]
//
//   OUT/<entry>          DIR/dist/src/<entry>, made executable (its first line is #!/usr/bin/node)
//   OUT/*.js             the rest of DIR/dist/src
//   OUT/VERSION          DIR/VERSION, which the entry reads (see readVersion)
//   OUT/node_modules/    the runtime dependencies of DIR/package.json, transitively, copied from
//                        where Node resolves them (symlinks followed; devDependencies left out)
//
// It uses nothing but Node: no network, no bundler. OUT is replaced.

import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

function args() {
  const out = { entry: "main.js" };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, "");
    if (!["plugin", "out", "entry"].includes(key) || argv[i + 1] === undefined) {
      console.error("usage: assemble.mjs --plugin DIR --out OUT [--entry main.js]");
      process.exit(2);
    }
    out[key] = argv[i + 1];
  }
  if (!out.plugin || !out.out) {
    console.error("usage: assemble.mjs --plugin DIR --out OUT [--entry main.js]");
    process.exit(2);
  }
  return out;
}

const readJson = (p) => JSON.parse(readFileSync(p, "utf8"));

/** packageDir finds `name` as Node's require would from directory `from`: node_modules up the tree. */
function packageDir(name, from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    if (dirname(dir) === dir) throw new Error(`cannot find package ${name} from ${from}`);
  }
}

/** copyPackage copies one installed package, without its own node_modules. */
function copyPackage(src, dest, linked) {
  const pkg = readJson(join(src, "package.json"));
  mkdirSync(dest, { recursive: true });
  if (linked && Array.isArray(pkg.files)) {
    // A package linked from source (file: dependency): only what it would publish.
    for (const f of ["package.json", ...pkg.files, "README.md", "LICENSE"]) {
      if (existsSync(join(src, f))) cpSync(join(src, f), join(dest, f), { recursive: true, dereference: true });
    }
    return;
  }
  cpSync(src, dest, {
    recursive: true,
    dereference: true,
    filter: (p) => !p.slice(src.length).split(/[\\/]/).includes("node_modules"),
  });
}

function main() {
  const { plugin, out, entry } = args();
  const pluginDir = resolve(plugin);
  const outDir = resolve(out);
  const compiled = join(pluginDir, "dist", "src");
  if (!existsSync(join(compiled, entry))) throw new Error(`${join(compiled, entry)} is missing: run tsc first`);

  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  cpSync(compiled, outDir, { recursive: true, filter: (p) => statSync(p).isDirectory() || /\.js$/.test(p) });
  chmodSync(join(outDir, entry), 0o755);
  if (existsSync(join(pluginDir, "VERSION"))) cpSync(join(pluginDir, "VERSION"), join(outDir, "VERSION"));

  // Walk the runtime dependency graph. Each package goes to OUT/node_modules/<name> unless another
  // version took that place, in which case it nests under the package that needs it.
  const placed = new Map(); // name -> version at the top level
  const queue = [{ from: pluginDir, deps: readJson(join(pluginDir, "package.json")).dependencies ?? {}, into: outDir }];
  const done = new Set();
  while (queue.length > 0) {
    const { from, deps, into } = queue.shift();
    for (const name of Object.keys(deps)) {
      const src = packageDir(name, from);
      const pkg = readJson(join(src, "package.json"));
      let dest = join(outDir, "node_modules", name);
      if (placed.has(name) && placed.get(name) !== pkg.version) dest = join(into, "node_modules", name);
      else placed.set(name, pkg.version);
      const key = `${src}->${dest}`;
      if (done.has(key)) continue;
      done.add(key);
      if (!existsSync(join(dest, "package.json"))) {
        copyPackage(src, dest, !src.includes(`${"/"}node_modules${"/"}`));
      }
      const next = { ...(pkg.dependencies ?? {}), ...(pkg.optionalDependencies ?? {}) };
      const present = Object.fromEntries(
        Object.entries(next).filter(([n]) => {
          try {
            packageDir(n, src);
            return true;
          } catch (err) {
            if (pkg.optionalDependencies?.[n] !== undefined) return false; // an optional one not installed here
            throw err;
          }
        }),
      );
      queue.push({ from: src, deps: present, into: dest });
    }
  }
  console.log(`assembled ${outDir} (${placed.size} runtime packages)`);
}

main();
