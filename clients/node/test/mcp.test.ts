/*
 * mcp.test.ts — fsbroker-mcp driven by the MCP SDK's own Client over stdio,
 * against the real core: file tools judged by the pack (a refusal names its
 * rule), writes backed up into the cycle and restorable, hostile paths and
 * oversized writes refused with nothing changed, run_command sandboxed.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { binary, layout, pkgDir, type Layout } from "./helpers.js";

let lay: Layout;
let client: Client;

before(async () => {
  lay = layout();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(pkgDir, "dist", "src", "mcp-bin.js"), "--workspace", lay.ws, "--state-dir", lay.state,
      "--fsbroker", binary, "--max-write-bytes", "1000"],
    env: lay.env as Record<string, string>,
    stderr: "ignore",
  });
  client = new Client({ name: "fsbroker-test", version: "0.0.0" });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  lay?.cleanup();
});

async function call(name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
  const r = await client.callTool({ name, arguments: args }) as { content: { type: string; text: string }[]; isError?: boolean };
  return { text: r.content.map((c) => c.text).join(""), isError: r.isError === true };
}

test("the server lists the eight tools", async () => {
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["edit_file", "list_backups", "list_directory", "read_file", "restore",
    "run_command", "show_changes", "write_file"]);
});

test("write, read, edit, list; then show_changes and restore bring the old bytes back", async () => {
  const a = join(lay.ws, "a.txt");
  writeFileSync(a, "original\nline two\n");
  let r = await call("write_file", { path: a, content: "first version\nline two\n" });
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /backed up/);
  r = await call("edit_file", { path: a, old_string: "first version", new_string: "second version" });
  assert.equal(r.isError, false, r.text);
  assert.equal((await call("read_file", { path: a })).text, "second version\nline two\n");
  r = await call("write_file", { path: join(lay.ws, "new.txt"), content: "created\n" });
  assert.equal(r.isError, false, r.text);
  assert.match((await call("list_directory", { path: lay.ws })).text, /file a\.txt\nfile new\.txt/);

  r = await call("show_changes", {});
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /changed .*a\.txt/);
  assert.match(r.text, /-original/);
  r = await call("restore", {});
  assert.equal(r.isError, false, r.text);
  assert.equal(readFileSync(a, "utf8"), "original\nline two\n");
  assert.equal(existsSync(join(lay.ws, "new.txt")), false);
  const cycles = JSON.parse((await call("list_backups", {})).text);
  assert.ok(cycles.length >= 1);
});

test("edit_file needs exactly one match", async () => {
  const f = join(lay.ws, "twice.txt");
  writeFileSync(f, "x x\n");
  let r = await call("edit_file", { path: f, old_string: "x", new_string: "y" });
  assert.equal(r.isError, true);
  assert.match(r.text, /more than once/);
  r = await call("edit_file", { path: f, old_string: "absent", new_string: "y" });
  assert.equal(r.isError, true);
  assert.match(r.text, /not found/);
  assert.equal(readFileSync(f, "utf8"), "x x\n");
});

test("a refused read or write answers with the rule, and changes nothing", async () => {
  writeFileSync(join(lay.ws, ".env"), "SECRET=1\n");
  let r = await call("read_file", { path: join(lay.ws, ".env") });
  assert.equal(r.isError, true);
  assert.match(r.text, /denyRead \*\*\/\.env/);
  assert.doesNotMatch(r.text, /SECRET/);
  writeFileSync(join(lay.ws, ".envrc"), "keep\n");
  r = await call("write_file", { path: join(lay.ws, ".envrc"), content: "evil\n" });
  assert.equal(r.isError, true);
  assert.match(r.text, /denyModify \*\*\/\.envrc/);
  assert.equal(readFileSync(join(lay.ws, ".envrc"), "utf8"), "keep\n");
});

test("relative, '..', NUL and outside paths are refused clearly", async () => {
  const cases: [string, RegExp][] = [
    ["a.txt", /relative/],
    [`${lay.ws}/../escape.txt`, /'\.\.'/],
    [join(lay.ws, "nul\0.txt"), /NUL/],
    [join(lay.home, "outside.txt"), /outside the workspace/],
  ];
  for (const [path, why] of cases) {
    const r = await call("write_file", { path, content: "x" });
    assert.equal(r.isError, true, path);
    assert.match(r.text, why);
  }
  assert.equal(existsSync(join(lay.dir, "escape.txt")), false);
  assert.equal(existsSync(join(lay.home, "outside.txt")), false);
});

test("a write over the size limit is refused and nothing changes", async () => {
  const f = join(lay.ws, "big.txt");
  writeFileSync(f, "small\n");
  const r = await call("write_file", { path: f, content: "y".repeat(1001) });
  assert.equal(r.isError, true);
  assert.match(r.text, /over the limit of 1000/);
  assert.equal(readFileSync(f, "utf8"), "small\n");
});

test("run_command runs sandboxed and reports what the pack refused", async () => {
  const r = await call("run_command", { argv: ["sh", "-c", "echo hi > out.txt; cat out.txt; echo x > .envrc"] });
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /hi/);
  assert.match(r.text, /refused: .*\.envrc \(denyModify \*\*\/\.envrc\)/);
  assert.equal(readFileSync(join(lay.ws, "out.txt"), "utf8"), "hi\n");
});
