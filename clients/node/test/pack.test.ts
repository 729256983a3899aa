/*
 * pack.test.ts — `npm pack` makes a tarball that installs and imports:
 * compiled JS with its .d.ts, the fsbroker-mcp bin, no sources or tests.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { layout, pkgDir } from "./helpers.js";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";

test("npm pack produces an installable tarball with JS and .d.ts", () => {
  const lay = layout();
  try {
    const out = execFileSync(npm, ["pack", "--json", "--pack-destination", lay.dir],
      { cwd: pkgDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const info = JSON.parse(out)[0] as { filename: string; files: { path: string }[] };
    const files = info.files.map((f) => f.path);
    for (const f of ["dist/src/index.js", "dist/src/index.d.ts", "dist/src/mcp-bin.js", "package.json"])
      assert.ok(files.includes(f), `${f} missing from ${files.join(", ")}`);
    assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("dist/test/")), files.join(", "));

    const app = join(lay.dir, "app");
    execFileSync("mkdir", [app]);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", type: "module", private: true }));
    execFileSync(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", join(lay.dir, info.filename)],
      { cwd: app, stdio: ["ignore", "pipe", "pipe"] });
    const probe = execFileSync(process.execPath, ["--input-type=module", "-e",
      "import { startCore, FsbrokerError } from 'fsbroker'; import { createMcpServer } from 'fsbroker/mcp';" +
      "console.log(typeof startCore, typeof FsbrokerError, typeof createMcpServer)"],
      { cwd: app, encoding: "utf8" });
    assert.equal(probe.trim(), "function function function");
    assert.ok(existsSync(join(app, "node_modules", "fsbroker", "dist", "src", "core.d.ts")));
    assert.ok(existsSync(join(app, "node_modules", ".bin", "fsbroker-mcp")));
    const help = execFileSync(join(app, "node_modules", ".bin", "fsbroker-mcp"), ["--help"], { encoding: "utf8" });
    assert.match(help, /usage: fsbroker-mcp/);
  } finally {
    lay.cleanup();
  }
});
