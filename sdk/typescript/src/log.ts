// Logs go to stderr, one JSON object a line in hashicorp/go-hclog's JSON
// format ("@level", "@message", "@timestamp", then fields), which the host
// copies into its own log with the level and fields kept. stdout carries
// the handshake line and nothing else, so console.log is sent to stderr
// too (see serve).

/** module is the "@module" field of every line; set it with setLogModule. */
let logModule = "runner";

/** setLogModule names the plugin in its log lines ("@module"). */
export function setLogModule(name: string): void {
  logModule = name;
}

export type Level = "trace" | "debug" | "info" | "warn" | "error";

export type Fields = Record<string, unknown>;

/** timestamp is go-hclog's "@timestamp" format, with microseconds
 * (2006-01-02T15:04:05.000000Z07:00): go-plugin's host reads a line whose
 * timestamp has another form as plain text. */
export function timestamp(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export function log(level: Level, message: string, fields: Fields = {}): void {
  const line: Record<string, unknown> = {
    "@level": level,
    "@message": message,
    "@module": logModule,
    "@timestamp": timestamp(new Date()),
  };
  for (const [k, v] of Object.entries(fields)) {
    if (v instanceof Error) {
      line[k] = v.message;
    } else if (v !== undefined) {
      line[k] = v;
    }
  }
  let text: string;
  try {
    text = JSON.stringify(line);
  } catch {
    text = JSON.stringify({ "@level": level, "@message": message, "@module": logModule });
  }
  process.stderr.write(text + "\n");
}

export const logger = {
  debug: (m: string, f?: Fields) => log("debug", m, f),
  info: (m: string, f?: Fields) => log("info", m, f),
  warn: (m: string, f?: Fields) => log("warn", m, f),
  error: (m: string, f?: Fields) => log("error", m, f),
};
