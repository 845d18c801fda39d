// The plugin's log (Go: log.go): one JSON object per line on the process's real stderr, in the
// shape go-plugin's host parses: "@level", "@message", "@timestamp" (layout
// 2006-01-02T15:04:05.000000Z07:00) and any other keys as fields. The host re-logs each line
// with the plugin's name. Use fields, not formatted messages: log.info("model loaded", { rows: 12 }).

export type Level = "trace" | "debug" | "info" | "warn" | "error";

/** Fields are a log line's key-value pairs. */
export type Fields = Record<string, unknown>;

type Write = (line: string) => void;

// Bound before serve() redirects process.stderr to the GRPCStdio stream (as go-plugin does with
// os.Stderr), so log lines keep going to the real stderr, which the host reads.
const realStderr: (text: string) => boolean = process.stderr.write.bind(process.stderr);
let write: Write = (line) => {
  realStderr(line);
};

/** timestamp formats d in the layout go-plugin parses, in UTC, with microseconds. */
export function timestamp(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return value.message;
  return value;
}

/** logLine returns the JSON line for one entry (without the newline). */
export function logLine(level: Level, message: string, fields?: Fields, now = new Date()): string {
  const entry: Record<string, unknown> = { "@level": level, "@message": message, "@timestamp": timestamp(now) };
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (!(k in entry)) entry[k] = v;
  }
  try {
    return JSON.stringify(entry, replacer);
  } catch {
    return JSON.stringify({ "@level": level, "@message": message, "@timestamp": entry["@timestamp"], fields: "unserializable" });
  }
}

function emit(level: Level, message: string, fields?: Fields): void {
  write(logLine(level, message, fields) + "\n");
}

/** log is the plugin process's logger. */
export const log = {
  trace: (message: string, fields?: Fields) => emit("trace", message, fields),
  debug: (message: string, fields?: Fields) => emit("debug", message, fields),
  info: (message: string, fields?: Fields) => emit("info", message, fields),
  warn: (message: string, fields?: Fields) => emit("warn", message, fields),
  error: (message: string, fields?: Fields) => emit("error", message, fields),
};

/** setLogWriter replaces where log lines go (for tests); it returns the previous writer. */
export function setLogWriter(w: Write): Write {
  const prev = write;
  write = w;
  return prev;
}

/**
 * realStderrWrite writes to the real stderr, bypassing any redirection (for messages printed
 * before serving, such as the refusal to run by hand).
 */
export function realStderrWrite(text: string): void {
  realStderr(text);
}
