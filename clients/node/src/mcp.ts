/*
 * mcp.ts — an MCP server whose file tools go through an fsbroker core:
 * read_file and list_directory ask CheckAccess before reading; write_file
 * and edit_file ask ModifyBackup (judged by the same pack, backed up into
 * the same cycle) before writing; run_command is a tool call through
 * `fsbroker run --core`; list_backups, show_changes and restore use the
 * backup store. A refused call answers with the rule that refused it.
 */
import { constants, promises as fsp } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { isAbsolute, relative, sep } from "node:path";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

import type { Core } from "./core.js";
import { FsbrokerError } from "./errors.js";
import type { CheckAccessReply, ModifyBackupReply, Op } from "./protocol.js";

export interface McpOptions {
  /** Largest content write_file/edit_file write, in bytes; default 10 MiB. */
  maxWriteBytes?: number;
  /** Prefix of the tool-call ids the server gives each call; default "mcp". */
  toolCallPrefix?: string;
}

type ToolResult = { content: { type: "text"; text: string }[]; isError?: boolean };

function ok(text: string): ToolResult {
  return { content: [{ type: "text", text }] };
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
  private realWorkspace: Promise<string>;

  constructor(readonly core: Core, private opts: McpOptions = {}) {
    this.maxWriteBytes = opts.maxWriteBytes ?? 10 * 1024 * 1024;
    this.realWorkspace = fsp.realpath(core.workspace);
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

  /** CheckAccess; EDENIED with the rule unless the pack allows. */
  async check(path: string, op: Op, toolCallId: string): Promise<CheckAccessReply> {
    const r = await this.core.request("CheckAccess", { path, op, toolCallId });
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

  async readFile(path: string): Promise<string> {
    await this.checkPath(path);
    const tc = this.nextToolCall();
    const r = await this.core.request("CheckAccess", { path, op: "read", toolCallId: tc });
    this.refuseUnlessAllowed(r, path, "read");
    /* The file judged is the one read: no symlink followed at the end,
     * and the object opened is the object judged. */
    const fh = await fsp.open(r.normalisedPath, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await sameObject(fh, r, r.normalisedPath, "nothing was read");
      return await fh.readFile("utf8");
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
    const reply = await this.core.rawRequest("ModifyBackup", { path, toolCallId: tc }) as
      Partial<ModifyBackupReply> & Record<string, unknown>;
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
    const text = await this.readFile(path);
    if (oldString === "") throw new FsbrokerError("EPATH", "old_string is empty");
    const first = text.indexOf(oldString);
    if (first < 0) throw new Error(`old_string was not found in ${path}: nothing was changed`);
    if (text.indexOf(oldString, first + 1) >= 0)
      throw new Error(`old_string occurs more than once in ${path}: give more context so it matches exactly once; nothing was changed`);
    await this.writeFile(path, text.slice(0, first) + newString + text.slice(first + oldString.length));
  }
}

/** The MCP server, its tools bound to `core`. */
export function createMcpServer(core: Core, opts: McpOptions = {}): McpServer {
  const tools = new FileTools(core, opts);
  const server = new McpServer({ name: "fsbroker", version: "0.9.0" });
  const wrap = <A>(fn: (a: A) => Promise<string>) => async (a: A): Promise<ToolResult> => {
    try {
      return ok(await fn(a));
    } catch (err) {
      return failure(err);
    }
  };

  server.registerTool("read_file", {
    description: "Read a UTF-8 file (absolute path inside the workspace); the rule pack decides.",
    inputSchema: { path: z.string() },
  }, wrap(({ path }: { path: string }) => tools.readFile(path)));

  server.registerTool("write_file", {
    description: "Write a file (absolute path inside the workspace); the old content is backed up first.",
    inputSchema: { path: z.string(), content: z.string() },
  }, wrap(async ({ path, content }: { path: string; content: string }) => {
    const r = await tools.writeFile(path, content);
    return `wrote ${Buffer.byteLength(content)} bytes to ${path}${r.backedUp ? " (old content backed up)" : ""}`;
  }));

  server.registerTool("edit_file", {
    description: "Replace old_string by new_string in a file; old_string must occur exactly once.",
    inputSchema: { path: z.string(), old_string: z.string(), new_string: z.string() },
  }, wrap(async ({ path, old_string, new_string }: { path: string; old_string: string; new_string: string }) => {
    await tools.editFile(path, old_string, new_string);
    return `edited ${path}`;
  }));

  server.registerTool("list_directory", {
    description: "List a directory (absolute path inside the workspace).",
    inputSchema: { path: z.string() },
  }, wrap(({ path }: { path: string }) => tools.listDirectory(path)));

  server.registerTool("run_command", {
    description: "Run a command (argv) sandboxed by fsbroker in the workspace; every file change is judged and backed up.",
    inputSchema: { argv: z.array(z.string()).min(1), stdin: z.string().optional() },
  }, wrap(async ({ argv, stdin }: { argv: string[]; stdin?: string }) => {
    const r = await core.run(tools.nextToolCall(), argv, stdin !== undefined ? { stdin } : {});
    const s = r.summary;
    const lines = [`exit status ${r.exitStatus}`];
    if (r.stdout.length) lines.push(`stdout:\n${r.stdout.toString("utf8")}`);
    if (r.stderr.length) lines.push(`stderr:\n${r.stderr.toString("utf8")}`);
    for (const d of s.denied ?? []) lines.push(`refused: ${d.op} of ${d.path ?? d.pathBytes} (${d.rule})`);
    for (const w of s.waiting ?? []) lines.push(`waiting for approval: ${w.op} of ${w.path ?? w.pathBytes} (${w.rule}), block ${w.blockId}`);
    if (s.changed?.length) lines.push(`changed: ${s.changed.join(", ")} (cycle ${s.cycle})`);
    return lines.join("\n");
  }));

  server.registerTool("list_backups", {
    description: "List the backup cycles of this session.",
    inputSchema: {},
  }, wrap(async () => JSON.stringify(await core.listCycles(), null, 1)));

  server.registerTool("show_changes", {
    description: "Show what a cycle changed (a unified diff against now). cycle: a number, or omit for the current/last.",
    inputSchema: { cycle: z.number().int().positive().optional(), paths: z.array(z.string()).optional() },
  }, wrap(async ({ cycle, paths }: { cycle?: number; paths?: string[] }) => {
    for (const p of paths ?? []) await tools.checkPath(p);
    const d = await core.diff(cycle ?? "last", paths ?? []);
    const statuses = d.entries.map((e) => `${e.status} ${e.path}${e.detail ? ` (${e.detail})` : ""}`).join("\n");
    return `${statuses}\n\n${d.text}`;
  }));

  server.registerTool("restore", {
    description: "Put back what a cycle (or one tool call of it) changed. The open cycle is sealed first.",
    inputSchema: {
      cycle: z.number().int().positive().optional(),
      paths: z.array(z.string()).optional(),
      tool_call: z.string().optional(),
      dry_run: z.boolean().optional(),
    },
  }, wrap(async ({ cycle, paths, tool_call, dry_run }: { cycle?: number; paths?: string[]; tool_call?: string; dry_run?: boolean }) => {
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
