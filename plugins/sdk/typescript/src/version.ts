import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * readVersion returns the plugin's semver from the VERSION file in dir (a plugin's build copies
 * its VERSION beside its entry file, as `make build` stamps a Go plugin's), or `fallback` when
 * there is none.
 */
export function readVersion(dir: string, fallback = "0.0.0-dev"): string {
  try {
    const v = readFileSync(join(dir, "VERSION"), "utf8").trim();
    return v === "" ? fallback : v;
  } catch {
    return fallback;
  }
}
