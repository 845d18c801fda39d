// @foresight/plugin-sdk: write a Foresight pipeline stage in TypeScript.
//
//   import { serve, type Filter, type Cycle, type FilterVerdict } from "@foresight/plugin-sdk";
//   class MyFilter implements Filter {
//     readonly type = "my-filter";
//     readonly description = "keeps the endpoints with an empty queue";
//     filter(c: Cycle): FilterVerdict { ... }
//   }
//   serve(new MyFilter(), "1.0.0");

export * from "./types";
export { Code, StatusError, invalidArgument } from "./status";
export {
  decodeParams,
  Params,
  checkRange,
  checkRangeOpenLow,
  checkInteger,
  checkOneOf,
  formatG,
  resolvePath,
  resolvePathIn,
  CONFIG_DIR_ENV,
} from "./params";
export { log, type Level, type Fields } from "./log";
export { serve, HANDSHAKE, PROTOCOL_VERSION, type ServeOptions } from "./goplugin";
export { readVersion } from "./version";
export { inRound, uncachedTokens, placeOn, withOwnEndpoints, afterScores, pickRound } from "./rounds";
export { encodeCycleBatch, decodeCycleBatch, cycleFromWire } from "./convert";
export { projectCycle, filterOverWire, type WireAnswer } from "./testing";
