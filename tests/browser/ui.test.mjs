// ui.test.mjs — `fsbroker ui` in a real browser: Debian's headless Chromium
// (/usr/bin/chromium, or $CHROMIUM) driven by playwright-core, which
// downloads no browser. On three cycles `fsbroker run` made: the timeline
// shows them, a file's diff opens, a restore from the page puts the old
// bytes on disk after its plan is shown, and the undo button brings the
// newer bytes back; a request without the token, with a wrong Origin, and a
// cross-site form POST are refused (403). Screenshots of the timeline and of
// the diff go to build/ui-artifacts/. Exit 77 (skipped) with a reason when
// Chromium or the sandbox is missing.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const fsb = process.env.FSBROKER || path.join(repo, "build/fsbroker");
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const artefacts = path.join(repo, "build/ui-artifacts");
let n = 0, failed = 0;

function skip(why) {
  console.log(`1..0 # SKIP ${why}`);
  process.exit(77);
}
function ok(cond, what, detail) {
  n++;
  console.log(`${cond ? "ok" : "not ok"} ${n} - ${what}`);
  if (!cond) { failed++; if (detail !== undefined) console.log(`#   ${detail}`); }
}

if (!fs.existsSync(chromiumPath)) skip(`no Chromium at ${chromiumPath} (apt-get install chromium)`);
let chromium;
try { ({ chromium } = await import("playwright-core")); } catch { skip("playwright-core is not installed (npm ci in tests/browser)"); }

// The layout test_run*.c use: not under /tmp, which the sandbox replaces.
const root = fs.mkdtempSync("/var/tmp/fsbt-ui-");
fs.chmodSync(root, 0o755);
const ws = path.join(root, "ws"), state = path.join(root, "state");
for (const d of ["home", "home/.ssh", "ws", "tmp"]) fs.mkdirSync(path.join(root, d));
fs.writeFileSync(path.join(root, "home/.ssh/id_ed25519"), "PRIVATE KEY\n");
const env = { ...process.env, HOME: path.join(root, "home"), TMPDIR: path.join(root, "tmp") };
for (const k of ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"]) delete env[k];
const a = path.join(ws, "a.txt");
fs.writeFileSync(a, "old a\n");
fs.writeFileSync(path.join(ws, "b.txt"), "bee\n");

let ui, browser;
try {
  for (const script of ["echo 'new a' > a.txt", "echo made > d.txt", "echo stolen > ~/.ssh/id_ed25519; rm b.txt"]) {
    const r = spawnSync(fsb, ["run", "--workspace", ws, "--state-dir", state, "--session", "s", "--",
      "sh", "-c", script], { cwd: ws, env, encoding: "utf8" });
    if (r.status !== 0) {
      if (/bubblewrap|seccomp|Landlock|namespace/i.test(r.stderr)) skip(`fsbroker run cannot sandbox here: ${r.stderr.trim().split("\n").pop()}`);
      throw new Error(`fsbroker run ${script}: ${r.status}\n${r.stderr}`);
    }
  }
  ui = spawn(fsb, ["ui", "--state-dir", state, "--session", "s"], { env, stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    ui.stdout.on("data", d => { out += d; const m = out.match(/http:\/\/\S+/); if (m) resolve(m[0]); });
    ui.on("exit", c => reject(new Error(`fsbroker ui exited ${c}: ${out}`)));
  });
  const base = url.replace(/\/\?token=.*/, "");

  browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
    args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
  const requests = [];
  page.on("request", r => requests.push(r.url()));
  await page.goto(url);
  await page.waitForSelector(".cycle >> nth=2");
  ok((await page.locator(".cycle").count()) === 3, "the timeline shows three cycles");
  ok((await page.locator(".cycle", { hasText: "new a" }).count()) === 1, "a cycle shows its message");
  ok((await page.context().cookies()).length === 0, "the page sets no cookie (it would reach every port of 127.0.0.1)");
  ok((await page.locator('.cycle[data-cycle="3"]').innerText()).includes("1 refused"), "a cycle shows its refusals");
  fs.mkdirSync(artefacts, { recursive: true });
  await page.screenshot({ path: path.join(artefacts, "timeline.png") });

  await page.locator('.cycle[data-cycle="1"]').click();
  await page.locator(".file", { hasText: "a.txt" }).click();
  await page.waitForSelector("pre.diff");
  const diff = await page.locator("pre.diff").innerText();
  ok(diff.includes("-old a") && diff.includes("+new a"), "the diff shows the old line against the new", diff);
  await page.screenshot({ path: path.join(artefacts, "diff.png") });
  await page.locator("#side").check();
  const side = await page.locator("table.side").innerText();
  ok(/old a\s+new a/.test(side), "side by side puts the old line beside the new", side);
  await page.screenshot({ path: path.join(artefacts, "diff-side.png") });
  await page.locator("#side").uncheck();

  await page.getByText("Restore this path…").click();
  await page.waitForSelector("#confirm");
  ok((await page.locator("#plan").innerText()).includes("would restore"), "the plan is shown first");
  ok(fs.readFileSync(a, "utf8") === "new a\n", "the plan changed nothing");
  await page.locator("#confirm").click();
  await page.waitForSelector("#plan >> text=Restored.");
  ok(fs.readFileSync(a, "utf8") === "old a\n", "the restore put the old bytes on disk");

  page.on("dialog", d => d.accept());
  await page.locator("#undo").click();
  await page.waitForSelector("#status >> text=Undo finished");
  ok(fs.readFileSync(a, "utf8") === "new a\n", "the undo brought the newer bytes back");
  ok(requests.every(u => u.startsWith(base)), "the page fetched nothing but its own origin",
     requests.filter(u => !u.startsWith(base)).join(" "));

  const noToken = await fetch(`${base}/api/cycles`);
  ok(noToken.status === 403, "a request without the token is refused", noToken.status);
  const token = url.replace(/.*token=/, "");
  const own = await page.evaluate(async ([b, t]) => {
    const r = await fetch(`${b}/api/cycles`, { headers: { "X-FSB-Token": t } });
    return r.status;
  }, [base, token]);
  ok(own === 200, "a request with the token in its header is let in");
  const evil = await fetch(`${base}/api/undo?token=${token}`, { method: "POST",
    headers: { Origin: "http://evil.example", "Content-Type": "application/json" }, body: '{"dryRun":false}' });
  ok(evil.status === 403, "a POST from another Origin is refused", evil.status);

  // A form on another site posting to the page: it cannot add the token
  // or CSRF headers the page's own requests carry.
  const other = await browser.newPage();
  await other.setContent(`<form method="post" action="${base}/api/restore" enctype="text/plain">
    <input name='{"cycle":1,"path":"${a}","dryRun":false,"x":"' value='"}'></form>`);
  const [resp] = await Promise.all([other.waitForNavigation(), other.evaluate(() => document.forms[0].submit())]);
  ok(resp !== null && resp.status() === 403, "a cross-site form POST is refused", resp && resp.status());
  ok(fs.readFileSync(a, "utf8") === "new a\n", "the refused POST changed nothing");
} catch (err) {
  ok(false, "the browser test ran to its end", err.stack);
} finally {
  if (browser) await browser.close();
  if (ui) ui.kill("SIGTERM");
  if (!process.env.FSBT_KEEP) fs.rmSync(root, { recursive: true, force: true });
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
