/*
 * pack.test.ts — `npm pack` makes a tarball ready to publish that installs
 * into a fresh project and works there: compiled JS with its .d.ts, the
 * README and the repository's LICENSE, the manifest's registry fields, no
 * sources or tests; the installed fsbroker-mcp serves its tools to the MCP
 * SDK's own client.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { binary, layout, pkgDir, repoDir } from "./helpers.js";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";

test("npm pack produces a tarball ready to publish; installed into a fresh project, its fsbroker-mcp lists its tools", async () => {
  const lay = layout();
  try {
    const out = execFileSync(npm, ["pack", "--json", "--pack-destination", lay.dir],
      { cwd: pkgDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const info = JSON.parse(out)[0] as { filename: string; files: { path: string }[] };
    const files = info.files.map((f) => f.path);
    for (const f of ["dist/src/index.js", "dist/src/index.d.ts", "dist/src/mcp-bin.js", "package.json", "README.md", "LICENSE"])
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

    const installed = join(app, "node_modules", "fsbroker");
    assert.equal(readFileSync(join(installed, "LICENSE"), "utf8"), readFileSync(join(repoDir, "LICENSE"), "utf8"));
    assert.match(readFileSync(join(installed, "README.md"), "utf8"), /fsbroker-mcp --workspace/);
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    assert.equal(manifest.version, readFileSync(join(repoDir, "VERSION"), "utf8").trim());
    for (const k of ["repository", "homepage", "bugs", "keywords", "license"]) assert.ok(manifest[k], `package.json has no ${k}`);

    const client = new Client({ name: "fsbroker-pack-test", version: "0.0.0" });
    await client.connect(new StdioClientTransport({
      command: join(app, "node_modules", ".bin", "fsbroker-mcp"),
      args: ["--workspace", lay.ws, "--state-dir", lay.state, "--fsbroker", binary],
      env: lay.env as Record<string, string>, cwd: app, stderr: "ignore",
    }));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("run_command") && names.includes("read_file"), names.join(", "));
      const r = await client.callTool({ name: "list_backups", arguments: {} }) as { isError?: boolean };
      assert.notEqual(r.isError, true);
    } finally {
      await client.close();
    }
  } finally {
    lay.cleanup();
  }
});
