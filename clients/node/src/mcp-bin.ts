#!/usr/bin/env node
/*
 * mcp-bin.ts — `fsbroker-mcp`: starts an fsbroker core for one workspace
 * and serves the MCP tools (mcp.ts) on stdin/stdout. The core stops when
 * the MCP client goes away; its open cycle is sealed then.
 */
import { parseArgs } from "node:util";

import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

import { startCore } from "./core.js";
import { createMcpServer } from "./mcp.js";

const usage = `usage: fsbroker-mcp --workspace DIR [--state-dir DIR] [--rules PACK] [--session ID]
                    [--fsbroker PATH] [--max-write-bytes N]
Serves MCP over stdio; file tools go through an fsbroker core (docs/agent-hosts.md).`;

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
  const maxWrite = v["max-write-bytes"] !== undefined ? Number(v["max-write-bytes"]) : undefined;
  if (maxWrite !== undefined && (!Number.isInteger(maxWrite) || maxWrite < 0)) {
    process.stderr.write(`fsbroker-mcp: --max-write-bytes takes a number of bytes, not '${v["max-write-bytes"]}'\n`);
    process.exit(2);
  }
  const core = await startCore({
    stateDir,
    workspace,
    ...(v.fsbroker ? { binary: v.fsbroker } : {}),
    ...(v.rules ? { pack: v.rules } : {}),
    ...(v.session ? { session: v.session } : {}),
    onLog: (line) => process.stderr.write(`fsbroker: ${line}\n`),
  });
  const server = createMcpServer(core, maxWrite !== undefined ? { maxWriteBytes: maxWrite } : {});
  const transport = new StdioServerTransport();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await core.close();
    process.exit(0);
  };
  transport.onclose = () => void stop();
  process.stdin.on("end", () => void stop());
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  core.on("exit", () => {
    if (!stopping) {
      process.stderr.write("fsbroker-mcp: the fsbroker core exited; stopping\n");
      process.exit(1);
    }
  });
  await server.connect(transport);
}

main().catch((err) => {
  process.stderr.write(`fsbroker-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
