/*
 * mcp.test.ts — fsbroker-mcp driven by the MCP SDK's own Client over stdio,
 * against the real core: file tools judged by the pack (a refusal names its
 * rule), writes backed up into the cycle and restorable, hostile paths and
 * oversized writes refused with nothing changed, run_command sandboxed (its
 * cwd checked, its timeout killing the command), binary files read back
 * byte for byte, every tool annotated, a missing native binary named.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { layout, mcpArgs, type Layout } from "./helpers.js";

let lay: Layout;
let client: Client;

before(async () => {
  lay = layout();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: mcpArgs(lay, ["--max-write-bytes", "1000", "--max-read-bytes", "2000"]),
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

test("the server lists the ten tools (the approve pair too: this client cannot be asked)", async () => {
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["approve", "edit_file", "list_approvals", "list_backups", "list_directory", "read_file",
    "restore", "run_command", "show_changes", "write_file"]);
});

test("every tool is annotated with what it does to the world", async () => {
  const got = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t.annotations]));
  const reads = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
  const want: Record<string, Record<string, boolean>> = {
    read_file: reads, list_directory: reads, list_backups: reads, show_changes: reads, list_approvals: reads,
    write_file: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    edit_file: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    restore: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    run_command: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    approve: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  };
  for (const [name, hints] of Object.entries(want)) assert.deepEqual(got[name], hints, name);
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

test("run_command's cwd: a directory inside the workspace runs there; outside, missing or a file is refused, nothing run", async () => {
  mkdirSync(join(lay.ws, "sub"));
  let r = await call("run_command", { argv: ["sh", "-c", "pwd; echo here > made.txt"], cwd: "sub" });
  assert.equal(r.isError, false, r.text);
  assert.equal(readFileSync(join(lay.ws, "sub", "made.txt"), "utf8"), "here\n");
  assert.equal((await call("run_command", { argv: ["pwd"], cwd: join(lay.ws, "sub") })).isError, false);
  symlinkSync(lay.home, join(lay.ws, "to-home"));
  writeFileSync(join(lay.ws, "plain.txt"), "x\n");
  const ran = join(lay.ws, "ran.txt");
  const cases: [string, RegExp][] = [
    [lay.home, /ECWD: cwd .* is outside the workspace/],
    [join(lay.ws, "to-home"), /outside the workspace/],
    ["..", /outside the workspace/],
    ["no-such-dir", /does not exist/],
    ["plain.txt", /is not a directory/],
  ];
  for (const [cwd, why] of cases) {
    r = await call("run_command", { argv: ["sh", "-c", `echo ran > ${ran}`], cwd });
    assert.equal(r.isError, true, cwd);
    assert.match(r.text, why, cwd);
  }
  assert.equal(existsSync(ran), false);
});

/* The sleeps a run left behind, by their unusual argument. */
function sleepers(arg: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync("/proc").filter((d) => /^[0-9]+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8") === `sleep\0${arg}\0`) found.push(Number(pid));
    } catch { /* gone meanwhile */ }
  }
  return found;
}

test("run_command's timeoutMs kills the command and all it started; what it changed stays backed up", async () => {
  const arg = `100.${process.pid}`;
  /* The MCP request itself gives up after 60 s: a sleep that was not killed fails the call. */
  const r = await call("run_command", {
    argv: ["sh", "-c", `echo started > timed.txt; trap '' TERM; sleep ${arg} & sleep ${arg}; wait`], timeoutMs: 1500,
  });
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /^timed out after 1500 ms: the command and every process it started were killed/);
  assert.match(r.text, /changed: .*timed\.txt \(cycle \d+, tool call /);
  assert.deepEqual(sleepers(arg), []);
  const d = await call("show_changes", {});
  assert.match(d.text, /created .*timed\.txt/);
});

test("read_file: UTF-8 comes back as text, other bytes as a base64 resource, byte for byte", async () => {
  writeFileSync(join(lay.ws, "utf8.txt"), "h\u00e9llo \u2603\n");
  assert.equal((await call("read_file", { path: join(lay.ws, "utf8.txt") })).text, "h\u00e9llo \u2603\n");
  const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x0a]);
  const f = join(lay.ws, "pic.png");
  writeFileSync(f, bytes);
  const res = await client.callTool({ name: "read_file", arguments: { path: f } }) as {
    content: ({ type: "text"; text: string } | { type: "resource"; resource: { uri: string; mimeType: string; blob: string } })[];
    isError?: boolean;
  };
  assert.notEqual(res.isError, true);
  const blob = res.content.find((c) => c.type === "resource");
  assert.ok(blob && blob.type === "resource", JSON.stringify(res.content));
  assert.equal(blob.resource.mimeType, "image/png");
  assert.equal(blob.resource.uri, `file://${f}`);
  assert.deepEqual(Buffer.from(blob.resource.blob, "base64"), bytes);
  assert.ok(!JSON.stringify(res.content).includes("\ufffd"));
  const e = await call("edit_file", { path: f, old_string: "PNG", new_string: "GIF" });
  assert.equal(e.isError, true);
  assert.match(e.text, /EBINARY: .* is not UTF-8 text/);
  assert.deepEqual(readFileSync(f), bytes);
});

test("read_file over the read limit: a clear error, nothing read", async () => {
  const f = join(lay.ws, "large.txt");
  writeFileSync(f, "z".repeat(2001));
  const r = await call("read_file", { path: f });
  assert.equal(r.isError, true);
  assert.match(r.text, /ETOOLARGE: .*large\.txt is 2001 bytes, over the read limit of 2000/);
  assert.doesNotMatch(r.text, /zzz/);
  writeFileSync(f, "z".repeat(2000));
  assert.equal((await call("read_file", { path: f })).text.length, 2000);
});

test("fsbroker-mcp without the native fsbroker: it says what to install and how to point at it", () => {
  const env: Record<string, string> = { ...(lay.env as Record<string, string>), PATH: lay.dir };
  delete env.FSBROKER;
  const args = mcpArgs(lay).filter((a, i, all) => a !== "--fsbroker" && all[i - 1] !== "--fsbroker");
  const r = spawnSync(process.execPath, args, { env, encoding: "utf8", input: "" });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^fsbroker-mcp: the native fsbroker program was not found: there is no fsbroker on PATH/);
  assert.match(r.stderr, /sudo make install/);
  assert.match(r.stderr, /apt install \.\/build\/fsbroker_\*\.deb/);
  assert.match(r.stderr, /FSBROKER=\/path\/to\/fsbroker/);
  assert.match(r.stderr, /--fsbroker PATH/);
  const r2 = spawnSync(process.execPath, [...args, "--fsbroker", "/no/such/fsbroker"], { env, encoding: "utf8", input: "" });
  assert.equal(r2.status, 1);
  assert.match(r2.stderr, /names \/no\/such\/fsbroker, which is not an executable file/);
});

/* Wait for `cond`, checking every 100 ms, failing after `boundMs`: the bound is a hang guard, not a timing asserted. */
async function until(cond: () => boolean, what: string, boundMs = 30000): Promise<void> {
  for (let waited = 0; !cond(); waited += 100) {
    if (waited >= boundMs) assert.fail(`${what}: still not so after ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("a run_command the client cancels is ended, its command and all it started killed", async () => {
  const arg = `100.${process.pid}1`;
  const ac = new AbortController();
  const pending = client.callTool({ name: "run_command", arguments: { argv: ["sh", "-c", `trap '' TERM; sleep ${arg}`] } },
    undefined, { signal: ac.signal });
  pending.catch(() => {});
  await until(() => sleepers(arg).length === 1, "the command started");
  ac.abort();
  await assert.rejects(pending);
  await until(() => sleepers(arg).length === 0, "the cancelled command ended");
});

/* No command outlives the server, even one that ignores SIGTERM and SIGHUP. */
test("a run_command in flight when the client goes away is ended with the server", async () => {
  const l = layout();
  try {
    const c = new Client({ name: "fsbroker-test", version: "0.0.0" });
    await c.connect(new StdioClientTransport({
      command: process.execPath, args: mcpArgs(l), env: l.env as Record<string, string>, stderr: "ignore",
    }));
    const arg = `100.${process.pid}2`;
    c.callTool({ name: "run_command", arguments: { argv: ["sh", "-c", `trap "" TERM HUP; echo x > left.txt; sleep ${arg}`] } }).catch(() => {});
    await until(() => sleepers(arg).length === 1, "the command started");
    await c.close();
    await until(() => sleepers(arg).length === 0, "the command ended with the server");
  } finally {
    l.cleanup();
  }
});
