// Plugin parameters (Go: params.go): JSON merged over defaults, unknown names rejected, then
// range-checked; messages name the parameter and the accepted range like the Go plugins'.

import { isAbsolute, join } from "node:path";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function jsonKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v; // boolean, number, string, object
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * decodeParams decodes `params`, a JSON object, over `defaults` and returns the merged parameters:
 * names absent from params keep their default. It throws an Error naming the problem when the
 * text is not one JSON object, when a name is not one of the defaults' (unknown parameter), or
 * when a value's JSON type differs from its default's (number, string, boolean, array, object).
 * Empty params or "null" yield the defaults; a null value leaves that parameter at its default.
 * A value replaces its default whole: objects and arrays are not merged. `validate`, when given,
 * range-checks the result and throws naming the first bad parameter (see checkRange, checkOneOf).
 */
export function decodeParams<T extends object>(
  params: string | Uint8Array | undefined,
  defaults: T,
  validate?: (p: T) => void,
): T {
  const text = (typeof params === "string" ? params : Buffer.from(params ?? new Uint8Array()).toString("utf8")).trim();
  const out = { ...defaults } as Record<string, unknown>;
  if (text !== "" && text !== "null") {
    let parsed: Json;
    try {
      parsed = JSON.parse(text) as Json;
    } catch (err) {
      throw new Error(`decoding parameters: ${(err as Error).message}`);
    }
    if (!isPlainObject(parsed)) {
      throw new Error(`decoding parameters: want a JSON object, got JSON ${jsonKind(parsed)}`);
    }
    for (const [name, value] of Object.entries(parsed)) {
      if (!Object.prototype.hasOwnProperty.call(defaults, name)) {
        throw new Error(`decoding parameters: json: unknown field ${JSON.stringify(name)}`);
      }
      if (value === null) continue;
      const want = jsonKind((defaults as Record<string, unknown>)[name]);
      const got = jsonKind(value);
      if (want !== "undefined" && want !== "null" && got !== want) {
        throw new Error(`decoding parameters: parameter ${JSON.stringify(name)}: got JSON ${got}, want ${want}`);
      }
      out[name] = value;
    }
  }
  const result = out as T;
  validate?.(result);
  return result;
}

/**
 * Params holds a plugin's parameters of type T: configure decodes JSON over the defaults (see
 * decodeParams), validates and swaps them in; on error the previous parameters stay in force.
 * Give a plugin a `params = new Params(defaults, validate)` field and a
 * `configure(p) { this.params.configure(p) }` method.
 */
export class Params<T extends object> {
  private cur: Readonly<T>;

  constructor(
    private readonly defaults: () => T,
    private readonly validate?: (p: T) => void,
  ) {
    this.cur = Object.freeze(defaults());
  }

  /** configure merges params over the defaults, validates and swaps them in. */
  configure(params: string | Uint8Array | undefined): void {
    this.cur = Object.freeze(decodeParams(params, this.defaults(), this.validate));
  }

  /** get returns the parameters in force. */
  get(): Readonly<T> {
    return this.cur;
  }
}

/**
 * formatG formats a number like Go's %g: the shortest representation that reads back exactly, in
 * exponent form (at least two exponent digits) when the decimal exponent is below −4 or at least 6,
 * e.g. 0.8, 5000, 1e+07.
 */
export function formatG(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "+Inf";
  if (x === -Infinity) return "-Inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const [mant, expStr] = x.toExponential().split("e") as [string, string];
  const exp = Number(expStr);
  if (exp < -4 || exp >= 6) {
    const e = Math.abs(exp);
    return `${mant}e${exp < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  }
  return String(x);
}

/** checkRange throws unless lo <= v <= hi (and v is a number), naming the parameter. */
export function checkRange(name: string, v: number, lo: number, hi: number): void {
  if (typeof v !== "number" || Number.isNaN(v) || v < lo || v > hi) {
    throw new Error(`parameter ${JSON.stringify(name)} must be in [${formatG(lo)}, ${formatG(hi)}], got ${formatG(Number(v))}`);
  }
}

/** checkRangeOpenLow throws unless lo < v <= hi, naming the parameter. */
export function checkRangeOpenLow(name: string, v: number, lo: number, hi: number): void {
  if (typeof v !== "number" || Number.isNaN(v) || v <= lo || v > hi) {
    throw new Error(`parameter ${JSON.stringify(name)} must be in (${formatG(lo)}, ${formatG(hi)}], got ${formatG(Number(v))}`);
  }
}

/** checkInteger throws unless v is an integer, naming the parameter. */
export function checkInteger(name: string, v: number): void {
  if (!Number.isInteger(v)) {
    throw new Error(`parameter ${JSON.stringify(name)} must be an integer, got ${formatG(Number(v))}`);
  }
}

/** checkOneOf throws unless v is one of allowed, naming the parameter. */
export function checkOneOf(name: string, v: string, ...allowed: string[]): void {
  if (!allowed.includes(v)) {
    const list = `[${allowed.map((a) => JSON.stringify(a)).join(" ")}]`;
    throw new Error(`parameter ${JSON.stringify(name)} must be one of ${list}, got ${JSON.stringify(v)}`);
  }
}

/**
 * CONFIG_DIR_ENV names the environment variable in which the host tells a plugin process the
 * directory of the config file that declared it.
 */
export const CONFIG_DIR_ENV = "FORESIGHT_CONFIG_DIR";

/** resolvePathIn returns p as is when it is "" or absolute (or dir is ""), else joined to dir. */
export function resolvePathIn(dir: string, p: string): string {
  if (p === "" || dir === "" || isAbsolute(p)) return p;
  return join(dir, p);
}

/**
 * resolvePath returns a path parameter as the plugin should use it: relative paths against the
 * config file's directory (CONFIG_DIR_ENV), as the host resolves plugin binaries.
 */
export function resolvePath(p: string): string {
  return resolvePathIn(process.env[CONFIG_DIR_ENV] ?? "", p);
}
