#!/usr/bin/env node
/*
 * mcp-bin.ts — `fsbroker-mcp`: serves the MCP tools (mcp.ts) on
 * stdin/stdout with an fsbroker core for one workspace, started once the
 * client said whether it can be asked (elicitation: inline approvals). The
 * core stops when the MCP client goes away; its open cycle is sealed then.
 */
import { parseArgs } from "node:util";

import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

import { resolveBinary, startCore, type Core } from "./core.js";
import { endAllRuns } from "./run.js";
import { createMcpServer, type McpOptions } from "./mcp.js";

const usage = `usage: fsbroker-mcp --workspace DIR [--state-dir DIR] [--rules PACK] [--session ID]
                    [--fsbroker PATH] [--max-write-bytes N] [--max-read-bytes N]
                    [--approval-timeout SECONDS]
Serves MCP over stdio; file tools go through an fsbroker core (docs/agent-hosts.md).
The native fsbroker is --fsbroker PATH, else $FSBROKER, else fsbroker on PATH.
An ask waits --approval-timeout seconds (default 120) for the user's answer
when the client can be asked (MCP elicitation); otherwise the approve tool answers it.`;

function count(v: Record<string, unknown>, name: string, what: string): number | undefined {
  const s = v[name];
  if (s === undefined) return undefined;
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`fsbroker-mcp: --${name} takes a number of ${what}, not '${String(s)}'\n`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<void> {
  let v;
  try {
    v = parseArgs({
      options: {
        workspace: { type: "string" },
        "state-dir": { type: "string" },
        rules: { type: "string" },
        session: { type: "string" },
        fsbroker: { type: "string" },
        "max-write-bytes": { type: "string" },
        "max-read-bytes": { type: "string" },
        "approval-timeout": { type: "string" },
        help: { type: "boolean" },
      },
    }).values;
  } catch (err) {
    process.stderr.write(`fsbroker-mcp: ${(err as Error).message}\n${usage}\n`);
    process.exit(2);
  }
  if (v.help) {
    process.stdout.write(usage + "\n");
    return;
  }
  const workspace = v.workspace ?? process.cwd();
  const home = process.env.HOME ?? "/";
  const stateDir = v["state-dir"] ?? `${process.env.XDG_STATE_HOME ?? `${home}/.local/state`}/fsbroker`;
  const maxWrite = count(v, "max-write-bytes", "bytes");
  const maxRead = count(v, "max-read-bytes", "bytes");
  const approvalTimeout = count(v, "approval-timeout", "seconds") ?? 120;
  /* Before the MCP handshake: a missing native binary is this process's
   * error, in words, not a server that dies at its first tool call. */
  const binary = resolveBinary(v.fsbroker);
  const opts: McpOptions = { approvalTimeoutMs: approvalTimeout * 1000 };
  if (maxWrite !== undefined) opts.maxWriteBytes = maxWrite;
  if (maxRead !== undefined) opts.maxReadBytes = maxRead;

  let core: Core | null = null;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    /* The commands still running first (a stopped core does not end
     * them), so that what they changed is journaled before it seals. */
    await endAllRuns();
    await core?.close();
    process.exit(0);
  };
  const server = createMcpServer(async (approvals) => {
    try {
      const c = await startCore({
        stateDir,
        workspace,
        binary,
        ...(v.rules ? { pack: v.rules } : {}),
        ...(v.session ? { session: v.session } : {}),
        ...(approvals ? { approvals: "inline" as const, approvalTimeoutSeconds: approvalTimeout, onPrompt: approvals.onPrompt } : {}),
        onLog: (line) => process.stderr.write(`fsbroker: ${line}\n`),
      });
      core = c;
      c.on("exit", () => {
        if (!stopping) {
          process.stderr.write("fsbroker-mcp: the fsbroker core exited; stopping\n");
          process.exit(1);
        }
      });
      if (stopping) await c.close();
      return c;
    } catch (err) {
      process.stderr.write(`fsbroker-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
  }, opts);
  const transport = new StdioServerTransport();
  transport.onclose = () => void stop();
  process.stdin.on("end", () => void stop());
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  await server.connect(transport);
}

main().catch((err) => {
  process.stderr.write(`fsbroker-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
