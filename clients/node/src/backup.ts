/*
 * backup.ts — the backup store through `fsbroker backup list | diff |
 * restore … --json` (docs/restore.md): the control protocol has no such
 * commands, and the CLI reads the same store the core writes.
 */
import { execFile } from "node:child_process";

import { FsbrokerError } from "./errors.js";
import type { CycleInfo, DiffEntry, RestoreEntry } from "./protocol.js";

interface CoreLike {
  binary: string;
  stateDir: string;
  session: string;
}

export interface DiffResult {
  entries: DiffEntry[];
  /** The unified diff text, as `fsbroker backup diff` prints it. */
  text: string;
}

export interface RestoreOptions {
  /** Restore only these paths (absolute). */
  paths?: string[];
  /** Restore only what this tool call changed. */
  toolCallId?: string;
  dryRun?: boolean;
  /** Restore paths changed after the cycle ended, and open or recovered cycles. */
  force?: boolean;
}

interface CliOut {
  code: number;
  stdout: string;
  stderr: string;
}

function backup(core: CoreLike, args: string[]): Promise<CliOut> {
  return new Promise((resolve, reject) => {
    execFile(core.binary, ["backup", ...args, "--state-dir", core.stateDir, "--session", core.session],
      { maxBuffer: 64 * 1024 * 1024, encoding: "utf8" },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : -1) : 0;
        if (code === -1)
          reject(new FsbrokerError("ECLI", `cannot run ${core.binary} backup ${args[0]}: ${err?.message}`));
        else resolve({ code, stdout, stderr });
      });
  });
}

function cliError(what: string, out: CliOut): FsbrokerError {
  const why = out.stderr.trim().split("\n").pop() || `exit status ${out.code}`;
  return new FsbrokerError("ECLI", `fsbroker backup ${what} failed: ${why}`);
}

function parseJson<T>(what: string, out: CliOut): T {
  try {
    return JSON.parse(out.stdout) as T;
  } catch {
    throw cliError(what, out);
  }
}

function cycleArg(cycle: number | "last"): string {
  return cycle === "last" ? "--last" : String(cycle);
}

export async function backupList(core: CoreLike): Promise<CycleInfo[]> {
  const out = await backup(core, ["list", "--json"]);
  /* A session that has backed nothing up yet has no store: no cycles. */
  if (out.code === 2 && /no session/.test(out.stderr)) return [];
  if (out.code !== 0) throw cliError("list", out);
  return parseJson<CycleInfo[]>("list", out);
}

export async function backupDiff(core: CoreLike, cycle: number | "last", paths: string[]): Promise<DiffResult> {
  const json = await backup(core, ["diff", cycleArg(cycle), ...paths, "--json"]);
  if (json.code === 2 && json.stdout.trim() === "") throw cliError("diff", json);
  const entries = parseJson<DiffEntry[]>("diff", json);
  const text = await backup(core, ["diff", cycleArg(cycle), ...paths]);
  return { entries, text: text.stdout };
}

export async function backupRestore(core: CoreLike, cycle: number | "last", opts: RestoreOptions): Promise<RestoreEntry[]> {
  const args = ["restore", cycleArg(cycle), ...(opts.paths ?? [])];
  if (opts.toolCallId) args.push("--tool-call", opts.toolCallId);
  if (opts.dryRun) args.push("--dry-run");
  if (opts.force) args.push("--force");
  args.push("--json");
  const out = await backup(core, args);
  /* 1: something was skipped or failed, which the entries say. */
  if (out.code === 2 || out.stdout.trim() === "") throw cliError("restore", out);
  return parseJson<RestoreEntry[]>("restore", out);
}
