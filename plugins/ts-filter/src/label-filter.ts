// The label-selector-filter: keeps the endpoints whose labels match a selector.

import { Params, allIndices, checkOneOf, type Cycle, type Filter, type FilterVerdict } from "@foresight/plugin-sdk";

/** TYPE is the plugin type declared in the host configuration. */
export const TYPE = "label-selector-filter";

/** Selector maps a label name to the value an endpoint must carry, or to the values it may carry. */
export type Selector = Record<string, string | string[]>;

/** LabelFilterParams are the filter's parameters, decoded from JSON over defaults(). */
export interface LabelFilterParams {
  /** Labels every kept endpoint carries: name → value, or name → [values] (any of them). */
  match: Selector;
  /**
   * Request label names whose value the endpoint must carry under the same name (e.g. "tenant"):
   * a request without that label places no constraint on it.
   */
  matchRequestLabels: string[];
  /** What to keep when no endpoint matches: "keep-all" (the filter steps aside) or "keep-none". */
  fallback: "keep-all" | "keep-none";
}

/** defaults returns the parameters in force before Configure: no selector, keep-all. */
export function defaults(): LabelFilterParams {
  return { match: {}, matchRequestLabels: [], fallback: "keep-all" };
}

/** validate throws naming the first invalid parameter. */
export function validate(p: LabelFilterParams): void {
  for (const [name, want] of Object.entries(p.match)) {
    if (name === "") throw new Error(`parameter "match": a label name must not be empty`);
    const ok = typeof want === "string" || (Array.isArray(want) && want.length > 0 && want.every((v) => typeof v === "string"));
    if (!ok) {
      throw new Error(
        `parameter "match": label ${JSON.stringify(name)} must map to a string or a non-empty array of strings, got ${JSON.stringify(want)}`,
      );
    }
  }
  const seen = new Set<string>();
  for (const name of p.matchRequestLabels) {
    if (typeof name !== "string" || name === "") {
      throw new Error(`parameter "matchRequestLabels" must list non-empty label names, got ${JSON.stringify(name)}`);
    }
    if (seen.has(name)) throw new Error(`parameter "matchRequestLabels" lists ${JSON.stringify(name)} twice`);
    seen.add(name);
  }
  checkOneOf("fallback", p.fallback, "keep-all", "keep-none");
}

/** A requirement: the endpoint's label `name` is one of `values`. */
interface Requirement {
  name: string;
  values: readonly string[];
}

/** requirements returns the cycle's selector: the static match, then the request-derived labels. */
export function requirements(p: Readonly<LabelFilterParams>, requestLabels: Readonly<Record<string, string>>): Requirement[] {
  const out: Requirement[] = [];
  for (const [name, want] of Object.entries(p.match)) out.push({ name, values: typeof want === "string" ? [want] : want });
  for (const name of p.matchRequestLabels) {
    if (Object.prototype.hasOwnProperty.call(requestLabels, name)) out.push({ name, values: [requestLabels[name]!] });
  }
  return out;
}

/** describe renders requirements for a reason: pool=interactive,gpu in (a100|h100). */
export function describe(reqs: readonly Requirement[]): string {
  return reqs.map((r) => (r.values.length === 1 ? `${r.name}=${r.values[0]}` : `${r.name} in (${r.values.join("|")})`)).join(",");
}

function matches(labels: Readonly<Record<string, string>>, reqs: readonly Requirement[]): boolean {
  for (const r of reqs) {
    const v = Object.prototype.hasOwnProperty.call(labels, r.name) ? labels[r.name] : undefined;
    if (v === undefined || !r.values.includes(v)) return false;
  }
  return true;
}

/**
 * LabelSelectorFilter keeps the endpoints whose labels satisfy every requirement of the selector
 * (the static `match`, plus the request labels named in `matchRequestLabels`). With no
 * requirement it keeps every endpoint; when none matches it keeps all or none (`fallback`).
 */
export class LabelSelectorFilter implements Filter {
  readonly type = TYPE;
  readonly description =
    "keeps the endpoints whose labels match a selector (fixed, or copied from the request's labels); keeps all or none when nothing matches";
  /** The host then sends only the request and the endpoints' labels. */
  readonly reads = ["request", "endpoints.labels"];
  readonly params = new Params(defaults, validate);

  configure(params: string): void {
    this.params.configure(params);
  }

  filter(c: Cycle): FilterVerdict {
    const p = this.params.get();
    const n = c.endpoints.length;
    const reqs = requirements(p, c.request.labels);
    if (reqs.length === 0) return { kept: allIndices(n), reason: `no selector: all ${n} endpoints kept` };
    const kept: number[] = [];
    for (let i = 0; i < n; i++) if (matches(c.endpoints[i]!.labels, reqs)) kept.push(i);
    const sel = describe(reqs);
    if (kept.length > 0) return { kept, reason: `${sel}: ${kept.length} of ${n} endpoints` };
    if (p.fallback === "keep-all") return { kept: allIndices(n), reason: `no endpoint matches ${sel}: all ${n} kept (fallback keep-all)` };
    return { kept: [], reason: `no endpoint matches ${sel}` };
  }
}
