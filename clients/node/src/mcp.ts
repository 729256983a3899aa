/*
 * mcp.ts — an MCP server whose file tools go through an fsbroker core:
 * read_file and list_directory ask CheckAccess before reading; write_file
 * and edit_file ask ModifyBackup (judged by the same pack, backed up into
 * the same cycle) before writing; run_command is a tool call through
 * `fsbroker run --core`; list_backups, show_changes and restore use the
 * backup store. A refused call answers with the rule that refused it.
 *
 * An access the pack answers `ask` is put to the user: through MCP
 * elicitation when the client declared it (the core then runs with inline
 * approvals, so a command waits for the answer and goes on), otherwise
 * through the list_approvals / approve tools and a rerun. Any failure on
 * the way is a deny.
 */
import { constants, promises as fsp } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";

import { McpServer, type RegisteredTool } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

import type { ApprovalAnswer, Core } from "./core.js";
import { FsbrokerError } from "./errors.js";
import type { CheckAccessReply, ModifyBackupReply, Op, PromptEvent } from "./protocol.js";

export interface McpOptions {
  /** Largest content write_file/edit_file write, in bytes; default 10 MiB. */
  maxWriteBytes?: number;
  /** Largest file read_file returns, in bytes; default 4 MiB (a binary file travels base64, a third larger). */
  maxReadBytes?: number;
  /** How long an elicitation waits for the user, ms; default 120000. Unanswered is denied. */
  approvalTimeoutMs?: number;
  /** Prefix of the tool-call ids the server gives each call; default "mcp". */
  toolCallPrefix?: string;
}

type Content =
  | { type: "text"; text: string }
  | { type: "resource"; resource: { uri: string; mimeType: string; blob: string } };
type ToolResult = { content: Content[]; isError?: boolean };
/** What the SDK hands a tool's callback besides its arguments (the part used here). */
type RequestExtra = { signal: AbortSignal };

function ok(r: string | Content[]): ToolResult {
  return { content: typeof r === "string" ? [{ type: "text", text: r }] : r };
}

/** What the user is asked about: one prompt block. */
export interface ApprovalQuestion {
  blockId: string;
  op: string;
  path: string;
  rule: string;
  toolCallId?: string;
}

/** Asks the user about a block: "once", "session" or "deny". */
export type Asker = (q: ApprovalQuestion) => Promise<"once" | "session" | "deny">;

/** The contents of a file read_file read: text when its bytes are UTF-8, else the bytes. */
export type ReadResult =
  | { kind: "text"; text: string; size: number }
  | { kind: "binary"; data: Buffer; mimeType: string; size: number };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/* The types a host may want to show rather than treat as opaque bytes. */
const MAGIC: [number[], string][] = [
  [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "image/png"],
  [[0xff, 0xd8, 0xff], "image/jpeg"],
  [[0x47, 0x49, 0x46, 0x38], "image/gif"],
  [[0x25, 0x50, 0x44, 0x46, 0x2d], "application/pdf"],
  [[0x1f, 0x8b], "application/gzip"],
  [[0x50, 0x4b, 0x03, 0x04], "application/zip"],
  [[0x7f, 0x45, 0x4c, 0x46], "application/x-elf"],
];

function sniff(b: Buffer): string {
  for (const [m, type] of MAGIC)
    if (b.length >= m.length && m.every((x, i) => b[i] === x)) return type;
  return "application/octet-stream";
}

function failure(err: unknown): ToolResult {
  const text = err instanceof FsbrokerError ? `${err.code}: ${err.message}`
    : err instanceof Error ? err.message : String(err);
  return { content: [{ type: "text", text }], isError: true };
}

/*
 * The file `fh` is the object the core judged under `real`: the same device
 * and inode when it existed, else a new file at that very path (the
 * kernel's name for the descriptor). Otherwise a name was swapped between
 * the core's check and this open: ERACE, and `what` happened.
 */
async function sameObject(fh: FileHandle, judged: { exists?: boolean; dev?: string; ino?: string },
  real: string, what: string): Promise<void> {
  if (judged.exists === true) {
    const st = await fh.stat({ bigint: true });
    if (String(st.dev) === judged.dev && String(st.ino) === judged.ino) return;
  } else if (await fsp.readlink(`/proc/self/fd/${fh.fd}`) === real) {
    return;
  }
  throw new FsbrokerError("ERACE", `${real} changed between the core's check and the open: ${what}`);
}

export class FileTools {
  private serial = 0;
  readonly maxWriteBytes: number;
  readonly maxReadBytes: number;
  private realWorkspace: Promise<string>;
  /** Set when the client can be asked (elicitation); null: the approve tool answers. */
  asker: Asker | null = null;

  constructor(readonly core: Core, private opts: McpOptions = {}) {
    this.maxWriteBytes = opts.maxWriteBytes ?? 10 * 1024 * 1024;
    this.maxReadBytes = opts.maxReadBytes ?? 4 * 1024 * 1024;
    this.realWorkspace = fsp.realpath(core.workspace);
    /* Known before the first call, so a refusal of the promise is not unhandled. */
    this.realWorkspace.catch(() => {});
  }

  /**
   * An ask the server met itself (its own CheckAccess or ModifyBackup):
   * put to the user, then Approve or Deny for the block. Resolves once
   * approved (the caller then asks the core again); throws EDENIED with
   * what to do otherwise. Any error on the way is a deny.
   */
  private async settleAsk(blockId: string, op: string, path: string, rule: string, toolCallId: string): Promise<void> {
    const what = `${op} of ${path} needs approval (rule ${rule}, block ${blockId})`;
    if (this.asker === null)
      throw new FsbrokerError("EDENIED", `${what}; nothing was done. This client cannot be asked directly (no MCP ` +
        `elicitation): have the user decide, then call the approve tool with block_id "${blockId}" and decision ` +
        `"once", "session" or "deny" (list_approvals lists what waits), and call this tool again.`);
    let answer: "once" | "session" | "deny";
    try {
      answer = await this.asker({ blockId, op, path, rule, toolCallId });
    } catch {
      answer = "deny";
    }
    if (answer === "deny") {
      await this.core.request("Deny", { blockId }).catch(() => {});
      throw new FsbrokerError("EDENIED", `${what}: the user declined; nothing was done`);
    }
    try {
      await this.core.request("Approve", { blockId, scope: answer });
    } catch (err) {
      throw new FsbrokerError("EDENIED", `${what}: the approval could not be recorded (${(err as Error).message}); nothing was done`);
    }
  }

  /**
   * run_command's cwd: a directory inside the workspace (absolute, or
   * relative to the workspace); its real path. A scope for the caller, not
   * a boundary: whatever the command then touches, wherever it started, is
   * judged by the pack.
   */
  async checkCwd(cwd: string): Promise<string> {
    if (cwd === "" || cwd.includes("\0"))
      throw new FsbrokerError("ECWD", "cwd is empty or holds a NUL byte");
    const abs = resolve(this.core.workspace, cwd);
    let real: string;
    try {
      real = await fsp.realpath(abs);
    } catch (err) {
      throw new FsbrokerError("ECWD", `cwd ${abs} does not exist (${(err as NodeJS.ErrnoException).code}): nothing was run`);
    }
    const realWs = await this.realWorkspace;
    const rel = relative(realWs, real);
    if (rel.startsWith(".." + sep) || rel === ".." || isAbsolute(rel))
      throw new FsbrokerError("ECWD", `cwd ${abs} is outside the workspace ${this.core.workspace}: nothing was run`);
    if (!(await fsp.stat(real)).isDirectory())
      throw new FsbrokerError("ECWD", `cwd ${abs} is not a directory: nothing was run`);
    return real;
  }

  nextToolCall(): string {
    return `${this.opts.toolCallPrefix ?? "mcp"}-${process.pid}-${++this.serial}`;
  }

  /** An absolute path inside the workspace, with no `..` and no NUL; else EPATH. */
  async checkPath(path: string): Promise<string> {
    if (typeof path !== "string" || path === "") throw new FsbrokerError("EPATH", "the path is empty");
    if (path.includes("\0")) throw new FsbrokerError("EPATH", "the path holds a NUL byte");
    if (!isAbsolute(path))
      throw new FsbrokerError("EPATH", `'${path}' is relative: give an absolute path inside the workspace ${this.core.workspace}`);
    if (path.split("/").includes(".."))
      throw new FsbrokerError("EPATH", `'${path}' holds a '..' component: give the path without it`);
    const ws = this.core.workspace;
    const rel = relative(ws, path);
    const inside = rel === "" || (!rel.startsWith(".." + sep) && rel !== ".." && !isAbsolute(rel));
    const realWs = await this.realWorkspace;
    const relReal = relative(realWs, path);
    const insideReal = relReal === "" || (!relReal.startsWith(".." + sep) && relReal !== ".." && !isAbsolute(relReal));
    if (!inside && !insideReal)
      throw new FsbrokerError("EPATH", `'${path}' is outside the workspace ${ws}`);
    return path;
  }

  /** CheckAccess; an ask put to the user (and asked again once approved); EDENIED with the rule unless allowed. */
  async check(path: string, op: Op, toolCallId: string): Promise<CheckAccessReply> {
    let r = await this.core.request("CheckAccess", { path, op, toolCallId });
    if (r.decision === "ask" && r.blockId) {
      await this.settleAsk(r.blockId, op, path, r.rule, toolCallId);
      r = await this.core.request("CheckAccess", { path, op, toolCallId });
    }
    this.refuseUnlessAllowed(r, path, op);
    return r;
  }

  private refuseUnlessAllowed(r: CheckAccessReply, path: string, op: Op): void {
    if (r.decision !== "allow") {
      const why = r.decision === "ask"
        ? `${op} of ${path} needs approval (rule ${r.rule}, block ${r.blockId ?? "?"})`
        : `${op} of ${path} is denied by rule ${r.rule}${r.reason ? `: ${r.reason}` : ""}`;
      throw new FsbrokerError("EDENIED", why, r as unknown as Record<string, unknown>);
    }
  }

  /** The file's bytes, as text when they are UTF-8; ETOOLARGE over maxReadBytes. */
  async readFile(path: string): Promise<ReadResult> {
    await this.checkPath(path);
    const r = await this.check(path, "read", this.nextToolCall());
    /* The file judged is the one read: no symlink followed at the end,
     * and the object opened is the object judged. */
    const fh = await fsp.open(r.normalisedPath, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await sameObject(fh, r, r.normalisedPath, "nothing was read");
      const max = this.maxReadBytes;
      const tooLarge = (n: number | string) => new FsbrokerError("ETOOLARGE",
        `${path} is ${n} bytes, over the read limit of ${max} (fsbroker-mcp --max-read-bytes): nothing was read; ` +
        "read a part with run_command (head -c, tail -c, sed -n)");
      const size = (await fh.stat()).size;
      if (size > max) throw tooLarge(size);
      /* Read to the end, never past the limit: a file that grew since the stat still stops here. */
      const chunks: Buffer[] = [];
      let got = 0;
      for (;;) {
        const chunk = Buffer.allocUnsafe(Math.min(Math.max(size - got, 0) + 1, max + 1 - got, 1 << 20));
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, got);
        if (bytesRead === 0) break;
        chunks.push(chunk.subarray(0, bytesRead));
        got += bytesRead;
        if (got > max) throw tooLarge(`more than ${max}`);
      }
      const data = Buffer.concat(chunks, got);
      try {
        return { kind: "text", text: utf8.decode(data), size: got };
      } catch {
        return { kind: "binary", data, mimeType: sniff(data), size: got };
      }
    } finally {
      await fh.close();
    }
  }

  async listDirectory(path: string): Promise<string> {
    await this.checkPath(path);
    const real = (await this.check(path, "read", this.nextToolCall())).normalisedPath;
    const entries = await fsp.readdir(real, { withFileTypes: true });
    return entries
      .map((e) => `${e.isDirectory() ? "dir " : e.isSymbolicLink() ? "link" : "file"} ${e.name}`)
      .sort()
      .join("\n");
  }

  /** ModifyBackup (judged and backed up), then the write; nothing is written on any refusal. */
  async writeFile(path: string, content: string): Promise<{ backedUp: boolean; toolCallId: string }> {
    await this.checkPath(path);
    const size = Buffer.byteLength(content, "utf8");
    if (size > this.maxWriteBytes)
      throw new FsbrokerError("ETOOLARGE", `the content is ${size} bytes, over the limit of ${this.maxWriteBytes}: nothing was written`);
    const tc = this.nextToolCall();
    const modifyBackup = async () => await this.core.rawRequest("ModifyBackup", { path, toolCallId: tc }) as
      Partial<ModifyBackupReply> & Record<string, unknown>;
    let reply = await modifyBackup();
    if (reply.ok !== true && reply.decision === "ask" && typeof reply.blockId === "string") {
      await this.settleAsk(reply.blockId, "write", path, String(reply.rule ?? "?"), tc);
      reply = await modifyBackup();
    }
    if (reply.ok !== true) {
      const blk = reply.blockId ? `, block ${String(reply.blockId)}` : "";
      throw new FsbrokerError("EDENIED",
        `write of ${path} refused by rule ${String(reply.rule ?? "?")}${blk}: ${String(reply.error ?? "")}`, reply);
    }
    /* Written through the object the core judged and backed up: an
     * existing file is opened without truncating, checked, then cut; a
     * new one is created exclusively where the core journaled it. */
    const real = reply.normalisedPath ?? path;
    const fh = reply.exists === true
      ? await fsp.open(real, constants.O_WRONLY | constants.O_NOFOLLOW)
      : await fsp.open(real, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o666);
    try {
      await sameObject(fh, reply, real, "nothing was written");
      await fh.truncate(0);
      await fh.writeFile(content, "utf8");
    } finally {
      await fh.close();
    }
    return { backedUp: reply.backedUp === true, toolCallId: tc };
  }

  async editFile(path: string, oldString: string, newString: string): Promise<void> {
    const got = await this.readFile(path);
    if (got.kind !== "text")
      throw new FsbrokerError("EBINARY", `${path} is not UTF-8 text (${got.mimeType}): edit_file changes text only; nothing was changed`);
    const text = got.text;
    if (oldString === "") throw new FsbrokerError("EPATH", "old_string is empty");
    const first = text.indexOf(oldString);
    if (first < 0) throw new Error(`old_string was not found in ${path}: nothing was changed`);
    if (text.indexOf(oldString, first + 1) >= 0)
      throw new Error(`old_string occurs more than once in ${path}: give more context so it matches exactly once; nothing was changed`);
    await this.writeFile(path, text.slice(0, first) + newString + text.slice(first + oldString.length));
  }
}

/**
 * Starts the server's core once the client has said what it can do: with
 * `approvals` when it can be asked (elicitation), so that the core waits
 * for the answer (inline approvals) rather than failing the call.
 */
export type CoreFactory = (approvals: { onPrompt: (p: PromptEvent) => Promise<ApprovalAnswer> } | null) => Promise<Core>;

/** Whether the connected client declared form elicitation (so it can be asked). */
export function clientCanElicit(server: McpServer): boolean {
  return server.server.getClientCapabilities()?.elicitation?.form !== undefined;
}

/**
 * Ask the user about a block with `elicitation/create`: accept is an
 * approval (once, or for the session when picked), decline, cancel, a
 * timeout or any error a deny.
 */
export async function elicitApproval(server: McpServer, q: ApprovalQuestion, timeoutMs = 120000): Promise<"once" | "session" | "deny"> {
  try {
    const r = await server.server.elicitInput({
      mode: "form",
      message: `fsbroker: ${q.op} of ${q.path} needs your approval (rule ${q.rule}` +
        `${q.toolCallId ? `, tool call ${q.toolCallId}` : ""}). Accept to allow it, decline to refuse it.`,
      requestedSchema: {
        type: "object",
        properties: {
          scope: {
            type: "string",
            title: "Allow",
            description: "once: this access only; session: every such access until the fsbroker server stops",
            oneOf: [
              { const: "once", title: "Once" },
              { const: "session", title: "For this session" },
            ],
            default: "once",
          },
        },
      },
    }, { timeout: timeoutMs });
    if (r.action !== "accept") return "deny";
    return r.content?.scope === "session" ? "session" : "once";
  } catch {
    return "deny";
  }
}

/* What each tool does to the world, for the host to decide whether to ask
 * before calling it (MCP tool annotations; hints, not guarantees). Every
 * tool acts on the workspace alone except run_command, whose command may
 * reach the network (the pack's `network`). */
const READS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/**
 * The MCP server, its tools bound to `core`: a running core (asks then go
 * to the approve tool unless the core was started with its own onPrompt),
 * or a CoreFactory called once the client is initialized.
 */
export function createMcpServer(core: Core | CoreFactory, opts: McpOptions = {}): McpServer {
  const server = new McpServer({ name: "fsbroker", version: "0.9.0" });
  const askTimeout = opts.approvalTimeoutMs ?? 120000;
  const ask: Asker = (q) => elicitApproval(server, q, askTimeout);
  const pair: RegisteredTool[] = [];

  /* The approve pair is for clients that cannot be asked: hidden from one that can. */
  const onInitialized = (): FileTools | Promise<FileTools> => {
    const canAsk = clientCanElicit(server);
    if (canAsk) for (const t of pair) t.disable();
    const bind = (c: Core) => {
      const t = new FileTools(c, opts);
      t.asker = canAsk ? ask : null;
      return t;
    };
    if (typeof core !== "function") return bind(core);
    return core(canAsk ? {
      onPrompt: (p) => ask({ blockId: p.blockId, op: p.op, path: p.path, rule: p.rule, toolCallId: p.toolCallId }),
    } : null).then(bind);
  };
  const toolsReady = new Promise<FileTools>((res, rej) => {
    server.server.oninitialized = () => {
      try {
        res(onInitialized());
      } catch (err) {
        rej(err);
      }
    };
  });
  toolsReady.catch(() => {});

  const wrap = <A>(fn: (t: FileTools, a: A, extra: RequestExtra) => Promise<string | Content[]>) =>
    async (a: A, extra: RequestExtra): Promise<ToolResult> => {
      try {
        return ok(await fn(await toolsReady, a, extra));
      } catch (err) {
        return failure(err);
      }
    };

  server.registerTool("read_file", {
    title: "Read a file",
    description: "Read a file (absolute path inside the workspace); the rule pack decides. UTF-8 text comes back as " +
      "text; other bytes as a resource with a base64 blob and its mime type. Over the read limit: an error, nothing read.",
    inputSchema: { path: z.string() },
    annotations: READS,
  }, wrap(async (tools, { path }: { path: string }) => {
    const r = await tools.readFile(path);
    if (r.kind === "text") return r.text;
    return [
      { type: "text", text: `${path}: ${r.size} bytes, not UTF-8 text (${r.mimeType}); the bytes are the resource below, base64-encoded` },
      { type: "resource", resource: { uri: pathToFileURL(path).href, mimeType: r.mimeType, blob: r.data.toString("base64") } },
    ];
  }));

  server.registerTool("write_file", {
    title: "Write a file",
    description: "Write a file (absolute path inside the workspace); the old content is backed up first.",
    inputSchema: { path: z.string(), content: z.string() },
    /* It replaces content (backed up, but replaced); the same call twice leaves the same file. */
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }, wrap(async (tools, { path, content }: { path: string; content: string }) => {
    const r = await tools.writeFile(path, content);
    return `wrote ${Buffer.byteLength(content)} bytes to ${path}${r.backedUp ? " (old content backed up)" : ""}`;
  }));

  server.registerTool("edit_file", {
    title: "Edit a file",
    description: "Replace old_string by new_string in a UTF-8 file; old_string must occur exactly once. Backed up first.",
    inputSchema: { path: z.string(), old_string: z.string(), new_string: z.string() },
    /* A second identical call finds new_string, not old_string: it fails or edits again. */
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  }, wrap(async (tools, { path, old_string, new_string }: { path: string; old_string: string; new_string: string }) => {
    await tools.editFile(path, old_string, new_string);
    return `edited ${path}`;
  }));

  server.registerTool("list_directory", {
    title: "List a directory",
    description: "List a directory (absolute path inside the workspace).",
    inputSchema: { path: z.string() },
    annotations: READS,
  }, wrap((tools, { path }: { path: string }) => tools.listDirectory(path)));

  server.registerTool("run_command", {
    title: "Run a command sandboxed",
    description: "Run a command (argv) sandboxed by fsbroker; every file change is judged and backed up. " +
      "cwd: a directory inside the workspace (absolute, or relative to it; default the workspace). " +
      "timeoutMs: the command and every process it started are killed after this many ms; what it changed stays backed up.",
    inputSchema: {
      argv: z.array(z.string()).min(1),
      stdin: z.string().optional(),
      cwd: z.string().optional(),
      timeoutMs: z.number().int().positive().max(24 * 3600 * 1000).optional(),
    },
    /* Any command: it may change or delete files (backed up) and reach the network. */
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  }, wrap(async (tools, { argv, stdin, cwd, timeoutMs }: { argv: string[]; stdin?: string; cwd?: string; timeoutMs?: number },
    extra) => {
    const dir = cwd !== undefined ? await tools.checkCwd(cwd) : undefined;
    const tc = tools.nextToolCall();
    /* A request the client cancels ends its command: nobody reads the answer. */
    const r = await tools.core.run(tc, argv, {
      signal: extra.signal,
      ...(stdin !== undefined ? { stdin } : {}),
      ...(dir !== undefined ? { cwd: dir } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
    const s = r.summary;
    const lines = r.timedOut
      ? [`timed out after ${timeoutMs} ms: the command and every process it started were killed (exit status ${r.exitStatus})`]
      : [`exit status ${r.exitStatus}`];
    if (r.stdout.length) lines.push(`stdout:\n${r.stdout.toString("utf8")}`);
    if (r.stderr.length) lines.push(`stderr:\n${r.stderr.toString("utf8")}`);
    for (const d of s.denied ?? []) lines.push(`refused: ${d.op} of ${d.path ?? d.pathBytes} (${d.rule})`);
    for (const w of s.waiting ?? [])
      lines.push(`waiting for approval: ${w.op} of ${w.path ?? w.pathBytes} (${w.rule}), block ${w.blockId}: ` +
        `the command got EACCES. Have the user decide, call approve with block_id "${w.blockId}" and decision ` +
        `"once", "session" or "deny", then run the command again`);
    if (s.changed?.length) lines.push(`changed: ${s.changed.join(", ")} (cycle ${s.cycle}, tool call ${tc})`);
    return lines.join("\n");
  }));

  pair.push(server.registerTool("list_approvals", {
    title: "List waiting approvals",
    description: "List the accesses waiting for the user's approval (the pack answered ask): block id, operation, path, " +
      "rule. For clients without MCP elicitation; answer each with approve.",
    inputSchema: {},
    annotations: READS,
  }, wrap(async (tools) => {
    const r = await tools.core.request("PromptBlocks", {});
    return r.blocks.map((b) => `${b.blockId} ${b.op} ${b.path} (rule ${b.rule}, tool call ${b.toolCallId})`).join("\n")
      || "no access is waiting for approval";
  })));

  pair.push(server.registerTool("approve", {
    title: "Answer an approval",
    description: "Answer a waiting approval with the user's decision: once (this access, on the rerun), session " +
      "(every such access until the server stops) or deny. Only with the user's say-so: the pack asked for a person.",
    inputSchema: { block_id: z.string().min(1), decision: z.enum(["once", "session", "deny"]) },
    /* It grants (or refuses) an access the pack would not allow by itself; it changes no file. */
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  }, wrap(async (tools, { block_id, decision }: { block_id: string; decision: "once" | "session" | "deny" }) => {
    if (decision === "deny") {
      await tools.core.request("Deny", { blockId: block_id });
      return `denied ${block_id}: the access stays refused`;
    }
    await tools.core.request("Approve", { blockId: block_id, scope: decision });
    return `approved ${block_id} (${decision}): run the command or call the tool again and the access goes through`;
  })));

  server.registerTool("list_backups", {
    title: "List backup cycles",
    description: "List the backup cycles of this session.",
    inputSchema: {},
    annotations: READS,
  }, wrap(async (tools) => JSON.stringify(await tools.core.listCycles(), null, 1)));

  server.registerTool("show_changes", {
    title: "Show what changed",
    description: "Show what a cycle changed (a unified diff against now). cycle: a number, or omit for the current/last.",
    inputSchema: { cycle: z.number().int().positive().optional(), paths: z.array(z.string()).optional() },
    annotations: READS,
  }, wrap(async (tools, { cycle, paths }: { cycle?: number; paths?: string[] }) => {
    for (const p of paths ?? []) await tools.checkPath(p);
    const d = await tools.core.diff(cycle ?? "last", paths ?? []);
    const statuses = d.entries.map((e) => `${e.status} ${e.path}${e.detail ? ` (${e.detail})` : ""}`).join("\n");
    return `${statuses}\n\n${d.text}`;
  }));

  server.registerTool("restore", {
    title: "Restore from a backup",
    description: "Put back what a cycle (or one tool call of it) changed. The open cycle is sealed first.",
    inputSchema: {
      cycle: z.number().int().positive().optional(),
      paths: z.array(z.string()).optional(),
      tool_call: z.string().optional(),
      dry_run: z.boolean().optional(),
    },
    /* It overwrites and removes the files changed since (and seals the cycle, so "last" moves). */
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  }, wrap(async (tools, { cycle, paths, tool_call, dry_run }: { cycle?: number; paths?: string[]; tool_call?: string; dry_run?: boolean }) => {
    const core = tools.core;
    for (const p of paths ?? []) await tools.checkPath(p);
    /* Restore reads sealed cycles: seal what this server's calls changed. */
    await core.request("CommitModifyBackup", { commitMsg: "sealed before a restore (fsbroker-mcp)" });
    const ro: { paths?: string[]; toolCallId?: string; dryRun?: boolean } = {};
    if (paths) ro.paths = paths;
    if (tool_call) ro.toolCallId = tool_call;
    if (dry_run) ro.dryRun = true;
    const res = await core.restore(cycle ?? "last", ro);
    return res.map((e) => `${e.result} ${e.path}${e.detail ? `: ${e.detail}` : ""}`).join("\n") || "nothing to restore";
  }));

  return server;
}
