import { test } from "node:test";
import assert from "node:assert/strict";
import { checkOneOf, checkRange, checkRangeOpenLow, decodeParams, formatG, resolvePathIn } from "../src/params";

const defaults = { weight: 1, mode: "least", on: true, list: ["a"], map: {} as Record<string, string> };

test("parameters merge over the defaults", () => {
  assert.deepEqual(decodeParams("", defaults), defaults);
  assert.deepEqual(decodeParams("null", defaults), defaults);
  assert.deepEqual(decodeParams(" {} ", defaults), defaults);
  assert.deepEqual(decodeParams('{"weight": 2, "map": {"k": "v"}}', defaults), { ...defaults, weight: 2, map: { k: "v" } });
  assert.deepEqual(decodeParams('{"mode": null}', defaults), defaults);
  assert.deepEqual(decodeParams(Buffer.from('{"on": false}'), defaults), { ...defaults, on: false });
  assert.deepEqual(defaults.map, {}, "the defaults are not modified");
});

test("unknown names, wrong types and anything but one object are errors", () => {
  assert.throws(() => decodeParams('{"wieght": 2}', defaults), { message: 'decoding parameters: json: unknown field "wieght"' });
  assert.throws(() => decodeParams('{"weight": "2"}', defaults), {
    message: 'decoding parameters: parameter "weight": got JSON string, want number',
  });
  assert.throws(() => decodeParams('{"list": {}}', defaults), {
    message: 'decoding parameters: parameter "list": got JSON object, want array',
  });
  assert.throws(() => decodeParams("[1]", defaults), { message: "decoding parameters: want a JSON object, got JSON array" });
  assert.throws(() => decodeParams('{"weight": 1} {"weight": 2}', defaults), /^Error: decoding parameters: /);
  assert.throws(() => decodeParams('{"weight": 1', defaults), /^Error: decoding parameters: /);
  assert.throws(() => decodeParams('{"toString": 1}', defaults), /unknown field "toString"/);
});

test("validate runs on the merged result", () => {
  const v = (p: typeof defaults) => checkRange("weight", p.weight, 0, 100);
  assert.equal(decodeParams('{"weight": 100}', defaults, v).weight, 100);
  assert.throws(() => decodeParams('{"weight": 101}', defaults, v), { message: 'parameter "weight" must be in [0, 100], got 101' });
});

test("range and choice messages read like the Go plugins'", () => {
  assert.throws(() => checkRange("maxTTFTPenaltyMs", 2e7, 0, 1e7), { message: 'parameter "maxTTFTPenaltyMs" must be in [0, 1e+07], got 2e+07' });
  assert.throws(() => checkRange("x", NaN, 0, 1), { message: 'parameter "x" must be in [0, 1], got NaN' });
  assert.throws(() => checkRangeOpenLow("sloBufferFactor", 0, 0, 10), { message: 'parameter "sloBufferFactor" must be in (0, 10], got 0' });
  assert.throws(() => checkOneOf("fallback", "keep", "keep-all", "keep-none"), {
    message: 'parameter "fallback" must be one of ["keep-all" "keep-none"], got "keep"',
  });
  checkOneOf("fallback", "keep-all", "keep-all", "keep-none");
});

test("formatG matches Go's %g", () => {
  const cases: [number, string][] = [
    [0, "0"], [0.8, "0.8"], [5000, "5000"], [100000, "100000"], [1e6, "1e+06"], [1234567, "1.234567e+06"],
    [1e7, "1e+07"], [0.0001, "0.0001"], [0.00001, "1e-05"], [-2.5, "-2.5"], [1e21, "1e+21"], [1.5e-300, "1.5e-300"],
    [Infinity, "+Inf"], [-Infinity, "-Inf"],
  ];
  for (const [x, want] of cases) assert.equal(formatG(x), want, String(x));
});

test("paths resolve against the config directory", () => {
  assert.equal(resolvePathIn("/etc/foresight", ""), "");
  assert.equal(resolvePathIn("/etc/foresight", "/var/lib/models"), "/var/lib/models");
  assert.equal(resolvePathIn("/etc/foresight", "models"), "/etc/foresight/models");
  assert.equal(resolvePathIn("/etc/foresight", "../state/models"), "/etc/state/models");
  assert.equal(resolvePathIn("", "models"), "models");
});
