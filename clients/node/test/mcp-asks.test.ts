/*
 * mcp-asks.test.ts — an access the pack answers `ask`, met by fsbroker-mcp
 * through the MCP SDK's own Client: a client that declared elicitation is
 * asked (accept lets the waiting command or the write go on, backed up;
 * decline refuses it and the file stays as it was); a client without it
 * gets the list_approvals / approve pair, and approving lets the rerun
 * through. The pack asks about ${workspace}/ask/** and allows the rest.
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";

import { layout, mcpArgs, type Layout } from "./helpers.js";

let lay: Layout | undefined;
let client: Client | undefined;

afterEach(async () => {
  await client?.close();
  client = undefined;
  lay?.cleanup();
  lay = undefined;
});

/* A fresh workspace with ask/a.txt ("old"), and a client: one that answers
 * elicitations with `answer` (recording each request), or none. */
async function start(answer?: (req: ElicitRequest) => ElicitResult): Promise<{ l: Layout; c: Client; asked: ElicitRequest[] }> {
  const l = layout();
  lay = l;
  mkdirSync(join(l.ws, "ask"));
  writeFileSync(join(l.ws, "ask", "a.txt"), "old\n");
  const pack = join(l.dir, "asky.lua");
  writeFileSync(pack, 'return { name = "asky", include = { "default" },\n' +
    '  fsProfile = { modify = { "!${workspace}/ask/**" } },\n  ask = { modify = { "${workspace}/ask/**" } } }\n');
  const asked: ElicitRequest[] = [];
  const c = new Client({ name: "fsbroker-test", version: "0.0.0" },
    answer ? { capabilities: { elicitation: { form: {} } } } : {});
  if (answer) c.setRequestHandler(ElicitRequestSchema, async (req) => { asked.push(req); return answer(req); });
  await c.connect(new StdioClientTransport({
    command: process.execPath, args: mcpArgs(l, ["--rules", pack]),
    env: l.env as Record<string, string>, stderr: "ignore",
  }));
  client = c;
  return { l, c, asked };
}

async function call(c: Client, name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
  const r = await c.callTool({ name, arguments: args }) as { content: { type: string; text: string }[]; isError?: boolean };
  return { text: r.content.map((x) => x.text).join(""), isError: r.isError === true };
}

const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name);

test("elicitation accepted: the waiting command goes on, its write backed up and restorable", async () => {
  const { l, c, asked } = await start(() => ({ action: "accept", content: { scope: "once" } }));
  const a = join(l.ws, "ask", "a.txt");
  assert.ok(!(await names(c)).includes("approve"), "the approve pair is hidden from a client that can be asked");
  const r = await call(c, "run_command", { argv: ["sh", "-c", "echo new > ask/a.txt && echo went-on"] });
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /went-on/);
  assert.equal(readFileSync(a, "utf8"), "new\n");
  assert.equal(asked.length, 1);
  const msg = (asked[0].params as { message: string }).message;
  assert.match(msg, new RegExp(`write of ${a.replace(/[.]/g, "\\.")}`));
  assert.match(msg, /ask\.modify \$\{workspace\}\/ask\/\*\*/);
  /* Backed up: the restore of the run's cycle brings "old" back. */
  assert.match((await call(c, "restore", {})).text, /restored .*ask\/a\.txt/);
  assert.equal(readFileSync(a, "utf8"), "old\n");
});

test("elicitation accepted for write_file: written, the old content backed up", async () => {
  const { l, c, asked } = await start(() => ({ action: "accept", content: { scope: "session" } }));
  const a = join(l.ws, "ask", "a.txt");
  const r = await call(c, "write_file", { path: a, content: "written\n" });
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /old content backed up/);
  assert.equal(readFileSync(a, "utf8"), "written\n");
  assert.equal(asked.length, 1);
  /* "session": the next write of the same file is not asked again. */
  assert.equal((await call(c, "write_file", { path: a, content: "again\n" })).isError, false);
  assert.equal(asked.length, 1);
  await call(c, "restore", {});
  assert.equal(readFileSync(a, "utf8"), "old\n");
});

test("elicitation declined: the command's write and write_file are refused, the file untouched", async () => {
  const { l, c, asked } = await start(() => ({ action: "decline" }));
  const a = join(l.ws, "ask", "a.txt");
  let r = await call(c, "run_command", { argv: ["sh", "-c", "echo new > ask/a.txt; echo status $?"] });
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /status [1-9]/);
  assert.equal(readFileSync(a, "utf8"), "old\n");
  r = await call(c, "write_file", { path: a, content: "written\n" });
  assert.equal(r.isError, true);
  assert.match(r.text, /EDENIED: write of .*ask\/a\.txt needs approval .*: the user declined; nothing was done/);
  assert.equal(readFileSync(a, "utf8"), "old\n");
  assert.equal(asked.length, 2);
});

test("a client without elicitation: the tool pair lists and approves, and the rerun goes through", async () => {
  const { l, c } = await start();
  const a = join(l.ws, "ask", "a.txt");
  const tools = await names(c);
  assert.ok(tools.includes("list_approvals") && tools.includes("approve"), tools.join(", "));

  let r = await call(c, "run_command", { argv: ["sh", "-c", "echo new > ask/a.txt"] });
  assert.match(r.text, /waiting for approval: write of .*ask\/a\.txt .*block (blk-\S+): .*call approve with block_id/);
  const block = /block (blk-[^:\s]+)/.exec(r.text)![1];
  assert.equal(readFileSync(a, "utf8"), "old\n");
  assert.match((await call(c, "list_approvals", {})).text, new RegExp(`${block} write .*ask/a\\.txt`));
  r = await call(c, "approve", { block_id: block, decision: "once" });
  assert.equal(r.isError, false, r.text);
  r = await call(c, "run_command", { argv: ["sh", "-c", "echo new > ask/a.txt"] });
  assert.doesNotMatch(r.text, /waiting for approval/);
  assert.equal(readFileSync(a, "utf8"), "new\n");

  /* write_file: refused naming the block and the tool; approved; called again. */
  r = await call(c, "write_file", { path: a, content: "written\n" });
  assert.equal(r.isError, true);
  assert.match(r.text, /call the approve tool with block_id "(blk-[^"]+)"/);
  const wb = /block_id "(blk-[^"]+)"/.exec(r.text)![1];
  assert.equal(readFileSync(a, "utf8"), "new\n");
  assert.equal((await call(c, "approve", { block_id: wb, decision: "deny" })).isError, false);
  assert.equal((await call(c, "write_file", { path: a, content: "written\n" })).isError, true);
  assert.equal(readFileSync(a, "utf8"), "new\n");
  r = await call(c, "write_file", { path: a, content: "written\n" });
  const wb2 = /block_id "(blk-[^"]+)"/.exec(r.text)![1];
  assert.equal((await call(c, "approve", { block_id: wb2, decision: "once" })).isError, false);
  r = await call(c, "write_file", { path: a, content: "written\n" });
  assert.equal(r.isError, false, r.text);
  assert.equal(readFileSync(a, "utf8"), "written\n");
});
