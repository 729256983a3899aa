/*
 * helpers.ts — what the tests share: the real fsbroker binary
 * (../../build/fsbroker, or $FSBROKER) and a fresh layout under the
 * repository's build/, with the core's TMPDIR a directory of its own in
 * it: the default pack skips backups under ${tmp}, so the workspace must
 * not lie inside it, wherever the repository is checked out.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
/** clients/node, from dist/test. */
export const pkgDir = resolve(here, "..", "..");
export const repoDir = resolve(pkgDir, "..", "..");
export const binary = process.env.FSBROKER || join(repoDir, "build", "fsbroker");

export interface Layout {
  dir: string;
  home: string;
  ws: string;
  state: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

export function layout(): Layout {
  const base = join(repoDir, "build", "node-test");
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, "t-"));
  const home = join(dir, "home");
  const ws = join(dir, "ws");
  const state = join(dir, "state");
  const tmp = join(dir, "tmp");
  mkdirSync(home);
  mkdirSync(ws);
  mkdirSync(tmp);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TMPDIR: tmp };
  delete env.XDG_STATE_HOME;
  delete env.XDG_RUNTIME_DIR;
  return { dir, home, ws, state, env, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The args that start dist/src/mcp-bin.js on a layout, with `extra` after them. */
export function mcpArgs(lay: Layout, extra: string[] = []): string[] {
  return [join(pkgDir, "dist", "src", "mcp-bin.js"), "--workspace", lay.ws, "--state-dir", lay.state,
    "--fsbroker", binary, ...extra];
}
