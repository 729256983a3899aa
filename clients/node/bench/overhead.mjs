// overhead.mjs — what the package adds: a tool call through core.run() ÷ the
// same `fsbroker run --core` started by hand, write_file and read_file (a
// 1 MiB binary file, base64) through fsbroker-mcp (SDK Client over stdio) ÷
// a plain fs.writeFile / fs.readFile, and a run_command whose write asks,
// answered by MCP elicitation, ÷ the same command that does not ask. Medians.
// usage: node bench/overhead.mjs [FSBROKER] [N]   (after `npx tsc -p .`)
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync as wfs } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

import { startCore } from "../dist/src/index.js";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repo = resolve(pkg, "..", "..");
const binary = resolve(process.argv[2] || process.env.FSBROKER || join(repo, "build", "fsbroker"));
const n = Number(process.argv[3] || 50);

const base = join(repo, "build", "node-bench");
mkdirSync(base, { recursive: true });
const dir = mkdtempSync(join(base, "b-"));
const ws = join(dir, "ws"), home = join(dir, "home"), state = join(dir, "state");
mkdirSync(ws); mkdirSync(home); mkdirSync(join(dir, "tmp"));
const env = { ...process.env, HOME: home, TMPDIR: join(dir, "tmp") };  // the workspace outside ${tmp}: backed up
delete env.XDG_RUNTIME_DIR; delete env.XDG_STATE_HOME;

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

function byHand(i) {
  return new Promise((res, rej) => {
    const c = spawn(binary, ["run", "--core", state, "--tool-call", `hand-${i}`, "--summary-fd", "3", "--", "true"],
      { stdio: ["ignore", "pipe", "pipe", "pipe"], env });
    let summary = "";
    c.stdio[3].on("data", (b) => { summary += b; });
    c.stdout.resume(); c.stderr.resume();
    c.on("close", (code) => code === 0 && summary ? res() : rej(new Error(`by hand: ${code}`)));
  });
}

try {
  const core = await startCore({ binary, stateDir: state, workspace: ws, env });
  const pkgT = [], handT = [];
  for (let i = 0; i < n; i++) {
    let t0 = process.hrtime.bigint();
    await core.run(`pkg-${i}`, ["true"]);
    pkgT.push(ms(t0));
    t0 = process.hrtime.bigint();
    await byHand(i);
    handT.push(ms(t0));
  }
  await core.close();

  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(pkg, "dist", "src", "mcp-bin.js"), "--workspace", ws, "--state-dir", state, "--fsbroker", binary],
    env, stderr: "ignore",
  });
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(transport);
  const content = "x".repeat(4096);
  const mcpT = [], fsT = [];
  for (let i = 0; i < n; i++) {
    const f = join(ws, `f${i % 5}.txt`);
    wfs(f, "old");
    let t0 = process.hrtime.bigint();
    const r = await client.callTool({ name: "write_file", arguments: { path: f, content } });
    mcpT.push(ms(t0));
    if (r.isError) throw new Error(JSON.stringify(r.content));
    t0 = process.hrtime.bigint();
    await writeFile(f, content);
    fsT.push(ms(t0));
  }
  const bin = join(ws, "blob.bin");
  wfs(bin, randomBytes(1 << 20));
  const readT = [], fsReadT = [];
  for (let i = 0; i < n; i++) {
    let t0 = process.hrtime.bigint();
    const r = await client.callTool({ name: "read_file", arguments: { path: bin } });
    readT.push(ms(t0));
    if (r.isError || r.content[1]?.type !== "resource") throw new Error(JSON.stringify(r.content).slice(0, 200));
    t0 = process.hrtime.bigint();
    await readFile(bin);
    fsReadT.push(ms(t0));
  }
  await client.close();

  /* Asks: a pack that asks about ask/**; the client accepts every elicitation at once. */
  mkdirSync(join(ws, "ask"));
  const pack = join(dir, "asky.lua");
  wfs(pack, 'return { name = "asky", include = { "default" },\n' +
    '  fsProfile = { modify = { "!${workspace}/ask/**" } }, ask = { modify = { "${workspace}/ask/**" } } }\n');
  const asker = new Client({ name: "bench", version: "0" }, { capabilities: { elicitation: { form: {} } } });
  asker.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { scope: "once" } }));
  await asker.connect(new StdioClientTransport({
    command: process.execPath,
    args: [join(pkg, "dist", "src", "mcp-bin.js"), "--workspace", ws, "--state-dir", join(dir, "state-ask"),
      "--fsbroker", binary, "--rules", pack],
    env, stderr: "ignore",
  }));
  const askT = [], plainT = [];
  const m2 = Math.min(n, 20);
  for (let i = 0; i < m2; i++) {
    let t0 = process.hrtime.bigint();
    let r = await asker.callTool({ name: "run_command", arguments: { argv: ["sh", "-c", `echo ${i} > ask/a${i}.txt`] } });
    askT.push(ms(t0));
    if (r.isError || /waiting|refused/.test(r.content[0].text)) throw new Error(r.content[0].text);
    t0 = process.hrtime.bigint();
    r = await asker.callTool({ name: "run_command", arguments: { argv: ["sh", "-c", `echo ${i} > b${i}.txt`] } });
    plainT.push(ms(t0));
  }
  await asker.close();

  const p = median(pkgT), h = median(handT), m = median(mcpT), w = median(fsT);
  const rd = median(readT), frd = median(fsReadT), ak = median(askT), pl = median(plainT);
  console.log(`node package, ${n} calls each (medians):`);
  console.log(`  tool call 'true': core.run ${p.toFixed(2)} ms, fsbroker run --core by hand ${h.toFixed(2)} ms: ratio ${(p / h).toFixed(2)}`);
  console.log(`  write_file 4 KiB: through fsbroker-mcp ${m.toFixed(3)} ms, fs.writeFile ${w.toFixed(3)} ms: ratio ${(m / w).toFixed(1)}`);
  console.log(`  read_file 1 MiB binary (base64 resource): through fsbroker-mcp ${rd.toFixed(2)} ms, fs.readFile ${frd.toFixed(3)} ms: ratio ${(rd / frd).toFixed(1)}`);
  console.log(`  run_command whose write asks, accepted by elicitation (${m2} calls): ${ak.toFixed(1)} ms, the same write not asked ${pl.toFixed(1)} ms: ratio ${(ak / pl).toFixed(2)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
