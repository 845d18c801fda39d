// A stage's own error for one cycle, as it travels in a response Status (Go: status.go). A gRPC
// error, in contrast, means the transport failed or the plugin crashed.

import { StatusCode, type Status } from "./gen/foresight/v1/types";

/** Code classifies a stage's failure for one cycle (the wire's StatusCode). */
export const Code = {
  OK: StatusCode.STATUS_CODE_UNSPECIFIED,
  Error: StatusCode.STATUS_CODE_ERROR,
  InvalidArgument: StatusCode.STATUS_CODE_INVALID_ARGUMENT,
  Unavailable: StatusCode.STATUS_CODE_UNAVAILABLE,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

/**
 * StatusError is thrown by a stage to answer one cycle with a specific code, e.g.
 * `throw new StatusError(Code.Unavailable, "no model yet")`. Any other thrown Error answers with
 * Code.Error and its message.
 */
export class StatusError extends Error {
  constructor(
    readonly code: Code,
    message: string,
  ) {
    super(message);
    this.name = "StatusError";
  }
}

/** invalidArgument returns a StatusError with Code.InvalidArgument carrying err's message. */
export function invalidArgument(err: unknown): StatusError {
  return new StatusError(Code.InvalidArgument, messageOf(err));
}

/** messageOf returns the message of anything thrown. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return `stage threw ${typeof err === "string" ? JSON.stringify(err) : String(err)}`;
}

/**
 * statusOf returns the wire status of a thrown value: its code when it is a StatusError with a
 * code other than OK, Code.Error otherwise (Go: statusToProto).
 */
export function statusOf(err: unknown): Status {
  const code = err instanceof StatusError && err.code !== Code.OK ? err.code : Code.Error;
  return { code, message: messageOf(err) };
}
