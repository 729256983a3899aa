/*
 * core.ts — one `fsbroker serve` child and its control channel (JSON lines
 * on its stdin/stdout, docs/protocol.md). Requests are matched to replies by
 * id, each bounded by a timeout; when the core exits every waiting request
 * is rejected with the reason. `prompt` events (inline approvals) go to the
 * host's callback or to 'prompt' listeners, and the answer back to the core.
 * Tool calls (run.ts) and the backup CLI (backup.ts) hang off the Core.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { EventEmitter } from "node:events";
import { accessSync, constants as fsc, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { createInterface } from "node:readline";

import { FsbrokerError } from "./errors.js";
import type {
  Command, CycleInfo, DiffEntry, PromptEvent, ReadyEvent, Replies, Requests, RestoreEntry,
} from "./protocol.js";
import { runToolCall, type RunOptions, type ToolCall } from "./run.js";
import { backupDiff, backupList, backupRestore, type DiffResult, type RestoreOptions } from "./backup.js";

/** What the host answers to a prompt. */
export type ApprovalAnswer = "once" | "session" | "deny" | boolean;

export interface CoreOptions {
  /** The fsbroker binary: default $FSBROKER, else `fsbroker` on PATH. */
  binary?: string;
  /** The core's state dir (backups, audit log, admin socket). */
  stateDir: string;
  /** The tree the commands work in; default the current directory. */
  workspace?: string;
  /** The rule pack: a name in lua/rules/ or a .lua path; default the core's default pack. */
  pack?: string;
  /** Session id; default "default". */
  session?: string;
  /** The client socket; default a fresh name under $TMPDIR/fsb-<uid>/. */
  socket?: string;
  /**
   * Inline approvals: a call the pack asks about waits for onPrompt (or the
   * 'prompt' listeners). Default: inline when onPrompt is given.
   */
  approvals?: "inline" | "deferred";
  /** How long a waiting call waits for the answer (core side), seconds; default 60. */
  approvalTimeoutSeconds?: number;
  onPrompt?: (prompt: PromptEvent) => ApprovalAnswer | Promise<ApprovalAnswer>;
  /** Default bound on each control request, ms; default 30000. */
  requestTimeoutMs?: number;
  /** Bound on the core's start (its ready event), ms; default 30000. */
  startTimeoutMs?: number;
  /** The core's environment; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Each line the core logs on stderr; default: kept (last 50) for error messages only. */
  onLog?: (line: string) => void;
}

export interface TurnOptions {
  /** Override the pack's backup size limit for this turn (1–4096 MB). */
  fileBackupMaxSizeMB?: number;
}

interface Pending {
  command: string;
  resolve: (reply: Record<string, unknown>) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

let socketSerial = 0;
const liveCores = new Set<Core>();
let exitHookInstalled = false;

/* The core also exits on EOF on its stdin (our end closes when this
 * process dies); this kills it first when the process exits normally. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const c of liveCores) c.kill();
  });
}

export function defaultBinary(): string {
  return process.env.FSBROKER || "fsbroker";
}

function executableFile(path: string): boolean {
  try {
    accessSync(path, fsc.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The native fsbroker binary the package runs: `binary` (an option), else
 * $FSBROKER, else `fsbroker` on PATH; an absolute path to an executable
 * file. ENOFSBROKER, naming what to install and how to point at it, when
 * there is none: spawn's own "ENOENT" says neither.
 */
export function resolveBinary(binary?: string): string {
  const named = binary ?? (process.env.FSBROKER || undefined);
  let where: string;
  if (named !== undefined) {
    const from = binary !== undefined ? "the binary option (--fsbroker)" : "FSBROKER";
    if (named.includes("/")) {
      if (executableFile(named)) return resolve(named);
      where = `${from} names ${named}, which is not an executable file`;
    } else {
      const hit = searchPath(named);
      if (hit) return hit;
      where = `${from} names '${named}', which is not on PATH`;
    }
  } else {
    const hit = searchPath("fsbroker");
    if (hit) return hit;
    where = `there is no fsbroker on PATH (${process.env.PATH ?? ""}) and FSBROKER is not set`;
  }
  throw new FsbrokerError("ENOFSBROKER",
    `the native fsbroker program was not found: ${where}. This package drives it and does not contain it. ` +
    "Install it (Debian 12, from a clone of the fsbroker repository: `make deps all && sudo make install`, " +
    "or `make deb` then `sudo apt install ./build/fsbroker_*.deb`), then put it on PATH, " +
    "or set FSBROKER=/path/to/fsbroker, or pass the path (fsbroker-mcp --fsbroker PATH; startCore({binary}))");
}

function searchPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const p = join(dir, name);
    if (executableFile(p)) return resolve(p);
  }
  return null;
}

export class Core extends EventEmitter {
  readonly binary: string;
  readonly stateDir: string;
  readonly workspace: string;
  readonly session: string;
  readonly socket: string;
  ready?: ReadyEvent;
  /** The exit of the core once it happened. */
  exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;

  private child: ChildProcessWithoutNullStreams;
  private pending = new Map<number, Pending>();
  private nextId = 1;
  private logTail: string[] = [];
  private requestTimeoutMs: number;
  private onPrompt?: CoreOptions["onPrompt"];
  private turnOpen: { since: number } | null = null;
  private closing: Promise<void> | null = null;
  private exitPromise: Promise<void>;
  private exitWhy: string | null = null;

  /** Use startCore(). */
  constructor(opts: CoreOptions) {
    super();
    this.binary = opts.binary ?? defaultBinary();
    this.stateDir = resolve(opts.stateDir);
    this.workspace = resolve(opts.workspace ?? process.cwd());
    this.session = opts.session ?? "default";
    const uid = typeof process.getuid === "function" ? process.getuid() : 0;
    this.socket = opts.socket ?? join(tmpdir(), `fsb-${uid}`, `node-${process.pid}-${++socketSerial}.sock`);
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30000;
    this.onPrompt = opts.onPrompt;
    const inline = (opts.approvals ?? (opts.onPrompt ? "inline" : "deferred")) === "inline";

    const args = ["serve", "--socket", this.socket, "--session", this.session,
      "--state-dir", this.stateDir, "--workspace", this.workspace];
    if (opts.pack) args.push("--rules", opts.pack);
    if (inline) {
      args.push("--approvals", "inline");
      if (opts.approvalTimeoutSeconds !== undefined)
        args.push("--approval-timeout", String(opts.approvalTimeoutSeconds));
    }
    this.child = spawn(this.binary, args, { stdio: ["pipe", "pipe", "pipe"], env: opts.env ?? process.env });
    liveCores.add(this);
    installExitHook();

    this.exitPromise = new Promise((res) => {
      let done = false;
      const finish = (code: number | null, signal: NodeJS.Signals | null, why?: string) => {
        if (done) return;
        done = true;
        liveCores.delete(this);
        this.exited = { code, signal };
        this.exitWhy = why ?? null;
        const msg = why ?? `the fsbroker core exited (${signal ? `signal ${signal}` : `status ${code}`})`;
        this.failAll(msg);
        this.emit("exit", code, signal);
        res();
      };
      this.child.on("error", (err: NodeJS.ErrnoException) =>
        finish(null, null, `cannot start the fsbroker core ${this.binary}: ${err.message}`));
      this.child.on("close", (code, signal) => finish(code, signal));
    });
    /* Writing to a core that is gone: EPIPE is reported by the request. */
    this.child.stdin.on("error", () => {});

    createInterface({ input: this.child.stderr }).on("line", (line) => {
      this.logTail.push(line);
      if (this.logTail.length > 50) this.logTail.shift();
      opts.onLog?.(line);
    });
    createInterface({ input: this.child.stdout }).on("line", (line) => this.onLine(line));
  }

  /** The core's last log lines, for error messages. */
  log(): string {
    return this.logTail.join("\n");
  }

  private failAll(why: string): void {
    const tail = this.logTail.slice(-5).join("\n");
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(new FsbrokerError("ECOREEXIT",
        `${why} before answering ${p.command}` + (tail ? `; its last log lines:\n${tail}` : "")));
    }
  }

  private onLine(line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line);
    } catch {
      this.logTail.push(`(unparsable control line) ${line}`);
      return;
    }
    if (typeof msg.event === "string") {
      if (msg.event === "ready") {
        this.ready = msg as unknown as ReadyEvent;
        this.emit("ready", this.ready);
      } else if (msg.event === "prompt") {
        this.handlePrompt(msg as unknown as PromptEvent);
      } else {
        this.emit("event", msg);
      }
      return;
    }
    const id = msg.id;
    if (typeof id !== "number") return;
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(msg);
  }

  private handlePrompt(ev: PromptEvent): void {
    const answer = async (): Promise<ApprovalAnswer> => {
      if (this.onPrompt) return this.onPrompt(ev);
      if (this.listenerCount("prompt") > 0) {
        /* A listener answers by calling ev-bound respond() */
        return new Promise<ApprovalAnswer>((res) => this.emit("prompt", ev, res));
      }
      return "deny"; // nobody to ask: refuse now rather than at the timeout
    };
    answer()
      .catch((): ApprovalAnswer => "deny")
      .then((a) => {
        const approve = a === true || a === "once" || a === "session";
        return approve
          ? this.request("Approve", { blockId: ev.blockId, scope: a === "session" ? "session" : "once" })
          : this.request("Deny", { blockId: ev.blockId });
      })
      .catch(() => { /* the core is gone, or the block timed out: the call was refused */ });
  }

  /**
   * Send one control request. Resolves with the reply when ok is true;
   * rejects with FsbrokerError: EREFUSED (ok:false, the core's sentence),
   * ETIMEDOUT, or ECOREEXIT.
   */
  request<C extends Command>(command: C, fields: Requests[C], opts: { timeoutMs?: number } = {}): Promise<Replies[C]> {
    return this.rawRequest(command, fields as Record<string, unknown>, opts).then((reply) => {
      if (reply.ok !== true)
        throw new FsbrokerError("EREFUSED", `${command}: ${String(reply.error ?? "refused by the core")}`, reply);
      return reply as unknown as Replies[C];
    });
  }

  /** Send one control request and resolve with the reply as it is, ok or not. */
  rawRequest(command: string, fields: Record<string, unknown>, opts: { timeoutMs?: number } = {}): Promise<Record<string, unknown>> {
    if (this.exited)
      return Promise.reject(new FsbrokerError("ECOREEXIT",
        `the fsbroker core is not running (${this.exited.signal ? `signal ${this.exited.signal}` : `status ${this.exited.code}`}): cannot send ${command}`));
    const id = this.nextId++;
    const timeoutMs = opts.timeoutMs ?? this.requestTimeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new FsbrokerError("ETIMEDOUT", `the fsbroker core did not answer ${command} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { command, resolve, reject, timer });
      this.child.stdin.write(JSON.stringify({ ...fields, id, command }) + "\n");
    });
  }

  /** Resolves once the core pushed its ready event; rejects if it exits first. */
  waitReady(timeoutMs = 30000): Promise<ReadyEvent> {
    if (this.ready) return Promise.resolve(this.ready);
    return new Promise((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        this.off("ready", onReady);
        this.off("exit", onExit);
      };
      const onReady = (ev: ReadyEvent) => { cleanup(); resolve(ev); };
      const onExit = () => {
        cleanup();
        const tail = this.logTail.slice(-5).join("\n");
        if (this.exitWhy) {
          reject(new FsbrokerError("ECORESTART", this.exitWhy));
          return;
        }
        reject(new FsbrokerError("ECORESTART",
          `the fsbroker core did not start (${this.exited?.signal ? `signal ${this.exited.signal}` : `status ${this.exited?.code}`})` +
          (tail ? `: ${tail}` : "")));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new FsbrokerError("ECORESTART", `the fsbroker core was not ready within ${timeoutMs} ms`));
      }, timeoutMs);
      this.on("ready", onReady);
      this.on("exit", onExit);
      if (this.exited) onExit();
    });
  }

  // --- turns -------------------------------------------------------------

  /** Whether a turn is open (begun and not committed). */
  get inTurn(): boolean {
    return this.turnOpen !== null;
  }

  /**
   * Begin an agent turn: its tool calls' changes go into one backup cycle,
   * sealed by commitTurn(). Throws ETURN when a turn is open already.
   */
  async beginTurn(opts: TurnOptions = {}): Promise<void> {
    if (this.turnOpen)
      throw new FsbrokerError("ETURN", "a turn is already open: commit it (commitTurn) before beginning another");
    this.turnOpen = { since: Date.now() };
    try {
      const f: Requests["EnableModifyBackup"] = { enabled: true };
      if (opts.fileBackupMaxSizeMB !== undefined) f.fileBackupMaxSizeMB = opts.fileBackupMaxSizeMB;
      await this.request("EnableModifyBackup", f);
    } catch (err) {
      this.turnOpen = null;
      throw err;
    }
  }

  /** End the turn: seal its cycle. Resolves with the cycle number (0: nothing was backed up). */
  async commitTurn(message: string): Promise<number> {
    if (!this.turnOpen) throw new FsbrokerError("ETURN", "no turn is open: beginTurn() first");
    const reply = await this.request("CommitModifyBackup", { commitMsg: message });
    this.turnOpen = null;
    return reply.cycle;
  }

  // --- tool calls and backups ---------------------------------------------

  /** Run one tool call sandboxed, attached to this core (run.ts). */
  run(toolCallId: string, argv: string[], opts: RunOptions = {}): ToolCall {
    return runToolCall(this, toolCallId, argv, opts);
  }

  /** The session's cycles (`fsbroker backup list --json`). */
  listCycles(): Promise<CycleInfo[]> {
    return backupList(this);
  }

  /** What a cycle changed: statuses (--json) and the diff text. */
  diff(cycle: number | "last", paths: string[] = []): Promise<DiffResult> {
    return backupDiff(this, cycle, paths);
  }

  /** Put what a cycle (or one tool call of it) changed back. */
  restore(cycle: number | "last", opts: RestoreOptions = {}): Promise<RestoreEntry[]> {
    return backupRestore(this, cycle, opts);
  }

  // --- stopping ------------------------------------------------------------

  /** Stop the core (Shutdown, then SIGTERM, then SIGKILL); resolves once it exited. */
  close(timeoutMs = 5000): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = (async () => {
      if (!this.exited) {
        await this.request("Shutdown", {}, { timeoutMs }).catch(() => {});
        this.child.stdin.end();
        const t = setTimeout(() => this.child.kill("SIGTERM"), timeoutMs);
        const k = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs * 2);
        await this.exitPromise;
        clearTimeout(t);
        clearTimeout(k);
      }
    })();
    return this.closing;
  }

  /** Kill the core at once (SIGKILL); what it had journaled is sealed as recovered at its next start. */
  kill(): void {
    if (!this.exited) this.child.kill("SIGKILL");
  }

  /** Resolves when the core exited, for whatever reason. */
  waitExit(): Promise<void> {
    return this.exitPromise;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }
}

/** Start `fsbroker serve` and resolve once it is ready; ENOFSBROKER when the binary is not installed. */
export async function startCore(opts: CoreOptions): Promise<Core> {
  const core = new Core({ ...opts, binary: resolveBinary(opts.binary) });
  try {
    await core.waitReady(opts.startTimeoutMs ?? 30000);
  } catch (err) {
    core.kill();
    await core.waitExit();
    throw err;
  }
  return core;
}

export type { DiffEntry };
