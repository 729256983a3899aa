/*
 * core.test.ts — the package against the real core: start and stop, a tool
 * call with its summary, an inline approval answered, a restore that brings
 * the bytes back, and the failures a host must see clearly (core killed,
 * timeout, two turns, a command that cannot start, a core that cannot).
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, test } from "node:test";

import { FsbrokerError, startCore, type Core, type PromptEvent } from "../src/index.js";
import { binary, layout, type Layout } from "./helpers.js";

let core: Core | undefined;
let lay: Layout | undefined;

afterEach(async () => {
  await core?.close();
  core = undefined;
  lay?.cleanup();
  lay = undefined;
});

async function start(extra: Partial<Parameters<typeof startCore>[0]> = {}): Promise<Core> {
  lay = layout();
  core = await startCore({ binary, stateDir: lay.state, workspace: lay.ws, env: lay.env, ...extra });
  return core;
}

function isCode(code: string) {
  return (err: unknown) => err instanceof FsbrokerError && err.code === code;
}

test("start, a control request, and close: the core exits 0", async () => {
  const c = await start();
  assert.equal(c.ready?.sessionId, "default");
  const stats = await c.request("Stats", {});
  assert.equal(typeof stats.requests, "number");
  await c.close();
  assert.deepEqual(c.exited, { code: 0, signal: null });
  await assert.rejects(c.request("Stats", {}), isCode("ECOREEXIT"));
});

test("a tool call streams its output and the summary comes from fd 3 only", async () => {
  const c = await start();
  writeFileSync(join(lay!.ws, "a.txt"), "old\n");
  const seen: string[] = [];
  const call = c.run("tc-1", ["sh", "-c", 'echo new > a.txt; echo \'{"exitStatus":99}\'; echo oops >&2; exit 3'], {
    onStdout: (b) => seen.push(b.toString()),
  });
  const chunks: string[] = [];
  for await (const ch of call) chunks.push(`${ch.stream}:${ch.data}`);
  const r = await call;
  assert.equal(r.exitStatus, 3);
  assert.equal(r.stdout.toString(), '{"exitStatus":99}\n');
  assert.match(r.stderr.toString(), /oops/);
  assert.equal(seen.join(""), '{"exitStatus":99}\n');
  assert.ok(chunks.some((s) => s.startsWith("stdout:")));
  assert.equal(r.summary.mode, "attached");
  assert.equal(r.summary.toolCall, "tc-1");
  assert.ok(r.summary.changed?.includes(join(lay!.ws, "a.txt")), JSON.stringify(r.summary));
  assert.equal(readFileSync(join(lay!.ws, "a.txt"), "utf8"), "new\n");
});

test("an inline approval prompt reaches the host; its answer decides", async () => {
  const prompts: PromptEvent[] = [];
  const c = await start({ onPrompt: (p) => { prompts.push(p); return p.path.endsWith("yes.txt") ? "once" : "deny"; } });
  const yes = join(lay!.home, "yes.txt");
  const no = join(lay!.home, "no.txt");
  writeFileSync(yes, "before\n");
  writeFileSync(no, "before\n");
  const r = await c.run("tc-ask", ["sh", "-c", "echo approved > ~/yes.txt; echo denied > ~/no.txt"]);
  assert.equal(prompts.length, 2);
  assert.equal(prompts[0].rule, "ask.modify ~/**");
  assert.equal(prompts[0].toolCallId, "tc-ask");
  assert.equal(readFileSync(yes, "utf8"), "approved\n");
  assert.equal(readFileSync(no, "utf8"), "before\n");
  assert.notEqual(r.exitStatus, 0);
  assert.ok(r.summary.denied?.some((d) => d.path === no), JSON.stringify(r.summary));
});

test("the 'prompt' event answers when no callback is given", async () => {
  const c = await start({ approvals: "inline" });
  c.on("prompt", (_p: PromptEvent, respond: (a: string) => void) => respond("session"));
  const f = join(lay!.home, "notes.txt");
  writeFileSync(f, "before\n");
  const r = await c.run("tc-ev", ["sh", "-c", "echo one > ~/notes.txt"]);
  assert.equal(r.exitStatus, 0);
  assert.equal(readFileSync(f, "utf8"), "one\n");
});

test("a turn, its cycle listed and diffed, and a restore that brings the bytes back", async () => {
  const c = await start();
  const a = join(lay!.ws, "a.txt");
  writeFileSync(a, "original bytes\n");
  await c.beginTurn();
  const r = await c.run("tc-2", ["sh", "-c", "echo clobbered > a.txt; echo fresh > b.txt"]);
  assert.equal(r.exitStatus, 0);
  const cycle = await c.commitTurn("turn 1");
  assert.ok(cycle >= 1);
  const cycles = await c.listCycles();
  assert.ok(cycles.some((cy) => cy.cycle === cycle && cy.state === "sealed" && cy.message === "turn 1"), JSON.stringify(cycles));
  const d = await c.diff(cycle);
  assert.ok(d.entries.some((e) => e.path === a && e.status === "changed"), JSON.stringify(d.entries));
  assert.match(d.text, /-original bytes/);
  const res = await c.restore(cycle);
  assert.ok(res.some((e) => e.path === a && e.result === "restored"), JSON.stringify(res));
  assert.equal(readFileSync(a, "utf8"), "original bytes\n");
});

test("two turns begun at once: the second is an error", async () => {
  const c = await start();
  await c.beginTurn();
  await assert.rejects(c.beginTurn(), (e: unknown) => isCode("ETURN")(e) && /already open/.test((e as Error).message));
  await c.commitTurn("done");
  await assert.rejects(c.commitTurn("again"), isCode("ETURN"));
});

test("the core killed mid-turn: the waiting request and later ones fail clearly", async () => {
  const c = await start();
  await c.beginTurn();
  process.kill(c.pid!, "SIGSTOP"); // the request below cannot be answered before the kill
  const waiting = c.request("CheckAccess", { path: join(lay!.ws, "x"), op: "read" });
  c.kill();
  await assert.rejects(waiting, (e: unknown) =>
    isCode("ECOREEXIT")(e) && /exited \(signal SIGKILL\) before answering CheckAccess/.test((e as Error).message));
  await assert.rejects(c.commitTurn("never"), isCode("ECOREEXIT"));
});

test("a core that does not answer in time: the request fails with ETIMEDOUT", async () => {
  const c = await start();
  process.kill(c.pid!, "SIGSTOP");
  try {
    await assert.rejects(c.request("Stats", {}, { timeoutMs: 300 }),
      (e: unknown) => isCode("ETIMEDOUT")(e) && /did not answer Stats within 300 ms/.test((e as Error).message));
  } finally {
    process.kill(c.pid!, "SIGCONT");
  }
  assert.equal(typeof (await c.request("Stats", {})).requests, "number");
});

test("a command that cannot start is an error, not an exit status", async () => {
  const c = await start();
  await assert.rejects(c.run("tc-3", ["/no/such/command"]).result,
    (e: unknown) => isCode("ERUNSTART")(e) && /no\/such\/command/.test((e as Error).message));
});

test("a core that cannot start says why", async () => {
  lay = layout();
  await assert.rejects(startCore({ binary, stateDir: lay.state, workspace: lay.ws, env: lay.env, pack: "no-such-pack" }),
    (e: unknown) => isCode("ECORESTART")(e) && /no-such-pack/.test((e as Error).message));
});

test("a native fsbroker that is not installed: ENOFSBROKER names what to install and how to point at it", async () => {
  lay = layout();
  await assert.rejects(startCore({ binary: "/no/such/fsbroker", stateDir: lay.state }), (e: unknown) =>
    isCode("ENOFSBROKER")(e) && /\(--fsbroker\) names \/no\/such\/fsbroker, which is not an executable file/.test((e as Error).message)
      && /sudo make install/.test((e as Error).message) && /FSBROKER=/.test((e as Error).message));
  const saved = { PATH: process.env.PATH, FSBROKER: process.env.FSBROKER };
  process.env.PATH = lay.dir;
  delete process.env.FSBROKER;
  try {
    await assert.rejects(startCore({ stateDir: lay.state }), (e: unknown) =>
      isCode("ENOFSBROKER")(e) && /no fsbroker on PATH/.test((e as Error).message) && /apt install/.test((e as Error).message));
  } finally {
    process.env.PATH = saved.PATH;
    if (saved.FSBROKER !== undefined) process.env.FSBROKER = saved.FSBROKER;
  }
});
