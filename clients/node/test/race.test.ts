/*
 * race.test.ts — the MCP file tools act on the object the core judged and
 * nothing else. A name swapped between the core's answer and the tool's own
 * open (here, deterministically, by the test right after the core answers)
 * makes the tool fail with ERACE: a denyRead file is never read through an
 * allowed name, and a file that was never backed up is never written.
 */
import assert from "node:assert/strict";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, test } from "node:test";

import { FileTools } from "../src/mcp.js";
import { FsbrokerError, startCore, type Core } from "../src/index.js";
import { binary, layout, type Layout } from "./helpers.js";

let core: Core | undefined;
let lay: Layout | undefined;

afterEach(async () => {
  await core?.close();
  core = undefined;
  lay?.cleanup();
  lay = undefined;
});

/* A core whose answers to `command` are followed by `swap()`, before the
 * caller sees them: the window a racing process would use. */
async function coreSwappingAfter(command: string, swap: () => void): Promise<Core> {
  lay = layout();
  core = await startCore({ binary, stateDir: lay.state, workspace: lay.ws, env: lay.env });
  const c = core as unknown as { rawRequest: (cmd: string, f: Record<string, unknown>) => Promise<Record<string, unknown>> };
  const real = c.rawRequest.bind(core);
  c.rawRequest = async (cmd, fields) => {
    const reply = await real(cmd, fields);
    if (cmd === command) swap();
    return reply;
  };
  return core;
}

function isCode(code: string) {
  return (err: unknown) => err instanceof FsbrokerError && err.code === code;
}

test("read_file: a denyRead file renamed over the judged name is not read", async () => {
  let ws = "";
  const c = await coreSwappingAfter("CheckAccess", () => renameSync(join(ws, ".env"), join(ws, "notes.txt")));
  ws = lay!.ws;
  writeFileSync(join(ws, "notes.txt"), "harmless\n");
  writeFileSync(join(ws, ".env"), "TOKEN=secret\n");
  const tools = new FileTools(c);
  await assert.rejects(tools.readFile(join(ws, "notes.txt")), isCode("ERACE"));
});

test("write_file: a file swapped in after its backup is not written", async () => {
  let ws = "";
  const c = await coreSwappingAfter("ModifyBackup", () => renameSync(join(ws, "other.txt"), join(ws, "a.txt")));
  ws = lay!.ws;
  writeFileSync(join(ws, "a.txt"), "backed up\n");
  writeFileSync(join(ws, "other.txt"), "never backed up\n");
  const tools = new FileTools(c);
  await assert.rejects(tools.writeFile(join(ws, "a.txt"), "new\n"), isCode("ERACE"));
  assert.equal(readFileSync(join(ws, "a.txt"), "utf8"), "never backed up\n");
});

test("write_file: without a swap the same calls go through", async () => {
  const c = await coreSwappingAfter("none", () => undefined);
  const ws = lay!.ws;
  writeFileSync(join(ws, "a.txt"), "old\n");
  const tools = new FileTools(c);
  const r = await tools.writeFile(join(ws, "a.txt"), "new\n");
  assert.equal(r.backedUp, true);
  assert.equal(readFileSync(join(ws, "a.txt"), "utf8"), "new\n");
  await tools.writeFile(join(ws, "fresh.txt"), "made\n");
  assert.deepEqual(await tools.readFile(join(ws, "fresh.txt")), { kind: "text", text: "made\n", size: 5 });
});
