/*
 * run.ts — one tool call: `fsbroker run --core STATE --tool-call ID
 * --summary-fd 3 -- ARGV`. The command's stdout and stderr stream to the
 * host (callbacks, or an async iterable of chunks) and are collected; the
 * summary is read from fd 3 only, so nothing the command prints can pass
 * for it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";

import { FsbrokerError } from "./errors.js";
import type { RunSummary } from "./protocol.js";

export interface RunOptions {
  /** Input for the command; default none (stdin is /dev/null). */
  stdin?: string | Uint8Array;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** Bytes of stdout/stderr kept in the result, each; default 16 MiB (the rest is only streamed). */
  maxBuffer?: number;
  /**
   * Kill the run after this many ms: SIGTERM to `fsbroker run`, which ends
   * the sandbox and every process in it and still writes its summary;
   * SIGKILL after killGraceMs more. The result's timedOut says it happened.
   */
  timeoutMs?: number;
  /** How long a run that was sent SIGTERM at its timeout has before SIGKILL, ms; default 5000. */
  killGraceMs?: number;
  /** Ends the run as timeoutMs does when it aborts (an MCP request the client cancelled). */
  signal?: AbortSignal;
  /**
   * The directory the command starts in (it must exist inside the
   * sandbox, as every workspace path does); default the workspace. The
   * command is then started through `/bin/sh -c 'cd -- DIR && exec "$@"'`.
   */
  cwd?: string;
  /** Environment of `fsbroker run` (the pack decides what reaches the command). */
  env?: NodeJS.ProcessEnv;
}

export interface RunResult {
  toolCallId: string;
  /** The command's exit status (128+N when a signal N killed it). */
  exitStatus: number;
  signal: number | null;
  /** Whether the run was killed at its timeoutMs. */
  timedOut: boolean;
  /** Whether the run was ended because its signal aborted. */
  aborted: boolean;
  summary: RunSummary;
  stdout: Buffer;
  stderr: Buffer;
}

export interface OutputChunk {
  stream: "stdout" | "stderr";
  data: Buffer;
}

/** A running tool call: await it (or .result) for the RunResult; iterate it for output. */
export interface ToolCall extends PromiseLike<RunResult>, AsyncIterable<OutputChunk> {
  readonly toolCallId: string;
  readonly result: Promise<RunResult>;
  readonly pid: number | undefined;
  kill(signal?: NodeJS.Signals): void;
}

interface CoreLike {
  binary: string;
  stateDir: string;
}

/* The `fsbroker run` children still running, each with how to end it. */
const liveRuns = new Map<ChildProcess, { end: () => void; closed: Promise<void> }>();
let exitHookInstalled = false;

/**
 * End every tool call still running (SIGTERM to its `fsbroker run`, which
 * ends the sandbox and every process in it, then SIGKILL after the grace),
 * for a host that stops with calls in flight: a stopped core does not end
 * the runs attached to it at once. Resolves once each has exited.
 */
export async function endAllRuns(): Promise<void> {
  const all = [...liveRuns.values()];
  for (const r of all) r.end();
  await Promise.all(all.map((r) => r.closed));
}

/* A host that exits without endAllRuns() still ends its commands: the
 * sandbox dies with its `fsbroker run` (bwrap --die-with-parent). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of liveRuns.keys()) child.kill("SIGKILL");
  });
}

export function runToolCall(core: CoreLike, toolCallId: string, argv: string[], opts: RunOptions = {}): ToolCall {
  if (argv.length === 0) throw new FsbrokerError("ERUNSTART", "run: the command is empty");
  /* fsbroker run starts every command in the workspace; a shell in the
   * sandbox moves it on (a failed cd exits 125 with sh's own message). */
  const cmd = opts.cwd !== undefined
    ? ["/bin/sh", "-c", 'cd -- "$1" || exit 125; shift; exec "$@"', "fsbroker-cwd", opts.cwd, ...argv]
    : argv;
  const args = ["run", "--core", core.stateDir, "--tool-call", toolCallId, "--summary-fd", "3", "--", ...cmd];
  const child = spawn(core.binary, args, {
    stdio: [opts.stdin !== undefined ? "pipe" : "ignore", "pipe", "pipe", "pipe"],
    env: opts.env ?? process.env,
  });
  const maxBuffer = opts.maxBuffer ?? 16 * 1024 * 1024;
  const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  const keptLen = { stdout: 0, stderr: 0 };
  const summaryChunks: Buffer[] = [];

  /* Output for async iterators: a queue each, fed as chunks arrive. */
  const iterators = new Set<{ queue: OutputChunk[]; wake: (() => void) | null }>();
  let ended = false;
  const push = (c: OutputChunk) => {
    for (const it of iterators) {
      it.queue.push(c);
      it.wake?.();
    }
  };

  const collect = (stream: "stdout" | "stderr", r: Readable, cb?: (b: Buffer) => void) => {
    r.on("data", (b: Buffer) => {
      if (keptLen[stream] < maxBuffer) {
        const part = b.subarray(0, maxBuffer - keptLen[stream]);
        kept[stream].push(part);
        keptLen[stream] += part.length;
      }
      cb?.(b);
      push({ stream, data: b });
    });
  };
  collect("stdout", child.stdout!, opts.onStdout);
  collect("stderr", child.stderr!, opts.onStderr);
  const fd3 = child.stdio[3] as Readable;
  fd3.on("data", (b: Buffer) => summaryChunks.push(b));
  fd3.on("error", () => {});
  if (opts.stdin !== undefined && child.stdin) {
    child.stdin.on("error", () => {});
    child.stdin.end(opts.stdin);
  }
  let timer: NodeJS.Timeout | undefined;
  let killer: NodeJS.Timeout | undefined;
  let timedOut = false;
  let aborted = false;
  const end = () => {
    if (killer) return;
    child.kill("SIGTERM");
    killer = setTimeout(() => child.kill("SIGKILL"), opts.killGraceMs ?? 5000);
  };
  if (opts.timeoutMs !== undefined) {
    timer = setTimeout(() => {
      timedOut = true;
      end();
    }, opts.timeoutMs);
  }
  const onAbort = () => {
    aborted = true;
    end();
  };
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener("abort", onAbort, { once: true });
  let closed!: () => void;
  liveRuns.set(child, { end, closed: new Promise<void>((res) => { closed = res; }) });
  installExitHook();

  const result = new Promise<RunResult>((resolve, reject) => {
    let spawnError: Error | null = null;
    child.on("error", (err) => { spawnError = err; });
    child.on("close", (code, sig) => {
      if (timer) clearTimeout(timer);
      if (killer) clearTimeout(killer);
      opts.signal?.removeEventListener("abort", onAbort);
      liveRuns.delete(child);
      closed();
      ended = true;
      for (const it of iterators) it.wake?.();
      const stderr = Buffer.concat(kept.stderr);
      if (spawnError) {
        reject(new FsbrokerError("ERUNSTART", `cannot start ${core.binary} run: ${spawnError.message}`));
        return;
      }
      const text = Buffer.concat(summaryChunks).toString("utf8").trim();
      let summary: RunSummary | null = null;
      try {
        summary = text ? (JSON.parse(text.split("\n").pop()!) as RunSummary) : null;
      } catch {
        summary = null;
      }
      if (summary?.error !== undefined || code === 125 && summary === null) {
        reject(new FsbrokerError("ERUNSTART",
          `fsbroker run could not start ${JSON.stringify(argv[0])}: ${summary?.error ?? lastLine(stderr) ?? "no reason given"}`));
        return;
      }
      /* fsbroker-init's own 126 and 127: the command was not found or could not be executed. */
      const initLine = stderr.toString("utf8").split("\n").find((l) => l.startsWith("fsbroker-init: "));
      if ((code === 126 || code === 127) && initLine) {
        reject(new FsbrokerError("ERUNSTART", `the command could not start: ${initLine.slice("fsbroker-init: ".length)}`));
        return;
      }
      if (summary === null) {
        reject(new FsbrokerError("ERUNSTART",
          `fsbroker run ended (${sig ? `signal ${sig}` : `status ${code}`}) without writing its summary: ${lastLine(stderr) ?? ""}`));
        return;
      }
      resolve({
        toolCallId,
        exitStatus: summary.exitStatus ?? (code ?? 128),
        signal: summary.signal ?? null,
        timedOut,
        aborted,
        summary,
        stdout: Buffer.concat(kept.stdout),
        stderr,
      });
    });
  });
  /* A caller that only iterates must not see an unhandled rejection. */
  result.catch(() => {});

  return {
    toolCallId,
    result,
    pid: child.pid,
    kill: (signal: NodeJS.Signals = "SIGTERM") => { child.kill(signal); },
    then: (onOk, onErr) => result.then(onOk, onErr),
    [Symbol.asyncIterator]: () => {
      const it = { queue: [] as OutputChunk[], wake: null as (() => void) | null };
      iterators.add(it);
      return {
        next: async (): Promise<IteratorResult<OutputChunk>> => {
          for (;;) {
            const c = it.queue.shift();
            if (c) return { value: c, done: false };
            if (ended) {
              iterators.delete(it);
              return { value: undefined, done: true };
            }
            await new Promise<void>((w) => { it.wake = w; });
            it.wake = null;
          }
        },
        return: async (): Promise<IteratorResult<OutputChunk>> => {
          iterators.delete(it);
          return { value: undefined, done: true };
        },
      };
    },
  };
}

function lastLine(b: Buffer): string | undefined {
  const lines = b.toString("utf8").split("\n").filter((l) => l.trim() !== "");
  return lines.length ? lines[lines.length - 1] : undefined;
}
