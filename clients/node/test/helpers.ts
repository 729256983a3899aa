/*
 * helpers.ts — what the tests share: the real fsbroker binary
 * (../../build/fsbroker, or $FSBROKER) and a fresh layout under the
 * worktree's build/ (not /tmp: the default pack skips backups under tmp).
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
  mkdirSync(home);
  mkdirSync(ws);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.XDG_STATE_HOME;
  delete env.XDG_RUNTIME_DIR;
  return { dir, home, ws, state, env, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
